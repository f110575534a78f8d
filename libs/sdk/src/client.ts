import {
  BudgetView,
  type SetBudget,
  ApiKeyCreated,
  ApiKeyView,
  AuditJobReport,
  AuditJobsReply,
  CancelJobReply,
  CapacityReply,
  EstimateJobReply,
  FINAL_JOB_STATES,
  type FeedEntry,
  GetChargesReply,
  GetQueueReply,
  InvoiceView,
  JobEvents,
  JobOutputs,
  JobView,
  ListInvoicesReply,
  ListApiKeysReply,
  ListJobsReply,
  ListPriceListsReply,
  ListTeamsReply,
  LogLine,
  PriceListPublished,
  QuotasReply,
  QuotaUsage,
  RebuildLedgerReply,
  SubmitJobReply,
  TeamView,
  type CreateApiKey,
  type CreateTeam,
  type JobState,
  type PublishPriceList,
  type SetQuota,
} from '#contracts';
import { BlobStore } from '#blobs';
import { natsAuthOptions } from '#identity';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { z } from 'zod';
import { writeVerified, type DownloadProgress } from './download.js';
import { followFeed, type FeedOptions } from './feed.js';
import { HttpUploader } from './http-upload.js';
import { ClientConfigError, GpunetApiError, GpunetProtocolError, JobFileError, WaitTimeoutError } from './errors.js';
import { HttpTransport, type HttpTransportOptions } from './http.js';
import { uploadJobInputs, type UploadedInputs, type UploadInputsOptions } from './inputs.js';
import { checkJobFile, parseJobFileText, unresolvedInputs, type JobFileSpec } from './job-file.js';
import { parseNdjson } from './ndjson.js';

/** Options of {@link GpunetClient}. */
/** `GET /v1/audit/jobs/{jobId}`: the job's audit, the store position it holds, and the id of the event recording the query. */
export const AuditJobAnswer = AuditJobReport.extend({ asOfPosition: z.string(), recordedAs: z.string() });
export type AuditJobAnswer = z.output<typeof AuditJobAnswer>;

export interface GpunetClientOptions {
  /** Base URL of the intake API, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** The team's API key (`Authorization: Bearer`). */
  apiKey: string;
  /** NATS server(s), comma-separated; needed only to upload inputs ({@link GpunetClient.uploadInputs}). */
  natsUrl?: string;
  /** The API key's team; blobs are stored per team. Needed only to upload inputs. */
  team?: string;
  /**
   * The team's NKey seed file (`team-<team>.nk`, mode 0600): NATS connections authenticate with
   * it (a gpunet network refuses connections without one). `gpunet up` writes it to
   * `<data dir>/keys/` and the CLI passes it. Needed only to upload inputs.
   */
  natsKeyFile?: string;
  /**
   * How {@link GpunetClient.uploadInputs} sends inputs: `http` (intake's tus endpoint; needs only
   * the API key), `nats` (straight into the team's bucket; needs `natsUrl`, `team` and, on a
   * secured network, `natsKeyFile`), or `auto` (the default): NATS when `natsUrl` and `team` are
   * given, else HTTP. Both store the same content-addressed blobs and resume an interrupted upload.
   */
  upload?: UploadVia;
  /** HTTP details: timeout (30 s), retries of safe requests (2), fetch. */
  http?: Omit<HttpTransportOptions, 'baseUrl' | 'apiKey'>;
}

/** How inputs are uploaded; see {@link GpunetClientOptions.upload}. */
export type UploadVia = 'auto' | 'http' | 'nats';

/** Options of {@link GpunetClient.waitFor}. */
export interface WaitOptions {
  /** Called with each new view of the job (state or anything else changed), and the one before. */
  onUpdate?: (view: JobView, previous: JobView | undefined) => void;
  /** Give up after this long with a {@link WaitTimeoutError}. Default: wait as long as it takes. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What {@link GpunetClient.downloadOutput} wrote. */
export interface DownloadedOutput {
  path: string;
  dest: string;
  sha256: string;
  size: number;
}

const enc = encodeURIComponent;
const FINAL = new Set<string>(FINAL_JOB_STATES);

/** True for a state a job never leaves (completed, failed, timeout, cancelled, node_lost, deadline, rejected). */
export function isFinalState(state: JobState | string): boolean {
  return FINAL.has(state);
}

/**
 * A typed client of a gpunet network for producers: submit jobs, follow them, fetch their
 * logs, timeline, outputs and charges. Talks HTTP to intake; uploads inputs straight to the
 * NATS Object Store (content-addressed, skipping what the team already holds).
 *
 * Every reply is checked against the contract; failures are {@link GpunetApiError} (the
 * server's code, message and field issues), {@link GpunetUnreachableError},
 * {@link GpunetProtocolError}. Call {@link close} when done if inputs were uploaded.
 */
export class GpunetClient {
  private readonly http: HttpTransport;
  private nats?: Promise<NatsConnection>;
  private blobs?: Promise<BlobStore>;

