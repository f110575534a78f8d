import type { InvoiceView, ListInvoicesReply, ListPriceListsReply, PriceListPublished, RebuildLedgerReply, ReplayInvoiceReply } from '#contracts';
import { Body, Controller, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { correlationIdOf, single } from '../http/request.js';
import { BillingService } from './billing.service.js';

type Query = Record<string, string | string[] | undefined>;

/**
 * `GET /v1/invoices?month=&status=`, `GET /v1/invoices/:invoiceId`: the caller's team's invoices;
 * `POST /v1/invoices/:invoiceId/replay` (optional `{ prices }`: a what-if) and
 * `GET /v1/invoices/:invoiceId/dispute-bundle` (a file to download).
 */
@Controller('v1/invoices')
export class InvoicesHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly billing: BillingService,
  ) {}

  @Get()
  list(@Req() req: Request): Promise<ListInvoicesReply> {
    const q = req.query as Query;
    return this.billing.invoices(this.auth.fromHttp(req.headers.authorization), { month: single(q.month), status: single(q.status) }, { correlationId: correlationIdOf(req.headers) });
  }

  @Get(':invoiceId')
  get(@Req() req: Request, @Param('invoiceId') invoiceId: string): Promise<InvoiceView> {
    return this.billing.invoice(this.auth.fromHttp(req.headers.authorization), invoiceId, { correlationId: correlationIdOf(req.headers) });
  }

  @Post(':invoiceId/replay')
  @HttpCode(200)
  replay(@Req() req: Request, @Param('invoiceId') invoiceId: string, @Body() body: unknown): Promise<ReplayInvoiceReply> {
    // An empty body is `{}` to express: a plain replay.
    return this.billing.replayInvoice(this.auth.fromHttp(req.headers.authorization), invoiceId, body, { correlationId: correlationIdOf(req.headers) });
  }

  @Get(':invoiceId/dispute-bundle')
  async bundle(@Req() req: Request, @Res() res: Response, @Param('invoiceId') invoiceId: string): Promise<void> {
    const { fileName, bundle } = await this.billing.disputeBundle(this.auth.fromHttp(req.headers.authorization), invoiceId, { correlationId: correlationIdOf(req.headers) });
    // The file `gpunet dispute-bundle` writes, byte for byte in layout too.
    res.status(200).type('application/json').setHeader('Content-Disposition', `attachment; filename="${fileName}"`);
    res.send(`${JSON.stringify(bundle, null, 2)}\n`);
  }
}

/** `GET /v1/prices` (every role), `POST /v1/prices` (role `billing`): the price list versions. */
@Controller('v1/prices')
export class PricesHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly billing: BillingService,
  ) {}

  @Get()
  list(@Req() req: Request): Promise<ListPriceListsReply> {
    return this.billing.priceLists(this.auth.fromHttp(req.headers.authorization), { correlationId: correlationIdOf(req.headers) });
  }

  @Post()
  @HttpCode(201)
  publish(@Req() req: Request, @Body() body: unknown): Promise<PriceListPublished> {
    return this.billing.publishPriceList(this.auth.fromHttp(req.headers.authorization), body, { correlationId: correlationIdOf(req.headers) });
  }
}

/** `POST /v1/ledger/rebuild` (roles `billing`, `admin`): recompute the ledger's projections from zero and compare the invoices. */
@Controller('v1/ledger')
export class LedgerHttpController {
  constructor(
    private readonly auth: Authenticator,
    private readonly billing: BillingService,
  ) {}

  @Post('rebuild')
  @HttpCode(200)
  rebuild(@Req() req: Request): Promise<RebuildLedgerReply> {
    return this.billing.rebuild(this.auth.fromHttp(req.headers.authorization), { correlationId: correlationIdOf(req.headers) });
  }
}
