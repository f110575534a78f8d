/**
 * Every error code a gpunet part can answer or report with: the `code` of a reply's `error`
 * (`{ ok: false, error }` over NATS), of an HTTP error body, of a dead letter's `error` and of the
 * CLI's JSON errors. It is the one list: the error family (`GpunetError` in libs/errors) types its
 * `code` with {@link ErrorCode}, so an error class with a code not listed here does not compile,
 * and the exported documents take their list from here.
 *
 * Consumers treat codes as open (a new code is an additive change), and `retryable` in the error
 * says whether the same request may succeed later.
 */
export const ERROR_CODES = {
  // ── the request ──
  validation_failed: 'A field of the request (or a header) is invalid; `issues` names each with its fix.',
  unsupported_schema_version: 'The `Gpunet-Schema-Version` header (or an event\'s `metadata.schemaVersion`) names a version this message does not accept; the message lists the versions accepted.',
  unauthorized: 'No API key, or one that is unknown, revoked or of a disabled team (HTTP 401).',
  forbidden: 'The key\'s role or team may not do this (HTTP 403).',
  not_found: 'The job, team, key, invoice, blob or route does not exist, or not for the caller\'s team (HTTP 404).',
  illegal_state: 'Not allowed in the current state, e.g. cancelling a job that has ended (HTTP 409).',
  budget_exceeded: 'The job\'s worst-case charge would take the team past its hard monthly budget (HTTP 402); the message names the budget, the figures and the fix.',
  idempotency_conflict: 'An `Idempotency-Key` (or event id) already used with a different request (HTTP 409).',
  payload_too_large: 'The HTTP body is larger than the API takes (HTTP 413).',
  too_large: 'An upload is larger than the size it declared or than the limit.',
  // ── concurrency and availability: retryable ──
  concurrency_conflict: 'Someone else changed the same thing first; read again and retry.',
  wrong_expected_version: 'The event store stream was not at the expected revision; read again and retry.',
  fenced: 'A single-writer part appended after another instance took over its role (its fence stream moved on): nothing was written; that instance steps down, it does not retry (decision 0029).',
  transient: 'A dependency (store, bus) is unavailable or busy; retry later (HTTP 503).',
  query_timeout: 'The service asked did not answer in time; retry later.',
  query_unavailable: 'No service answers this subject right now; retry later.',
  publish_failed: 'The bus refused a publish.',
  publish_timeout: 'The bus did not acknowledge a publish in time.',
  unreachable: 'The client could not reach the API (SDK, CLI).',
  // ── the bus and its messages ──
  malformed_message: 'A bus message body that is not JSON or not the envelope its subject carries.',
  not_recorded: 'An event on the bus that the event store does not hold as it came: never acted on (dead letter).',
  node_data_refused: 'Storage refused a node\'s request about its own bucket: the attempt is not placed on that node or was released, a blob is not the job\'s, or the bytes do not match their address (decision 0025).',
  report_refused: 'A node report the recorder refused (unknown key, bad signature, not placed there, replayed).',
  invalid_topology: 'A stream or consumer definition in deploy/ is invalid.',
  provisioning_failed: 'nats-server refused to create or update a stream or consumer as defined.',
  closed: 'The runner, relay or client was already closed.',
  // ── data ──
  blob_integrity: 'Stored or received bytes do not hash to their address.',
  integrity_failed: 'A downloaded file does not match its sha256 (SDK).',
  // ── nodes ──
  resource_limits_unavailable: 'The node cannot enforce the resource limits a job asks for.',
  gpu_detection_failed: 'The node could not list its GPUs.',
  // ── clients and tools ──
  protocol_error: 'An answer outside the contract (SDK).',
  wait_timeout: 'A wait for a job ran out of time (SDK, CLI).',
  client_config: 'The client\'s settings (URL, key, NATS) are missing or invalid (SDK, CLI).',
  usage: 'A command line or tool request that cannot be used as given (CLI, replay, simulator).',
  state_file_invalid: 'The local network\'s state file is unreadable (CLI).',
  local_network: 'The local network could not be started or stopped (CLI).',
  swf_invalid: 'A workload trace is not valid SWF (simulator).',
  trace_unreadable: 'A workload trace cannot be read (simulator).',
  cluster_size_unknown: 'The trace does not say the cluster\'s size; give it (simulator).',
  // ── anything else ──
  internal: 'A fault of the answering side; the detail is in its log, not in the answer (HTTP 500).',
} as const;

/** One of {@link ERROR_CODES}. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** An HTTP status the API has no code of its own for, as a code: `http_405`, `http_415`. */
export type HttpStatusCode = `http_${number}`;

/** Every code of {@link ERROR_CODES}, in the order listed. */
export const REPLY_ERROR_CODES = Object.keys(ERROR_CODES) as readonly ErrorCode[];

/** Whether `code` is one of {@link ERROR_CODES}. */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}