  constructor(private readonly options: GpunetClientOptions) {
    this.http = new HttpTransport({ ...options.http, baseUrl: options.baseUrl, apiKey: options.apiKey });
  }

  /**
   * Where a waiting job of the caller's team stands in the live plan (`GET /v1/jobs/:id/queue`):
   * `pending[0]` has its place in line, reason and expected start; empty once it no longer waits.
   */
  queue(jobId: string): Promise<GetQueueReply> {
    return this.http.json({ method: 'GET', path: `/v1/jobs/${enc(jobId)}/queue` }, GetQueueReply);
  }

  /** Free GPUs per GPU model per hour for the next `hours` hours (default 24), from the live plan (`GET /v1/capacity`). */
  capacity(options: { hours?: number } = {}): Promise<CapacityReply> {
    return this.http.json({ method: 'GET', path: `/v1/capacity${options.hours !== undefined ? `?hours=${options.hours}` : ''}` }, CapacityReply);
  }

  /**
   * Sets a team's GPU quota for one model (`POST /v1/quotas`, an API key with role `billing`):
   * concurrent GPUs and GPU-hours per calendar month (UTC), null or absent for no limit, and
   * whether the team may borrow idle GPUs past its concurrent quota. Answers with the quota as
   * placement shows it. Setting the same values again changes nothing but the record.
   */
  setQuota(quota: SetQuota): Promise<QuotaUsage> {
    return this.http.json({ method: 'POST', path: '/v1/quotas', body: quota, idempotent: true }, QuotaUsage);
  }

  /** GPU quotas and their use this month (`GET /v1/quotas`): the key's own team, or with role `billing` every team (or `team`). */
  quotas(options: { team?: string } = {}): Promise<QuotasReply> {
    return this.http.json({ method: 'GET', path: '/v1/quotas', query: { team: options.team } }, QuotasReply);
  }

  /**
   * Where the job would land if submitted now, without submitting it (`POST /v1/estimate`):
   * expected start and end, the GPU model, and the charge of its whole time limit (an upper
   * bound), or why it cannot run (`runnable: false`). Local inputs (`from:`) are left out rather
   * than uploaded: neither the plan nor the price depends on them. An answer with an expected
   * start is recorded and names its `estimateId`: pass it to {@link submit} to hold the job to it.
   */
  async estimate(spec: JobFileSpec | string): Promise<EstimateJobReply> {
    const body = typeof spec === 'string' ? parseJobFileText(spec) : spec;
    return this.http.json({ method: 'POST', path: '/v1/estimate', body: { spec: withoutLocalInputs(body) }, idempotent: true }, EstimateJobReply);
  }

  /**
   * Submits a job: a spec object (the `JobSpecInput` shape, addresses filled in) or the text of
   * a job.yaml. Safe to retry: without `idempotencyKey` a fresh one is made per call and reused
   * for this call's own retries, so a lost answer never creates the job twice.
   * A spec with `from:` inputs not yet uploaded is refused here: call {@link uploadInputs} first.
   * A deadline the current plan cannot meet is refused (`request.deadline`, with the earliest
   * possible finish) unless `deadlinePolicy: 'warn'`, which accepts it with `warnings`.
   * `estimateId` (from {@link estimate}, same request) holds the job to that estimate: it becomes
   * the job's recorded quote; an estimate of another request, or used by another job, is refused (`estimateId`).
   */
  async submit(spec: JobFileSpec | string, options: { idempotencyKey?: string; deadlinePolicy?: 'reject' | 'warn'; estimateId?: string } = {}): Promise<SubmitJobReply> {
    const body = typeof spec === 'string' ? parseJobFileText(spec) : spec;
    const pending = unresolvedInputs(body);
    if (pending.length > 0) {
      throw new JobFileError(
        `the spec names local inputs (\`from:\`) that are not uploaded: ${pending.join(', ')}`,
        pending.map((path) => ({ path: `${path}.from`, message: 'is a local path, not a content address', fix: 'upload it first with `uploadInputs(spec, baseDir)` (the CLI does this for you)' })),
      );
    }
    const idempotencyKey = options.idempotencyKey ?? randomUUID();
    return this.http.json(
      {
        method: 'POST',
        path: '/v1/jobs',
        body: { spec: body, idempotencyKey, ...(options.estimateId !== undefined ? { estimateId: options.estimateId } : {}) },
        headers: { 'idempotency-key': idempotencyKey, ...(options.deadlinePolicy ? { 'gpunet-deadline-policy': options.deadlinePolicy } : {}) },
        idempotent: true,
      },
      SubmitJobReply,
    );
  }

