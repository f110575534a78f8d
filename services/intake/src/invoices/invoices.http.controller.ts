import type { InvoiceView, ListInvoicesReply, ListPriceListsReply, PriceListPublished, RebuildLedgerReply } from '#contracts';
import { Body, Controller, Get, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import { Authenticator } from '../auth/authenticator.js';
import { correlationIdOf, single } from '../http/request.js';
import { BillingService } from './billing.service.js';

type Query = Record<string, string | string[] | undefined>;

/** `GET /v1/invoices?month=&status=`, `GET /v1/invoices/:invoiceId`: the caller's team's invoices. */
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
