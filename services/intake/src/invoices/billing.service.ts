import {
  Commands,
  formatIssues,
  GetDisputeBundle,
  GetInvoice,
  InvoiceId,
  ListInvoices,
  PublishPriceList,
  Queries,
  ReplayInvoice,
  ReplayInvoiceBody,
  type DisputeBundleReply,
  type InvoiceView,
  type ListInvoicesReply,
  type ListPriceListsReply,
  type PriceListPublished,
  type RebuildLedgerReply,
  type ReplayInvoiceReply,
} from '#contracts';
import { ValidationError } from '#errors';
import { requestQuery } from '#messaging';
import { NATS_CONNECTION } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '../auth/api-keys.js';
import { authorize, callerPrincipal } from '../auth/permissions.js';
import type { RequestTrace } from '../common/trace.js';

/** A rebuild folds the whole store: give it time. */
const REBUILD_TIMEOUT_MS = 600_000;
/** A replay or a bundle reads the month's events from the store: more than a projection lookup. */
const REPLAY_TIMEOUT_MS = 60_000;

function trace(t: RequestTrace): { correlationId?: string } {
  return t.correlationId !== undefined ? { correlationId: t.correlationId } : {};
}

function parsed<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Parameters<typeof formatIssues>[0] } }, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = formatIssues(result.error);
  throw new ValidationError(`invalid ${what}: ${issues.map((i) => i.path).join(', ')}`, issues);
}

/**
 * The billing use cases behind both transports: price lists (read by every role, published by
 * `billing`), the caller's team's invoices, and the ledger's rebuild. The team always comes from
 * the API key; the ledger answers.
 */
@Injectable()
export class BillingService {
  constructor(@Inject(NATS_CONNECTION) private readonly nc: NatsConnection) {}

  async publishPriceList(principal: Principal, body: unknown, t: RequestTrace): Promise<PriceListPublished> {
    authorize(principal, 'prices:publish');
    const request = parsed(PublishPriceList, body, 'price list');
    const c = Commands.RecordPriceList;
    return requestQuery<PriceListPublished>(this.nc, c.subject, { ...request, principal: callerPrincipal(principal) }, { request: c.schema, response: c.replySchema }, trace(t));
  }

  async priceLists(principal: Principal, t: RequestTrace): Promise<ListPriceListsReply> {
    authorize(principal, 'prices:read');
    const q = Queries.ListPriceLists;
    return requestQuery<ListPriceListsReply>(this.nc, q.subject, {}, { request: q.schema, response: q.replySchema }, trace(t));
  }

  async invoices(principal: Principal, filter: { month?: string | undefined; status?: string | undefined }, t: RequestTrace): Promise<ListInvoicesReply> {
    authorize(principal, 'invoices:read');
    const raw: Record<string, unknown> = { principal: callerPrincipal(principal) };
    if (filter.month !== undefined) raw.month = filter.month;
    if (filter.status !== undefined) raw.status = filter.status;
    const query = parsed(ListInvoices, raw, 'query');
    const q = Queries.ListInvoices;
    return requestQuery<ListInvoicesReply>(this.nc, q.subject, query, { request: q.schema, response: q.replySchema }, trace(t));
  }

  async invoice(principal: Principal, invoiceId: string, t: RequestTrace): Promise<InvoiceView> {
    authorize(principal, 'invoices:read');
    const id = parsed(InvoiceId, invoiceId, 'invoice id');
    const q = Queries.GetInvoice;
    return requestQuery<InvoiceView>(this.nc, q.subject, parsed(GetInvoice, { invoiceId: id, principal: callerPrincipal(principal) }, 'query'), { request: q.schema, response: q.replySchema }, trace(t));
  }

  /** Replays the team's invoice from the store, line by line; with `body.prices`, a what-if (nothing written). */
  async replayInvoice(principal: Principal, invoiceId: string, body: unknown, t: RequestTrace): Promise<ReplayInvoiceReply> {
    authorize(principal, 'invoices:read');
    const id = parsed(InvoiceId, invoiceId, 'invoice id');
    const request = parsed(ReplayInvoiceBody, body ?? {}, 'replay request');
    const q = Queries.ReplayInvoice;
    const query = parsed(ReplayInvoice, { invoiceId: id, principal: callerPrincipal(principal), ...(request.prices !== undefined ? { prices: request.prices } : {}) }, 'query');
    return requestQuery<ReplayInvoiceReply>(this.nc, q.subject, query, { request: q.schema, response: q.replySchema }, { ...trace(t), timeoutMs: REPLAY_TIMEOUT_MS });
  }

  /** The team's invoice's dispute bundle, as `gpunet dispute-bundle` writes it. */
  async disputeBundle(principal: Principal, invoiceId: string, t: RequestTrace): Promise<DisputeBundleReply> {
    authorize(principal, 'invoices:read');
    const id = parsed(InvoiceId, invoiceId, 'invoice id');
    const q = Queries.GetDisputeBundle;
    return requestQuery<DisputeBundleReply>(this.nc, q.subject, parsed(GetDisputeBundle, { invoiceId: id, principal: callerPrincipal(principal) }, 'query'), { request: q.schema, response: q.replySchema }, { ...trace(t), timeoutMs: REPLAY_TIMEOUT_MS });
  }

  async rebuild(principal: Principal, t: RequestTrace): Promise<RebuildLedgerReply> {
    authorize(principal, 'ledger:rebuild');
    const c = Commands.RebuildLedger;
    return requestQuery<RebuildLedgerReply>(this.nc, c.subject, { principal: callerPrincipal(principal) }, { request: c.schema, response: c.replySchema }, { ...trace(t), timeoutMs: REBUILD_TIMEOUT_MS });
  }
}
