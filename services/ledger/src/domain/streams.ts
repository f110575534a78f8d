/**
 * Event store stream ids the ledger writes and reads, as docs/design/lifecycle.md fixes them.
 * The ledger writes only streams starting with `ledger-`; it reads the others.
 */

/** Prefix of every stream the ledger writes (its outbox relay publishes these). */
export const LEDGER_STREAM_PREFIX = 'ledger-';

/** `ledger-pricelist`: every PriceListPublished, version 1 first. */
export const PRICE_LIST_STREAM = `${LEDGER_STREAM_PREFIX}pricelist`;

/** Prefix of the usage streams, one per job. */
export const USAGE_STREAM_PREFIX = `${LEDGER_STREAM_PREFIX}usage-`;

/** `ledger-usage-<jobId>`: the UsageRecorded lines of one job, one per attempt. */
export function usageStreamId(jobId: string): string {
  return `${USAGE_STREAM_PREFIX}${jobId}`;
}

/** `execution-<nodeId>-attempt-<attemptId>`: written by the agent of that node (ComputeHeld … ComputeReleased). */
export function attemptStreamId(nodeId: string, attemptId: string): string {
  return `execution-${nodeId}-attempt-${attemptId}`;
}

/** `intake-job-<jobId>`: written by intake; JobSubmitted names the team that pays. */
export function intakeJobStreamId(jobId: string): string {
  return `intake-job-${jobId}`;
}

/** `placement-node-<nodeId>`: written by placement; NodeLost lists the attempts lost with the node. */
export function placementNodeStreamId(nodeId: string): string {
  return `placement-node-${nodeId}`;
}

/** Prefix of the invoice streams, one per team and month. */
export const INVOICE_STREAM_PREFIX = `${LEDGER_STREAM_PREFIX}invoice-`;

/** `ledger-invoice-<team>-<YYYY-MM>`: the InvoiceFinalized of a team's month, then its CreditNoteIssued. */
export function invoiceStreamId(team: string, month: string): string {
  return `${INVOICE_STREAM_PREFIX}${team}-${month}`;
}

/** Prefix of the job-end streams, one per job. */
export const JOB_END_STREAM_PREFIX = `${LEDGER_STREAM_PREFIX}job-`;

/** `ledger-job-<jobId>`: the job's JobEnded, its only event (appended expecting no stream: once). */
export function jobEndStreamId(jobId: string): string {
  return `${JOB_END_STREAM_PREFIX}${jobId}`;
}