  /** One job: state, spec, attempts, outputs and timeline. */
  getJob(jobId: string, options: { signal?: AbortSignal } = {}): Promise<JobView> {
    return this.http.json({ method: 'GET', path: `/v1/jobs/${enc(jobId)}`, ...(options.signal ? { signal: options.signal } : {}) }, JobView);
  }

  /** The team's jobs, newest first, one page (`nextCursor` for the next), optionally only in some states. */
  listJobs(options: { state?: JobState | readonly JobState[]; limit?: number; cursor?: string } = {}): Promise<ListJobsReply> {
    const states = options.state === undefined ? undefined : typeof options.state === 'string' ? [options.state] : options.state;
    return this.http.json(
      {
        method: 'GET',
        path: '/v1/jobs',
        query: { state: states, limit: options.limit?.toString(), cursor: options.cursor },
      },
      ListJobsReply,
    );
  }

  /** Cancels a job; cancelling an ended job changes nothing (`cancelRequested: false`). */
  cancel(jobId: string, options: { reason?: string } = {}): Promise<CancelJobReply> {
    return this.http.json(
      { method: 'POST', path: `/v1/jobs/${enc(jobId)}/cancel`, body: options.reason ? { reason: options.reason } : {}, idempotent: true },
      CancelJobReply,
    );
  }

  /**
   * The job's log lines (`{ ts, stream, line, attemptId }`) as they are read from the NDJSON
   * endpoint. With `follow`, the stream stays open until the job ends (or `signal` aborts).
   */
  async *logs(jobId: string, options: { follow?: boolean; signal?: AbortSignal } = {}): AsyncGenerator<LogLine> {
    const response = await this.http.send({
      method: 'GET',
      path: `/v1/jobs/${enc(jobId)}/logs`,
      query: { follow: options.follow ? '1' : undefined },
      headers: { accept: 'application/x-ndjson' },
      ...(options.follow ? { timeoutMs: 0 } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (!response.body) return;
    let n = 0;
    for await (const item of parseNdjson(response.body)) {
      n += 1;
      const parsed = LogLine.safeParse(item);
      if (!parsed.success) throw new GpunetProtocolError(`log line ${n} of job ${jobId} does not match the LogLine contract: ${parsed.error.message}`);
      yield parsed.data;
    }
  }

  /** Every event of the job from every service, in store order, each with its time and producer. */
  async events(jobId: string): Promise<JobEvents> {
    return this.http.json({ method: 'GET', path: `/v1/jobs/${enc(jobId)}/events` }, JobEvents);
  }

  /** The job's stored output files (path, size, sha256); `stored: false` until storage recorded them. */
  outputs(jobId: string): Promise<JobOutputs> {
    return this.http.json({ method: 'GET', path: `/v1/jobs/${enc(jobId)}/outputs` }, JobOutputs);
  }

  /**
   * Downloads one output file to `dest` (a file path), verified against the sha256 and size the
   * job recorded; `dest` only ever holds the complete, correct file. Pass `expected` (from
   * {@link outputs}) to save the lookup.
   */
  async downloadOutput(
    jobId: string,
    path: string,
    dest: string,
    options: { onProgress?: (p: DownloadProgress) => void; expected?: { sha256: string; size: number } } = {},
  ): Promise<DownloadedOutput> {
    let expected = options.expected;
    if (!expected) {
      const listed = (await this.outputs(jobId)).files.find((f) => f.path === path);
      if (!listed) throw new GpunetApiError(404, 'not_found', `job ${jobId} has no stored output \`${path}\`; list them with \`outputs(jobId)\``);
      expected = listed;
    }
    const response = await this.http.send({ method: 'GET', path: `/v1/jobs/${enc(jobId)}/outputs/${path.split('/').map(enc).join('/')}`, timeoutMs: 0, headers: { accept: '*/*' } });
    const body: AsyncIterable<Uint8Array> = response.body ?? (async function* () {})();
    const written = await writeVerified(body, dest, { path, ...expected }, options.onProgress);
    return { path, dest, ...written };
  }

  /** Downloads every stored output of the job under `destDir`, keeping their relative paths. */
  async downloadOutputs(jobId: string, destDir: string, options: { onProgress?: (p: DownloadProgress) => void } = {}): Promise<DownloadedOutput[]> {
    const { files } = await this.outputs(jobId);
    const done: DownloadedOutput[] = [];
    for (const f of files) done.push(await this.downloadOutput(jobId, f.path, join(destDir, ...f.path.split('/')), { ...options, expected: f }));
    return done;
  }

  /** Usage lines and totals of the team, or of one job, as the ledger recorded them. */
  charges(options: { jobId?: string; from?: string; to?: string } = {}): Promise<GetChargesReply> {
    return this.http.json({ method: 'GET', path: '/v1/charges', query: { jobId: options.jobId, from: options.from, to: options.to } }, GetChargesReply);
  }

  /**
   * The team's invoices, one per calendar month (UTC), newest first (`GET /v1/invoices`): drafts
   * while the month is open or inside the late-event cutoff, then finalized.
   */
  invoices(filter: { month?: string; status?: 'draft' | 'finalized' } = {}): Promise<ListInvoicesReply> {
    return this.http.json({ method: 'GET', path: '/v1/invoices', query: { month: filter.month, status: filter.status } }, ListInvoicesReply);
  }

  /** One invoice (`inv-<team>-<YYYY-MM>`): a line per attempt per node, totals, postings, status, credit notes. */
  invoice(invoiceId: string): Promise<InvoiceView> {
    return this.http.json({ method: 'GET', path: `/v1/invoices/${enc(invoiceId)}` }, InvoiceView);
  }

  /** Every price list version and the one in force now (`GET /v1/prices`). */
  priceLists(): Promise<ListPriceListsReply> {
    return this.http.json({ method: 'GET', path: '/v1/prices' }, ListPriceListsReply);
  }

  /**
   * Publishes a new price list version (`POST /v1/prices`, an API key with role `billing`). The
   * ledger numbers it; `effectiveFrom` may not be in the past (default: now). Not retried: a
   * retry after a lost answer could publish the list twice.
   */
  publishPriceList(list: PublishPriceList): Promise<PriceListPublished> {
    return this.http.json({ method: 'POST', path: '/v1/prices', body: list }, PriceListPublished);
  }

  /** A team's budget and this month's figures (`GET /v1/budgets[/{team}]`): default the key's team; another team's needs role `billing`. */
  budget(team?: string): Promise<BudgetView> {
    return this.http.json({ method: 'GET', path: team === undefined ? '/v1/budgets' : `/v1/budgets/${enc(team)}` }, BudgetView);
  }

  /**
   * Sets a team's monthly budget (`PUT /v1/budgets/{team}`, role `billing`): `monthlyMicros` per
   * UTC month in the price list's currency, `onExceed` `refuse` (default) or `hold`, soft
   * `thresholdsPercent` (default 50, 80, 100). Setting the same budget again is harmless.
   */
  setBudget(team: string, budget: Partial<Omit<SetBudget, 'team' | 'monthlyMicros'>> & { monthlyMicros: number }): Promise<BudgetView> {
    return this.http.json({ method: 'PUT', path: `/v1/budgets/${enc(team)}`, idempotent: true, body: budget }, BudgetView);
  }

  /** Removes a team's budget (`DELETE /v1/budgets/{team}`, role `billing`): its jobs are no longer checked. */
  clearBudget(team: string): Promise<BudgetView> {
    return this.http.json({ method: 'DELETE', path: `/v1/budgets/${enc(team)}`, idempotent: true }, BudgetView);
  }

  /** Creates a team (`POST /v1/teams`, role `operator`). Not retried: a retry after a lost answer would say it exists. */
  createTeam(team: CreateTeam): Promise<TeamView> {
    return this.http.json({ method: 'POST', path: '/v1/teams', body: team }, TeamView);
  }

  /** Teams (`GET /v1/teams`): every team for an `operator`, its own for an `admin`. */
  teams(): Promise<ListTeamsReply> {
    return this.http.json({ method: 'GET', path: '/v1/teams' }, ListTeamsReply);
  }

  /** One team (`GET /v1/teams/{team}`). */
  team(team: string): Promise<TeamView> {
    return this.http.json({ method: 'GET', path: `/v1/teams/${enc(team)}` }, TeamView);
  }

  /** Disables a team: every key of it is refused from then on (`POST /v1/teams/{team}/disable`, role `operator`). */
  disableTeam(team: string, reason?: string): Promise<TeamView> {
    return this.http.json({ method: 'POST', path: `/v1/teams/${enc(team)}/disable`, idempotent: true, body: reason !== undefined ? { reason } : {} }, TeamView);
  }

  /**
   * Issues an API key (`POST /v1/keys`, role `operator`, or `admin` for its own team). The reply's
   * `apiKey` is the key, shown this once: intake keeps only its sha256. Not retried.
   */
  createApiKey(request: CreateApiKey): Promise<ApiKeyCreated> {
    return this.http.json({ method: 'POST', path: '/v1/keys', body: request }, ApiKeyCreated);
  }

  /** API keys (`GET /v1/keys`): ids, team, role, who issued them, revoked or not; never the keys. */
  apiKeys(filter: { team?: string } = {}): Promise<ListApiKeysReply> {
    return this.http.json({ method: 'GET', path: '/v1/keys', query: { team: filter.team } }, ListApiKeysReply);
  }

  /** Revokes an API key; every intake refuses it within a second (`POST /v1/keys/{keyId}/revoke`). Revoking twice is harmless. */
  revokeApiKey(keyId: string, reason?: string): Promise<ApiKeyView> {
    return this.http.json({ method: 'POST', path: `/v1/keys/${enc(keyId)}/revoke`, idempotent: true, body: reason !== undefined ? { reason } : {} }, ApiKeyView);
  }

  /**
   * Recomputes every ledger projection from zero and compares each invoice byte for byte
   * (`POST /v1/ledger/rebuild`, roles `billing` and `admin`). Changes no event.
   */
  rebuildLedger(options: { timeoutMs?: number } = {}): Promise<RebuildLedgerReply> {
    return this.http.json({ method: 'POST', path: '/v1/ledger/rebuild', idempotent: true, timeoutMs: options.timeoutMs ?? 600_000 }, RebuildLedgerReply);
  }

  /**
   * Jobs for an audit (`GET /v1/audit/jobs`): outcome, nodes, GPU models, phase durations, outputs
   * and cost per job, a page (`limit` ≤ 1000 from `offset`) at a time. A team key sees its own team; a `compliance` key every team (or `team`).
   * The ledger records the query (who asked what, when) before answering.
   */
  auditJobs(filter: { team?: string; from?: string; to?: string; node?: string; gpuModel?: string; outcome?: string; limit?: number; offset?: number } = {}): Promise<AuditJobsReply> {
    const query = { ...filter, limit: filter.limit?.toString(), offset: filter.offset?.toString() };
    return this.http.json({ method: 'GET', path: '/v1/audit/jobs', query }, AuditJobsReply);
  }

  /** One job's full audit across every service (`GET /v1/audit/jobs/{jobId}`); recorded like {@link auditJobs}. */
  auditJob(jobId: string): Promise<AuditJobAnswer> {
    return this.http.json({ method: 'GET', path: `/v1/audit/jobs/${encodeURIComponent(jobId)}` }, AuditJobAnswer);
  }

  /**
   * The team's feed (`GET /v1/feed`, Server-Sent Events): its own jobs' events in store order,
   * from `after` (a `FeedEntry.position`) or the start, then live; resumed after a dropped
   * connection from the last entry yielded. With `jobId`, one job's entries, ending after its
   * `JobEnded`. Break out of the loop or abort `signal` to stop.
   */
  feed(options: FeedOptions = {}): AsyncGenerator<FeedEntry> {
    return followFeed(this.http, options);
  }

  /**
   * Follows the job on the team feed until it is over — its `JobEnded` event, which the ledger
   * records once for every job on every path — and returns its final view (read after the
   * JobEnded, so it holds the final state and outputs: intake answers as of the store's head).
   * `onUpdate` gets the job's view after each of its events. No polling: the view is read once per
   * event.
   */
  async waitFor(jobId: string, options: WaitOptions = {}): Promise<JobView> {
    const stop = new AbortController();
    const unlink = linkAbort(options.signal, stop);
    let timedOut = false;
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => ((timedOut = true), stop.abort()), options.timeoutMs);
    let last: JobView | undefined;
    const see = (view: JobView) => {
      if (!last || view.state !== last.state || view.updatedAt !== last.updatedAt || view.timeline.length !== last.timeline.length) options.onUpdate?.(view, last);
      last = view;
    };
    try {
      see(await this.getJob(jobId, { signal: stop.signal }));
      for await (const entry of this.feed({ jobId, signal: stop.signal })) {
        see(await this.getJob(jobId, { signal: stop.signal }));
        if (entry.type === 'JobEnded') return last!;
      }
      if (timedOut) throw new WaitTimeoutError(jobId, options.timeoutMs!, last?.state);
      throw (options.signal?.reason as Error | undefined) ?? new Error('the job\'s feed ended without its JobEnded');
    } catch (err) {
      if (timedOut) throw new WaitTimeoutError(jobId, options.timeoutMs!, last?.state);
      throw err;
    } finally {
      clearTimeout(timer);
      unlink();
    }
  }

  /**
   * Uploads the local files and folders a job file names with `from:` (relative to `baseDir`,
   * usually the job file's directory) and returns the spec with their content addresses, ready
   * for {@link submit}. Blobs the team already holds are not sent again. Needs `natsUrl` and
   * `team` when there is something to upload. Throws {@link JobFileError} for a spec the server would refuse.
   */
  async uploadInputs(spec: JobFileSpec | string, baseDir: string, options: UploadInputsOptions & { via?: UploadVia } = {}): Promise<UploadedInputs> {
    const body = typeof spec === 'string' ? parseJobFileText(spec) : spec;
    // A spec without local inputs needs no connection (and no team).
    if (checkJobFile(body).length === 0) return { spec: body, inputs: [] };
    const via = this.uploadVia(options.via);
    if (via === 'http') {
      const uploader = new HttpUploader({ baseUrl: this.options.baseUrl, apiKey: this.options.apiKey, ...(this.options.http?.fetch ? { fetch: this.options.http.fetch } : {}) });
      return uploadJobInputs(uploader, this.options.team ?? '', body, baseDir, options);
    }
    const team = this.options.team;
    if (!team) throw new ClientConfigError('team', 'uploading inputs over NATS needs the API key\'s team (option `team`): blobs are stored per team; or upload over HTTP (`upload: \'http\'`)');
    return uploadJobInputs(await this.blobStore(), team, body, baseDir, options);
  }

  /** The way inputs go: the one asked for, else the client's option, else NATS when it is configured, else HTTP. */
  uploadVia(asked?: UploadVia): 'http' | 'nats' {
    const via = asked ?? this.options.upload ?? 'auto';
    if (via !== 'auto') return via;
    return this.options.natsUrl && this.options.team ? 'nats' : 'http';
  }

  /** Closes the NATS connection opened for uploads, if any. */
  async close(): Promise<void> {
    const nats = this.nats;
    this.nats = undefined;
    this.blobs = undefined;
    if (nats) await (await nats.catch(() => undefined))?.close();
  }

  private blobStore(): Promise<BlobStore> {
    if (!this.options.natsUrl) {
      return Promise.reject(new ClientConfigError('natsUrl', 'uploading inputs needs the NATS URL (option `natsUrl`, e.g. nats://127.0.0.1:4222)'));
    }
    const servers = this.options.natsUrl.split(',').map((s) => s.trim());
    this.nats ??= natsAuthOptions(this.options.natsKeyFile).then((auth) => connect({ ...auth, servers, name: 'gpunet-sdk', noAsyncTraces: true })).catch((err: unknown) => {
      this.nats = undefined;
      throw new ClientConfigError('natsUrl', `cannot connect to NATS at ${this.options.natsUrl}: ${(err as Error).message}`, { cause: err });
    });
    // A team's bucket is made with the team by the control plane; a producer may not create streams.
    this.blobs ??= this.nats.then((nc) => BlobStore.open(nc, { create: false }));
    return this.blobs;
  }
}

/** Aborts `target` when `source` aborts; returns the unlink. */
function linkAbort(source: AbortSignal | undefined, target: AbortController): () => void {
  if (!source) return () => {};
  if (source.aborted) target.abort(source.reason);
  const onAbort = () => target.abort(source.reason);
  source.addEventListener('abort', onAbort, { once: true });
  return () => source.removeEventListener('abort', onAbort);
}

/** `spec` without its local inputs (`from:`), for an estimate; the spec itself is not modified. */
function withoutLocalInputs(spec: JobFileSpec): JobFileSpec {
  if (unresolvedInputs(spec).length === 0) return spec;
  const data = (spec as { data?: { inputs?: unknown[] } }).data!;
  const inputs = data.inputs!.filter((item) => !(typeof item === 'object' && item !== null && 'from' in item));
  return { ...spec, data: { ...data, inputs } } as JobFileSpec;
}
