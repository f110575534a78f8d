/**
 * The OpenAPI 3.1 document of intake's HTTP API, assembled from the contracts' zod schemas
 * (`z.toJSONSchema`, JSON Schema 2020-12, the 3.1 dialect). Request bodies are rendered as
 * input (fields with defaults optional), answers as output. Served at `GET /openapi.json`.
 */
import {
  ListNodeStatesReply,
  NodeAdminReply,
  AUDIT_OUTCOMES,
  AuditJobReport,
  AuditJobsReply,
  CancelJob,
  ChainStatus,
  CancelJobReply,
  CapacityReply,
  EstimateJobReply,
  FeedEntry,
  GetQueueReply,
  HEADERS,
  GetChargesReply,
  JOB_OUTCOMES,
  JOB_STATES,
  GpuModel,
  NodeId,
  JobId,
  JobSpecInput,
  JobView,
  ListJobsReply,
  LogLine,
  SubmitJob,
  SubmitJobReply,
  TeamId,
} from '#contracts';
import { NodeAdminBody } from '../nodes/nodes.service.js';
import { z } from 'zod';
import { JobEvents, JobOutputs } from '#contracts';
import { INVOICE_STATUSES, InvoiceView, ListInvoicesReply, ListPriceListsReply, PriceListPublished, PublishPriceList, RebuildLedgerReply } from '#contracts';
import { DisputeBundleReply, ReplayInvoiceBody, ReplayInvoiceReply } from '#contracts';
import { QuotasReply, QuotaUsage, SetQuota } from '#contracts';
import { ApiKeyCreated, ApiKeyView, BudgetView, CreateApiKey, CreateTeam, DisableTeam, ListApiKeysReply, ListTeamsReply, RevokeApiKey, SetBudget, TeamView } from '#contracts';
import { Healthz } from '../jobs/job-records.js';
import { WhoAmI } from '../auth/whoami.http.controller.js';
import { AuditQueriesReply } from '../audit/audit.http.controller.js';
import { ErrorBody, RETRY_AFTER_SECONDS } from './http-errors.js';

type Json = { [key: string]: unknown };

/** Version of the HTTP API document; bump the minor on additions. */
export const API_VERSION = '1.4.0';

/** Schemas by component name, and whether they describe what clients send (input) or receive (output). */
const COMPONENTS: Record<string, { schema: z.ZodType; io: 'input' | 'output' }> = {
  SubmitJob: { schema: SubmitJob, io: 'input' },
  JobSpec: { schema: JobSpecInput, io: 'input' },
  CancelRequest: { schema: CancelJob.omit({ jobId: true }), io: 'input' },
  SubmitJobReply: { schema: SubmitJobReply, io: 'output' },
  CancelJobReply: { schema: CancelJobReply, io: 'output' },
  JobView: { schema: JobView, io: 'output' },
  ListJobsReply: { schema: ListJobsReply, io: 'output' },
  JobEvents: { schema: JobEvents, io: 'output' },
  JobOutputs: { schema: JobOutputs, io: 'output' },
  LogLine: { schema: LogLine, io: 'output' },
  FeedEntry: { schema: FeedEntry, io: 'output' },
  GetChargesReply: { schema: GetChargesReply, io: 'output' },
  EstimateJobReply: { schema: EstimateJobReply, io: 'output' },
  GetQueueReply: { schema: GetQueueReply, io: 'output' },
  CapacityReply: { schema: CapacityReply, io: 'output' },
  AuditJobsReply: { schema: AuditJobsReply, io: 'output' },
  AuditJob: {
    schema: AuditJobReport.extend({
      asOfPosition: z.string().describe('The answer holds every event up to this global position of the store (decimal).'),
      recordedAs: z.string().describe('Id of the AuditQueried event that records this query.'),
    }),
    io: 'output',
  },
  ListInvoicesReply: { schema: ListInvoicesReply, io: 'output' },
  InvoiceView: { schema: InvoiceView, io: 'output' },
  ReplayInvoiceRequest: { schema: ReplayInvoiceBody, io: 'input' },
  ReplayInvoiceReply: { schema: ReplayInvoiceReply, io: 'output' },
  DisputeBundle: { schema: DisputeBundleReply.shape.bundle, io: 'output' },
  PublishPriceList: { schema: PublishPriceList, io: 'input' },
  SetQuota: { schema: SetQuota, io: 'input' },
  QuotaUsage: { schema: QuotaUsage, io: 'output' },
  QuotasReply: { schema: QuotasReply, io: 'output' },
  PriceListPublished: { schema: PriceListPublished, io: 'output' },
  ListPriceListsReply: { schema: ListPriceListsReply, io: 'output' },
  RebuildLedgerReply: { schema: RebuildLedgerReply, io: 'output' },
  CreateTeam: { schema: CreateTeam, io: 'input' },
  DisableTeamRequest: { schema: DisableTeam.omit({ team: true }), io: 'input' },
  TeamView: { schema: TeamView, io: 'output' },
  NodeAdminRequest: { schema: NodeAdminBody, io: 'input' },
  NodeAdminReply: { schema: NodeAdminReply, io: 'output' },
  ListNodeStatesReply: { schema: ListNodeStatesReply, io: 'output' },
  ListTeamsReply: { schema: ListTeamsReply, io: 'output' },
  CreateApiKey: { schema: CreateApiKey, io: 'input' },
  RevokeApiKeyRequest: { schema: RevokeApiKey.omit({ keyId: true }), io: 'input' },
  ApiKeyCreated: { schema: ApiKeyCreated, io: 'output' },
  ApiKeyView: { schema: ApiKeyView, io: 'output' },
  ListApiKeysReply: { schema: ListApiKeysReply, io: 'output' },
  SetBudgetRequest: { schema: SetBudget.omit({ team: true }), io: 'input' },
  BudgetView: { schema: BudgetView, io: 'output' },
  Healthz: { schema: Healthz, io: 'output' },
  WhoAmI: { schema: WhoAmI, io: 'output' },
  AuditQueriesReply: { schema: AuditQueriesReply, io: 'output' },
  ChainStatus: { schema: ChainStatus, io: 'output' },
  Error: { schema: ErrorBody, io: 'output' },
};

/**
 * zod spells out calendar rules in every date-time pattern (hundreds of characters, repeated);
 * `format: date-time` already says it, so keep only what the format does not: `Z` or an offset.
 */
function shortenDateTime(ctx: { jsonSchema: Json }): void {
  const js = ctx.jsonSchema;
  if (js.format !== 'date-time' || typeof js.pattern !== 'string') return;
  js.pattern = js.pattern.includes('[+-]')
    ? '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?(?:Z|[+-]\\d{2}:\\d{2})$'
    : '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?Z$';
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', override: shortenDateTime }) as Json;
  return rest;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: string) => ({ 'application/json': { schema: ref(name) } });
const errorResponse = (name: string) => ({ $ref: `#/components/responses/${name}` });

const jobIdParam = {
  name: 'jobId',
  in: 'path',
  required: true,
  description: 'The job, e.g. `job_0197a0e211117abc8def0123456789ab`.',
  schema: jsonSchema(JobId, 'input'),
};

const invoiceIdParam = { name: 'invoiceId', in: 'path', required: true, description: '`inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2026-12`.', schema: { type: 'string' } };

const teamParam = { name: 'team', in: 'path', required: true, description: 'The team, e.g. `team-ml`.', schema: jsonSchema(TeamId, 'input') };

const deadlinePolicyParam = {
  name: HEADERS.deadlinePolicy,
  in: 'header',
  required: false,
  description:
    '`reject` (default): a deadline the current plan cannot meet is 400 on `request.deadline`, naming the earliest possible finish. ' +
    '`warn`: accept the job anyway, with the issue in the reply\'s `warnings`.',
  schema: { type: 'string', enum: ['reject', 'warn'] },
};

const uploadParam = { name: 'upload', in: 'path', required: true, description: 'The upload: `<sha256>.<size>` of the blob, as `Location` named it.', schema: { type: 'string', pattern: '^[0-9a-f]{64}\\.(0|[1-9][0-9]{0,15})$' } };
const tusResumable = { name: 'Tus-Resumable', in: 'header', required: true, description: '`1.0.0`.', schema: { type: 'string', const: '1.0.0' } };

/** Errors every authenticated route can answer. */
const AUTH_ERRORS = { '401': errorResponse('Unauthorized'), '403': errorResponse('Forbidden'), '503': errorResponse('Unavailable') };
const JOB_ERRORS = { '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '404': errorResponse('NotFound') };

/** Every route intake serves, as `METHOD /openapi/path`; the tests hold the app to this list. */
export const ROUTES = [
  'POST /v1/jobs',
  'GET /v1/jobs',
  'GET /v1/jobs/{jobId}',
  'POST /v1/jobs/{jobId}/cancel',
  'GET /v1/jobs/{jobId}/logs',
  'GET /v1/jobs/{jobId}/events',
  'GET /v1/jobs/{jobId}/outputs',
  'GET /v1/jobs/{jobId}/outputs/{path}',
  'GET /v1/jobs/{jobId}/queue',
  'GET /v1/feed',
  'OPTIONS /v1/uploads',
  'POST /v1/uploads',
  'HEAD /v1/uploads/{upload}',
  'PATCH /v1/uploads/{upload}',
  'DELETE /v1/uploads/{upload}',
  'GET /v1/queue',
  'POST /v1/estimate',
  'GET /v1/capacity',
  'GET /v1/charges',
  'GET /v1/audit/jobs',
  'GET /v1/audit/jobs/{jobId}',
  'GET /v1/audit/queries',
  'GET /v1/audit/chain',
  'GET /v1/invoices',
  'GET /v1/invoices/{invoiceId}',
  'POST /v1/invoices/{invoiceId}/replay',
  'GET /v1/invoices/{invoiceId}/dispute-bundle',
  'GET /v1/prices',
  'POST /v1/prices',
  'POST /v1/ledger/rebuild',
  'POST /v1/quotas',
  'GET /v1/quotas',
  'POST /v1/teams',
  'GET /v1/teams',
  'GET /v1/teams/{team}',
  'POST /v1/teams/{team}/disable',
  'POST /v1/keys',
  'GET /v1/keys',
  'POST /v1/keys/{keyId}/revoke',
  'GET /v1/budgets',
  'GET /v1/budgets/{team}',
  'PUT /v1/budgets/{team}',
  'DELETE /v1/budgets/{team}',
  'GET /v1/nodes',
  'POST /v1/nodes/{nodeId}/cordon',
  'POST /v1/nodes/{nodeId}/drain',
  'POST /v1/nodes/{nodeId}/uncordon',
  'GET /v1/whoami',
  'GET /healthz',
  'GET /openapi.json',
] as const;

function paths(): Json {
  return {
    '/v1/jobs': {
      post: {
        operationId: 'submitJob',
        summary: 'Submit a job',
        description:
          'Validates the spec, records `JobSubmitted` and answers 201 with the job id. The body is a `SubmitJob` (`{ spec, idempotencyKey?, estimateId? }`) or the bare spec. ' +
          'With an `Idempotency-Key` (header or body) a retry answers 200 with the original job (`duplicate: true`); another spec under a used key is 409. ' +
          'With an `estimateId` (from `POST /v1/estimate`) the job is held to that estimate: it becomes the job\'s recorded quote, whose error is known when the job starts and ends; ' +
          'an id not given to your team, given for another request, or used by another job is 400 on `estimateId`. ' +
          'An invalid spec is 400 naming each bad field and its fix, and records nothing.',
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description: 'Makes the submit safe to retry: the same key (per team) returns the job first created with it. 1–128 visible ASCII characters.',
            schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,128}$' },
          },
          deadlinePolicyParam,
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { oneOf: [ref('SubmitJob'), ref('JobSpec')] } } },
        },
        responses: {
          '201': { description: 'The job was created.', headers: { Location: { description: 'The job\'s URL.', schema: { type: 'string' } } }, content: json('SubmitJobReply') },
          '200': { description: 'The Idempotency-Key was used before with the same spec: the original job (`duplicate: true`).', content: json('SubmitJobReply') },
          '400': errorResponse('BadRequest'),
          ...AUTH_ERRORS,
          '402': errorResponse('BudgetExceeded'),
          '409': errorResponse('Conflict'),
          '413': errorResponse('TooLarge'),
        },
      },
      get: {
        operationId: 'listJobs',
        summary: 'List the team\'s jobs, newest first (role `compliance`: any team\'s, or every team\'s)',
        parameters: [
          {
            name: 'state',
            in: 'query',
            required: false,
            description: 'Only jobs in these states; repeat the parameter or separate with commas, e.g. `state=running,placed`.',
            schema: { type: 'array', items: { type: 'string', enum: [...JOB_STATES] } },
            style: 'form',
            explode: true,
          },
          { name: 'limit', in: 'query', required: false, description: 'Most jobs per page, 1–500. Default 50.', schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 } },
          { name: 'cursor', in: 'query', required: false, description: '`nextCursor` of the previous page.', schema: { type: 'string', minLength: 1, maxLength: 512 } },
          { name: 'gpuModel', in: 'query', required: false, description: 'Only jobs that requested this GPU model or ran on it.', schema: jsonSchema(GpuModel, 'input') },
          { name: 'nodeId', in: 'query', required: false, description: 'Only jobs with an attempt on this node.', schema: jsonSchema(NodeId, 'input') },
          { name: 'outcome', in: 'query', required: false, description: 'Only jobs whose last attempt ended so.', schema: { type: 'string', enum: [...JOB_OUTCOMES] } },
          { name: 'submittedFrom', in: 'query', required: false, description: 'Only jobs submitted at or after this UTC instant, e.g. `2025-06-01T00:00:00Z`.', schema: { type: 'string', format: 'date-time' } },
          { name: 'submittedTo', in: 'query', required: false, description: 'Only jobs submitted before this UTC instant.', schema: { type: 'string', format: 'date-time' } },
          { name: 'team', in: 'query', required: false, description: 'Only this team\'s jobs. A key may name only its own team (another is 403), unless its role is `compliance`.', schema: jsonSchema(TeamId, 'input') },
          { name: 'allTeams', in: 'query', required: false, description: 'Every team\'s jobs, with `countsByTeam` (the group-by team); role `compliance` only (any other is 403).', schema: { type: 'boolean', default: false } },
        ],
        responses: {
          '200': { description: 'One page of jobs, with the count per state of every job the other filters match (`countsByState`) and, with `allTeams`, per team (`countsByTeam`).', content: json('ListJobsReply') },
          '400': errorResponse('BadRequest'),
          ...AUTH_ERRORS,
        },
      },
    },
    '/v1/jobs/{jobId}': {
      get: {
        operationId: 'getJob',
        summary: 'One job: state, spec, attempts, outputs and timeline',
        description:
          'Answered as of the event store\'s head when asked: the view includes every event already recorded, so it never lags an event the caller ' +
          'has received (from the feed, NATS or the bus). Once the job\'s `JobEnded` is recorded, `state` is final and `ended` and `outputs` are set. ' +
          'A 503 (retryable) when the views could not catch up within 5 s.',
        parameters: [jobIdParam],
        responses: { '200': { description: 'The job.', content: json('JobView') }, ...JOB_ERRORS },
      },
    },
    '/v1/jobs/{jobId}/cancel': {
      post: {
        operationId: 'cancelJob',
        summary: 'Cancel a job',
        description: 'A queued job ends at once; a running one is stopped (SIGTERM, grace, SIGKILL) and billed up to its end. Cancelling an ended job changes nothing (`cancelRequested: false`).',
        parameters: [jobIdParam],
        requestBody: { required: false, content: json('CancelRequest') },
        responses: { '200': { description: 'Where the job stands after the request.', content: json('CancelJobReply') }, ...JOB_ERRORS },
      },
    },
    '/v1/jobs/{jobId}/logs': {
      get: {
        operationId: 'jobLogs',
        summary: 'The job\'s log lines',
        description:
          'NDJSON, one `LogLine` per line, in the order the agent published them. With `Accept: text/plain`: `<time> <stream> <line>` per line, times in the API key\'s time zone (UTC by default). ' +
          '`follow=1` keeps the response open and streams new lines until the job is over (its `JobEnded`).',
        parameters: [
          jobIdParam,
          { name: 'follow', in: 'query', required: false, description: 'Stream new lines until the job ends (`1`/`true`).', schema: { type: 'boolean', default: false } },
        ],
        responses: {
          '200': {
            description: 'The lines.',
            content: {
              'application/x-ndjson': { schema: ref('LogLine') },
              'text/plain': { schema: { type: 'string' } },
            },
          },
          ...JOB_ERRORS,
        },
      },
    },
    '/v1/feed': {
      get: {
        operationId: 'teamFeed',
        summary: 'The team feed: its own jobs\' events as Server-Sent Events, from a position, resumable',
        description:
          '`text/event-stream`; each event is `id: <store position>`, `event: <type>`, `data: <FeedEntry JSON>`, in store order. ' +
          'Starts after `Last-Event-ID` (a reconnecting EventSource sends it), else after `after`, else from the start; catches up from the store, then stays open with live entries ' +
          '(a `: keepalive` comment every 15 s). The team is the API key\'s: another team\'s events never appear. ' +
          'With `jobId` (one of the team\'s jobs) only that job\'s entries come, and the stream ends after its `JobEnded`. ' +
          'Over NATS: `gpunet.qry.intake.ReadFeed` pages, `gpunet.feed.<team>.<jobId>` notifications.',
        parameters: [
          { name: 'jobId', in: 'query', required: false, description: 'Only this job (the team\'s own).', schema: jsonSchema(JobId, 'input') },
          { name: 'after', in: 'query', required: false, description: 'Start after this store position (the `id` of the last event you hold). Default 0.', schema: { type: 'string', pattern: '^(?:0|[1-9][0-9]{0,19})$' } },
          { name: 'Last-Event-ID', in: 'header', required: false, description: 'Resume after this position; wins over `after`.', schema: { type: 'string', pattern: '^(?:0|[1-9][0-9]{0,19})$' } },
        ],
        responses: {
          '200': { description: 'The stream of entries.', content: { 'text/event-stream': { schema: ref('FeedEntry') } } },
          ...JOB_ERRORS,
        },
      },
    },
    '/v1/uploads': {
      options: {
        operationId: 'uploadCapabilities',
        summary: 'What the tus server supports (open, no key)',
        security: [],
        responses: {
          '204': {
            description: 'tus 1.0.0 with extensions creation, creation-with-upload, termination.',
            headers: {
              'Tus-Version': { description: '`1.0.0`.', schema: { type: 'string' } },
              'Tus-Extension': { description: 'The extensions supported.', schema: { type: 'string' } },
              'Tus-Max-Size': { description: 'Largest upload, bytes (`GPUNET_UPLOAD_MAX_BYTES`).', schema: { type: 'integer' } },
            },
          },
        },
      },
      post: {
        operationId: 'createUpload',
        summary: 'Create an HTTP upload of one input blob (tus 1.0, resumable)',
        description:
          'Uploads by the tus 1.0 protocol (https://tus.io/protocols/resumable-upload; any tus client works). Hash the file first: the upload names the blob it will be, ' +
          '`Upload-Metadata: sha256 <base64 of the lowercase hex sha256>` and `Upload-Length: <bytes>`. The answer\'s `Location` is `/v1/uploads/<sha256>.<size>` of the caller\'s team ' +
          '(the team is always the API key\'s). Bytes may come with this request (`Content-Type: application/offset+octet-stream`, creation-with-upload) or by `PATCH`. ' +
          'They land in the team\'s content-addressed blob store (the same bucket and object as a NATS upload, `gpunet-blobs-<team>`, `<team>/<sha256>`): ' +
          'the blob becomes visible, and usable as `{ sha256, size }` in a job\'s inputs, only once every byte is stored and they hash to the address. ' +
          'A blob the team already holds answers with `Upload-Offset` = its size: nothing to send.',
        parameters: [
          { name: 'Tus-Resumable', in: 'header', required: true, description: '`1.0.0`.', schema: { type: 'string', const: '1.0.0' } },
          { name: 'Upload-Length', in: 'header', required: true, description: 'Size of the file, bytes.', schema: { type: 'integer', minimum: 0 } },
          { name: 'Upload-Metadata', in: 'header', required: true, description: '`sha256 <base64 of the hex sha256>` (other keys are ignored).', schema: { type: 'string' } },
        ],
        requestBody: { required: false, content: { 'application/offset+octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
        responses: {
          '201': {
            description: 'The upload exists; `Upload-Offset` says how many bytes are stored.',
            headers: {
              Location: { description: '`/v1/uploads/<sha256>.<size>`.', schema: { type: 'string' } },
              'Upload-Offset': { description: 'Bytes stored.', schema: { type: 'integer' } },
            },
          },
          '400': errorResponse('BadRequest'),
          ...AUTH_ERRORS,
          '413': errorResponse('TooLarge'),
        },
      },
    },
    '/v1/uploads/{upload}': {
      head: {
        operationId: 'uploadOffset',
        summary: 'How many bytes of the upload are stored: where to resume',
        description: 'After a dropped connection, ask here and `PATCH` from `Upload-Offset`. It is a whole number of stored chunks (bytes of a chunk cut off are sent again), or `Upload-Length` once the blob is stored. Another team\'s upload of the same blob is never seen: 404.',
        parameters: [uploadParam, tusResumable],
        responses: {
          '200': {
            description: 'Where the upload stands.',
            headers: { 'Upload-Offset': { description: 'Bytes stored.', schema: { type: 'integer' } }, 'Upload-Length': { description: 'The file\'s size.', schema: { type: 'integer' } } },
          },
          ...AUTH_ERRORS,
          '404': errorResponse('NotFound'),
        },
      },
      patch: {
        operationId: 'uploadBytes',
        summary: 'Send bytes of the upload from `Upload-Offset`',
        description:
          'The body is the file\'s bytes from `Upload-Offset` (which must equal the stored offset: 409 otherwise); the answer\'s `Upload-Offset` is what is stored now. ' +
          'When the last byte arrives, the stored bytes are checked against the sha256 and size: 460 (nothing kept) when they differ; otherwise the blob is stored (`Gpunet-Sha256` in the answer).',
        parameters: [uploadParam, tusResumable, { name: 'Upload-Offset', in: 'header', required: true, description: 'Where these bytes start.', schema: { type: 'integer', minimum: 0 } }],
        requestBody: { required: true, content: { 'application/offset+octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
        responses: {
          '400': errorResponse('BadRequest'),
          '204': { description: 'Stored.', headers: { 'Upload-Offset': { description: 'Bytes stored now.', schema: { type: 'integer' } }, 'Gpunet-Sha256': { description: 'Set once the blob is stored: its address.', schema: { type: 'string' } } } },
          ...AUTH_ERRORS,
          '404': errorResponse('NotFound'),
          '409': { description: '`Upload-Offset` is not where the upload stands: `HEAD` it and resume from there.' },
          '413': errorResponse('TooLarge'),
          '460': { description: 'Checksum mismatch: the bytes do not hash to the sha256 the upload was created with; nothing was kept.' },
        },
      },
      delete: {
        operationId: 'abandonUpload',
        summary: 'Give up an unfinished upload: its stored chunks are removed (a stored blob is not)',
        parameters: [uploadParam, tusResumable],
        responses: { '204': { description: 'Removed.' }, ...AUTH_ERRORS, '404': errorResponse('NotFound') },
      },
    },
    '/v1/jobs/{jobId}/events': {
      get: {
        operationId: 'jobEvents',
        summary: 'The job\'s timeline: every event of it from every service',
        parameters: [jobIdParam],
        responses: { '200': { description: 'The events, in store order.', content: json('JobEvents') }, ...JOB_ERRORS },
      },
    },
    '/v1/jobs/{jobId}/outputs': {
      get: {
        operationId: 'jobOutputs',
        summary: 'The job\'s stored output files',
        parameters: [jobIdParam],
        responses: { '200': { description: 'The files (empty until `OutputsStored`).', content: json('JobOutputs') }, ...JOB_ERRORS },
      },
    },
    '/v1/jobs/{jobId}/outputs/{path}': {
      get: {
        operationId: 'downloadOutput',
        summary: 'Download one output file',
        description: 'The file\'s bytes, verified against its sha256 and size before they are sent. `{path}` is the file\'s path as listed and may contain `/`.',
        parameters: [jobIdParam, { name: 'path', in: 'path', required: true, description: 'Path as in the outputs list, e.g. `model/weights.bin`.', schema: { type: 'string' } }],
        responses: {
          '200': {
            description: 'The file.',
            headers: {
              ETag: { description: 'The file\'s sha256, quoted.', schema: { type: 'string' } },
              'Content-Length': { description: 'Its size in bytes.', schema: { type: 'integer' } },
            },
            content: { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } },
          },
          ...JOB_ERRORS,
          '502': errorResponse('BadGateway'),
        },
      },
    },
    '/v1/jobs/{jobId}/queue': {
      get: {
        operationId: 'getQueuePosition',
        summary: 'Where a waiting job stands in the live plan: rank, reason and expected start',
        parameters: [jobIdParam],
        responses: { '200': { description: 'The team\'s view of the queue around the job.', content: json('GetQueueReply') }, ...JOB_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/queue': {
      get: {
        operationId: 'getTeamQueue',
        summary: 'The team\'s waiting jobs in line (reason, expected start) and the nodes with their free GPUs',
        description: 'At most 200 jobs, first in line first; `position` is the place in the whole queue. Another team\'s jobs are never listed.',
        responses: { '200': { description: 'The team\'s view of the queue.', content: json('GetQueueReply') }, ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/estimate': {
      post: {
        operationId: 'estimateJob',
        summary: 'Expected start, end and charge of a spec, without submitting it',
        description:
          'Same body and validation as `POST /v1/jobs`; no job is submitted. Placement answers from the live plan, the ledger prices the whole time limit ' +
          '(an upper bound: billing counts only the time the GPUs are held). An answer with an expected start is recorded (`EstimateGiven`) and names its ' +
          '`estimateId`: submit with it (`SubmitJob.estimateId`) to hold the job to the estimate.',
        requestBody: { required: true, content: { 'application/json': { schema: { oneOf: [ref('SubmitJob'), ref('JobSpec')] } } } },
        responses: { '200': { description: 'The estimate.', content: json('EstimateJobReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/capacity': {
      get: {
        operationId: 'getCapacity',
        summary: 'Free GPUs per GPU model per hour ahead, from the live plan',
        parameters: [{ name: 'hours', in: 'query', required: false, description: 'Hours ahead, 1–168. Default 24.', schema: { type: 'integer', minimum: 1, maximum: 168, default: 24 } }],
        description: 'With `quotas`: the GPU quotas per team and model with their use this month — the key\'s own team, every team for role `billing`.',
        responses: { '200': { description: 'Free GPUs per model and hour.', content: json('CapacityReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/charges': {
      get: {
        operationId: 'getCharges',
        summary: 'The team\'s charges, from the ledger',
        parameters: [
          { name: 'jobId', in: 'query', required: false, description: 'Only this job\'s charges.', schema: { type: 'string' } },
          { name: 'from', in: 'query', required: false, description: 'Only attempts finished at or after this UTC time.', schema: { type: 'string', format: 'date-time' } },
          { name: 'to', in: 'query', required: false, description: 'Only attempts finished before this UTC time.', schema: { type: 'string', format: 'date-time' } },
        ],
        responses: { '200': { description: 'Usage lines and totals.', content: json('GetChargesReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/audit/jobs': {
      get: {
        operationId: 'auditJobs',
        summary: 'Jobs for an audit: outcome, nodes, GPU models, phase durations, outputs and cost per job',
        description:
          'Answered by the ledger\'s audit projection over every service\'s events. A team key lists its own team only (naming another `team` is 403); ' +
          'a key with role `compliance` lists every team. Every query is recorded as an `AuditQueried` event (who asked what, when) before it is answered.',
        parameters: [
          { name: 'team', in: 'query', required: false, description: 'Only this team\'s jobs.', schema: { type: 'string' } },
          { name: 'from', in: 'query', required: false, description: 'Only jobs submitted at or after this UTC time.', schema: { type: 'string', format: 'date-time' } },
          { name: 'to', in: 'query', required: false, description: 'Only jobs submitted before this UTC time.', schema: { type: 'string', format: 'date-time' } },
          { name: 'node', in: 'query', required: false, description: 'Only jobs with an attempt on this node.', schema: { type: 'string' } },
          { name: 'gpuModel', in: 'query', required: false, description: 'Only jobs with an attempt on this GPU model.', schema: { type: 'string' } },
          { name: 'outcome', in: 'query', required: false, description: 'Only jobs that ended this way (`open`: not over).', schema: { type: 'string', enum: [...AUDIT_OUTCOMES] } },
          { name: 'limit', in: 'query', required: false, description: 'Most jobs in this answer, 1–1000. Default 500.', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 500 } },
          { name: 'offset', in: 'query', required: false, description: 'Matching jobs to skip, oldest first: the next page starts at offset + limit. Default 0.', schema: { type: 'integer', minimum: 0, default: 0 } },
        ],
        responses: { '200': { description: 'The jobs, oldest submission first.', content: json('AuditJobsReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/audit/jobs/{jobId}': {
      get: {
        operationId: 'auditJob',
        summary: 'One job\'s audit: what ran, how long, on what, what came back, what it cost, and its timeline across every service',
        description: 'A team key reads its own team\'s jobs (another team\'s is 404); a `compliance` key reads any. Recorded as `AuditQueried` before it is answered.',
        parameters: [jobIdParam],
        responses: { '200': { description: 'The job\'s audit.', content: json('AuditJob') }, ...JOB_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/invoices': {
      get: {
        operationId: 'listInvoices',
        summary: 'The team\'s invoices, one per calendar month (UTC), newest first',
        description: 'Drafts while the month is open or inside its late-event cutoff, then finalized (never changed; corrected by credit notes). Answered by the ledger at the store head.',
        parameters: [
          { name: 'month', in: 'query', required: false, description: 'Only this month, `YYYY-MM`.', schema: { type: 'string', pattern: '^\\d{4}-(0[1-9]|1[0-2])$' } },
          { name: 'status', in: 'query', required: false, description: 'Only drafts or only finalized invoices.', schema: { type: 'string', enum: [...INVOICE_STATUSES] } },
        ],
        responses: { '200': { description: 'The invoices.', content: json('ListInvoicesReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/invoices/{invoiceId}': {
      get: {
        operationId: 'getInvoice',
        summary: 'One invoice: a line per attempt per node, totals, double-entry postings, status, credit notes',
        description: 'Another team\'s invoice is 404. The store position it was derived at is `derivedAtPosition`.',
        parameters: [{ name: 'invoiceId', in: 'path', required: true, description: '`inv-<team>-<YYYY-MM>`.', schema: { type: 'string' } }],
        responses: { '200': { description: 'The invoice.', content: json('InvoiceView') }, ...JOB_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/invoices/{invoiceId}/replay': {
      post: {
        operationId: 'replayInvoice',
        summary: 'Replay an invoice from the event store and diff it line by line; with `prices`, a what-if (roles `billing`, `admin`, `compliance`)',
        description:
          'Re-derives the invoice from the store\'s events as of the position recorded on it (a finalized invoice: the copy its `InvoiceFinalized` event holds; a draft: the ledger\'s current draft) and compares every line: ' +
          'recorded and replayed amounts in micro-units, identical or not, the fields that differ, the contributing event ids. With `prices` the invoice is priced with that list instead (`whatIf: true`): nothing is written. ' +
          'The same as `gpunet replay invoice <id> [--prices FILE]` beside the store. Another team\'s invoice is 404.',
        parameters: [invoiceIdParam],
        requestBody: {
          required: false,
          content: {
            'application/json': {
              schema: ref('ReplayInvoiceRequest'),
              examples: {
                replay: { summary: 'Replay as recorded', value: {} },
                whatIf: { summary: 'What if sim-gpu had cost 9.00 per GPU-hour', value: { prices: { currency: 'EUR', ratesMicrosPerGpuHour: { 'sim-gpu': 9_000_000 } } } },
              },
            },
          },
        },
        responses: { '200': { description: 'The line-by-line comparison.', content: json('ReplayInvoiceReply') }, ...JOB_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/invoices/{invoiceId}/dispute-bundle': {
      get: {
        operationId: 'getDisputeBundle',
        summary: 'Download an invoice\'s dispute bundle, for `gpunet verify --bundle FILE --public-key KEY` offline (roles `billing`, `admin`, `compliance`)',
        description:
          'The file `gpunet dispute-bundle <id>` writes: the invoice, every event it comes from in whole hash-chained streams with their heads, the latest signed chain heads with a Merkle proof per stream, and what a check proves. ' +
          'Sent as an attachment (`Content-Disposition: attachment; filename="<invoiceId>.bundle.json"`). Another team\'s invoice is 404; a draft without lines is 404; a bundle larger than one bus message is 409 (make it with the CLI beside the store).',
        parameters: [invoiceIdParam],
        responses: {
          '200': {
            description: 'The bundle, as a file.',
            headers: { 'Content-Disposition': { description: '`attachment; filename="<invoiceId>.bundle.json"`.', schema: { type: 'string' } } },
            content: json('DisputeBundle'),
          },
          ...JOB_ERRORS,
          '409': { description: 'The bundle is larger than one bus message (`illegal_state`): make it with `gpunet dispute-bundle <id>` beside the store.', content: json('Error') },
          '502': errorResponse('BadGateway'),
        },
      },
    },
    '/v1/prices': {
      get: {
        operationId: 'listPriceLists',
        summary: 'Every price list version and the one in force now',
        responses: { '200': { description: 'The price lists.', content: json('ListPriceListsReply') }, ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
      post: {
        operationId: 'publishPriceList',
        summary: 'Publish a new price list version (role `billing`)',
        description: 'The ledger numbers it after the latest. `effectiveFrom` may not be in the past (a price list never changes the past); default: now.',
        requestBody: { required: true, content: json('PublishPriceList') },
        responses: { '201': { description: 'The recorded version.', content: json('PriceListPublished') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/ledger/rebuild': {
      post: {
        operationId: 'rebuildLedger',
        summary: 'Recompute the ledger\'s projections from zero and compare every invoice byte for byte (roles `billing`, `admin`)',
        responses: { '200': { description: 'What the rebuild found.', content: json('RebuildLedgerReply') }, ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/quotas': {
      post: {
        operationId: 'setQuota',
        summary: 'Set a team\'s GPU quota for one model (role `billing`)',
        description:
          'Records `QuotaSet` (who, when) in `intake-quota-<team>`; it replaces the team\'s previous quota for the model. `gpus`: GPUs of the model the team\'s attempts may hold at once; ' +
          '`gpuHours`: GPU-hours per calendar month (UTC), counted from held time; null or absent: no limit. `borrow`: past `gpus`, use GPUs no other team with quota room waits for. ' +
          'Placement honours it from its next pass; running work is never stopped. Any other role is 403, recorded as `AdminActionRefused`. Same as NATS `gpunet.cmd.SetQuota`.',
        requestBody: { required: true, content: json('SetQuota') },
        responses: { '200': { description: 'The quota as placement shows it, with its use.', content: json('QuotaUsage') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '404': errorResponse('NotFound'), '502': errorResponse('BadGateway') },
      },
      get: {
        operationId: 'listQuotas',
        summary: 'GPU quotas per team and model, with what is in use, borrowed, GPU-hours used this month and jobs held back',
        description: 'A key sees its own team\'s (naming another `team` is 403); role `billing` sees every team\'s. Same as NATS `gpunet.qry.intake.GetQuotas`.',
        parameters: [{ name: 'team', in: 'query', required: false, description: 'Only this team.', schema: jsonSchema(TeamId, 'input') }],
        responses: { '200': { description: 'The quotas.', content: json('QuotasReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/nodes': {
      get: {
        operationId: 'listNodes',
        summary: 'Every node placement knows: state (ready, cordoned, draining, drained, lost, offline), host, GPUs total and held, running attempts, last heartbeat, the cordon or drain in force (role `operator`)',
        responses: { '200': { description: 'The nodes.', content: json('ListNodeStatesReply') }, ...AUTH_ERRORS },
      },
    },
    ...Object.fromEntries(
      (
        [
          ['cordon', 'cordonNode', 'Cordon a node: nothing new is placed on it, what runs there keeps running (role `operator`)', 'Records `NodeCordoned` (the operator named from the key, the reason, when). `reason` is required.'],
          ['drain', 'drainNode', 'Drain a node: nothing new is placed on it; it is recorded drained once its running attempts have released their GPUs (role `operator`)', 'Records `NodeDrainRequested`, then `NodeDrained`. `reason` is required. Follow it with `GET /v1/nodes`.'],
          ['uncordon', 'uncordonNode', 'Take back a cordon or drain: the node takes new work again (role `operator`)', 'Records `NodeUncordoned`.'],
        ] as const
      ).map(([action, operationId, summary, description]) => [
        `/v1/nodes/{nodeId}/${action}`,
        {
          post: {
            operationId,
            summary,
            description: `${description} A node already so records nothing (\`changed: false\`). A node id placement does not know is 400 on \`nodeId\` (see \`GET /v1/nodes\`). Every role but \`operator\` is 403.`,
            parameters: [{ name: 'nodeId', in: 'path', required: true, description: 'As listed by `GET /v1/nodes`.', schema: { type: 'string' } }],
            requestBody: { required: false, content: json('NodeAdminRequest') },
            responses: { '200': { description: 'The node as it now stands.', content: json('NodeAdminReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS },
          },
        },
      ]),
    ),
    '/v1/teams': {
      post: {
        operationId: 'createTeam',
        summary: 'Create a team (role `operator`)',
        description: 'Records `TeamCreated` (who, when). A team id used before is 400 on `team`. A refusal by role is recorded as `AdminActionRefused`.',
        requestBody: { required: true, content: json('CreateTeam') },
        responses: { '201': { description: 'The new team.', content: json('TeamView') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS },
      },
      get: {
        operationId: 'listTeams',
        summary: 'Teams: every team for an `operator`, its own for an `admin`',
        responses: { '200': { description: 'The teams.', content: json('ListTeamsReply') }, ...AUTH_ERRORS },
      },
    },
    '/v1/teams/{team}': {
      get: {
        operationId: 'getTeam',
        summary: 'One team (role `operator`, or `admin` of that team)',
        parameters: [teamParam],
        responses: { '200': { description: 'The team.', content: json('TeamView') }, ...AUTH_ERRORS, '404': errorResponse('NotFound') },
      },
    },
    '/v1/teams/{team}/disable': {
      post: {
        operationId: 'disableTeam',
        summary: 'Disable a team: every key of it is refused from now on, on every intake (role `operator`)',
        parameters: [teamParam],
        requestBody: { required: false, content: json('DisableTeamRequest') },
        responses: { '200': { description: 'The team, disabled.', content: json('TeamView') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS },
      },
    },
    '/v1/keys': {
      post: {
        operationId: 'createApiKey',
        summary: 'Issue an API key; the answer holds the key, this once (role `operator`; `admin`: its own team, roles producer and admin)',
        description:
          'Records `ApiKeyIssued` with the key\'s sha256, never the key. The key (`gpn_` and 43 base64url characters, 32 random bytes) is accepted at once by every intake. ' +
          'An unknown or disabled team, an unknown role or an expiry in the past is 400 naming the field.',
        requestBody: { required: true, content: json('CreateApiKey') },
        responses: { '201': { description: 'The key and its record.', content: json('ApiKeyCreated') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS },
      },
      get: {
        operationId: 'listApiKeys',
        summary: 'API keys: ids, team, role, who issued them and when, revoked or not (never the keys)',
        parameters: [{ name: 'team', in: 'query', required: false, description: 'Only this team\'s keys; an `admin` may name only its own (the default).', schema: jsonSchema(TeamId, 'input') }],
        responses: { '200': { description: 'The keys.', content: json('ListApiKeysReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS },
      },
    },
    '/v1/keys/{keyId}/revoke': {
      post: {
        operationId: 'revokeApiKey',
        summary: 'Revoke an API key: refused within a second on every intake, HTTP and NATS (role `operator`, or `admin` of its team)',
        description: 'Records `ApiKeyRevoked` (who, when, why). Revoking a revoked key changes nothing. An unknown key id is 400 on `keyId`.',
        parameters: [{ name: 'keyId', in: 'path', required: true, description: 'The key\'s id, e.g. `key_3f9c2a7d1e4b8a60`.', schema: { type: 'string' } }],
        requestBody: { required: false, content: json('RevokeApiKeyRequest') },
        responses: { '200': { description: 'The revoked key.', content: json('ApiKeyView') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS },
      },
    },
    '/v1/budgets': {
      get: {
        operationId: 'getOwnBudget',
        summary: 'The caller\'s team\'s budget and this month\'s figures (spent, reserved, remaining, held jobs, thresholds crossed)',
        responses: { '200': { description: 'The budget.', content: json('BudgetView') }, ...AUTH_ERRORS },
      },
    },
    '/v1/budgets/{team}': {
      get: {
        operationId: 'getBudget',
        summary: 'A team\'s budget: its own for every role, any team\'s for role `billing`',
        parameters: [teamParam],
        responses: { '200': { description: 'The budget.', content: json('BudgetView') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS },
      },
      put: {
        operationId: 'setBudget',
        summary: 'Set a team\'s monthly budget (role `billing`)',
        description:
          'Records `BudgetSet` in the team\'s budget stream. `monthlyMicros` per UTC month in the price list\'s currency (default: the list in force); `onExceed`: `refuse` (default) or `hold`; ' +
          '`thresholdsPercent` (default 50, 80, 100) record `BudgetThresholdCrossed` once per month each. From then on every submit reserves its worst case (gpus × time limit × rate) or is refused (402) / held.',
        parameters: [teamParam],
        requestBody: { required: true, content: json('SetBudgetRequest') },
        responses: { '200': { description: 'The budget.', content: json('BudgetView') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
      delete: {
        operationId: 'clearBudget',
        summary: 'Remove a team\'s budget (role `billing`): its jobs are no longer checked',
        parameters: [teamParam],
        responses: { '200': { description: 'The team without budget.', content: json('BudgetView') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS },
      },
    },
    '/v1/audit/queries': {
      get: {
        operationId: 'auditQueries',
        summary: 'The record of audit queries: who asked what, when, and whether it was refused',
        description: 'The AuditQueried events of the store, newest first; every team\'s, so only a key with role compliance may read it (`audit:read-all-teams`).',
        parameters: [{ name: 'limit', in: 'query', required: false, description: 'Most records, 1–500. Default 100.', schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 } }],
        responses: { '200': { description: 'The records.', content: json('AuditQueriesReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS },
      },
    },
    '/v1/audit/chain': {
      get: {
        operationId: 'auditChain',
        summary: 'The chain\'s verification status: up to which store position the hash chain and the signed heads hold, or where and why not (roles `compliance`, `billing`)',
        description:
          'Asks the ledger (NATS `gpunet.qry.ledger.VerifyChain`) to verify the event store now. The first question, and every one with `full=true`, walks the whole store as `gpunet verify` does: ' +
          'every hash link, every stream head and, when the ledger holds the network key, every signed digest. Later questions verify only the events appended since the previous pass, from the ' +
          'stream heads it verified (`pass: tail`); an event rewritten behind an already verified head is found by the next full pass. After a failed pass the next one is full. ' +
          '`verifiedUpTo` says how far it holds; `firstBad` names the first position that does not, its stream and why.',
        parameters: [{ name: 'full', in: 'query', required: false, description: '`true`: walk the whole store again (slow on a large store). Default `false`: the tail since the previous pass.', schema: { type: 'boolean', default: false } }],
        responses: {
          '200': {
            description: 'The status (also when the chain is broken: `verified: false`).',
            content: {
              'application/json': {
                schema: ref('ChainStatus'),
                examples: {
                  verified: {
                    summary: 'Verified up to the head, the tail since the last pass',
                    value: {
                      verified: true, checkedAt: '2026-06-10T12:00:01.210Z', pass: 'tail', verifiedUpTo: '48210', headPosition: '48210', events: 48210, checkedNow: 37, streams: 6120, durationMs: 4,
                      lastFullAt: '2026-06-10T09:14:52.003Z', signatures: 'checked',
                      latestSignedHead: { sequence: 212, position: '48190', signedAt: '2026-06-10T11:59:30.000Z', publicKey: 'UCK6YNHMP5J3KNVW5DBXAN6ZX3VYKQ4Z5WEDJ4BT3LDZQAUGNVHCS2PX' },
                      unsignedAfter: '48190',
                    },
                  },
                  broken: {
                    summary: 'An event row edited in the store file',
                    value: {
                      verified: false, checkedAt: '2026-06-10T12:05:00.480Z', pass: 'full', verifiedUpTo: '1041', headPosition: '48215', events: 1041, checkedNow: 1041, streams: 0, durationMs: 310,
                      lastFullAt: null, signatures: 'checked', latestSignedHead: { sequence: 212, position: '48190', signedAt: '2026-06-10T11:59:30.000Z', publicKey: 'UCK6YNHMP5J3KNVW5DBXAN6ZX3VYKQ4Z5WEDJ4BT3LDZQAUGNVHCS2PX' },
                      firstBad: { position: '1042', streamId: 'ledger-usage-job_01jz8k4m2n', reason: 'hash does not match the event and its predecessor: altered or inserted' },
                    },
                  },
                },
              },
            },
          },
          '400': errorResponse('BadRequest'),
          ...AUTH_ERRORS,
          '502': errorResponse('BadGateway'),
        },
      },
    },
    '/v1/whoami': {
      get: {
        operationId: 'whoAmI',
        summary: 'The caller\'s key: its id, team, role and what the role may do',
        description: 'For clients that show only what the key may do (the web console). Any valid key may ask; nothing of another key is ever shown.',
        responses: { '200': { description: 'The key.', content: json('WhoAmI') }, ...AUTH_ERRORS },
      },
    },
    '/healthz': {
      get: {
        operationId: 'healthz',
        summary: 'Liveness of this intake process',
        security: [],
        responses: { '200': { description: 'Intake serves.', content: json('Healthz') } },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openapi',
        summary: 'This document',
        security: [],
        responses: { '200': { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: { type: 'object' } } } } },
      },
    },
  };
}

function errorResponses(): Json {
  const body = json('Error');
  const retryAfter = { 'Retry-After': { description: `Seconds to wait before retrying (${RETRY_AFTER_SECONDS}).`, schema: { type: 'integer' } } };
  return {
    BadRequest: { description: 'Invalid input (`validation_failed`): `issues` names each bad field with its fix. Nothing was recorded.', content: body },
    Unauthorized: {
      description: 'No API key, or an unknown one (`unauthorized`). Send `Authorization: Bearer <key>`.',
      headers: { 'WWW-Authenticate': { description: '`Bearer realm="gpunet"`.', schema: { type: 'string' } } },
      content: body,
    },
    Forbidden: { description: 'Another team\'s job or keys, or an action the key\'s role may not do (`forbidden`).', content: body },
    NotFound: { description: 'No such job or file (`not_found`).', content: body },
    BudgetExceeded: { description: 'The job\'s worst case would take the team past its hard monthly budget (`budget_exceeded`): the message names the budget, the figures and the fix. Recorded as `BudgetRefused`; the job was not submitted.', content: body },
    Conflict: { description: 'The Idempotency-Key was used with a different spec (`idempotency_conflict`).', content: body },
    TooLarge: { description: 'The body is too large (`payload_too_large`).', content: body },
    Unavailable: { description: 'A dependency is busy or down; retry after `Retry-After` seconds (`retryable: true`).', headers: retryAfter, content: body },
    BadGateway: { description: 'Another service answered with an error, or a stored blob does not match its address.', content: body },
  };
}

/** The whole document. Pure and deterministic: the same contracts give the same document. */
export function openApiDocument(): Json {
  return {
    openapi: '3.1.0',
    info: {
      title: 'gpunet intake',
      version: API_VERSION,
      description:
        'Submit, follow and cancel GPU batch jobs. Authenticate with your team\'s API key: `Authorization: Bearer <key>`. ' +
        'The same commands and queries are on NATS (`gpunet.cmd.SubmitJob`, `gpunet.cmd.CancelJob`, `gpunet.qry.intake.GetJob`, `gpunet.qry.intake.ListJobs`; ' +
        'teams and keys: `gpunet.cmd.CreateTeam`, `DisableTeam`, `CreateApiKey`, `RevokeApiKey`, `gpunet.qry.intake.ListTeams`, `GetTeam`, `ListApiKeys`; quotas: `gpunet.cmd.SetQuota`, `gpunet.qry.intake.GetQuotas`) with the same schemas.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    security: [{ bearerAuth: [] }],
    paths: paths(),
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'A team API key. Its team owns what it submits; its role says what it may do (producer, compliance, billing, admin, operator).' },
      },
      schemas: Object.fromEntries(Object.entries(COMPONENTS).map(([name, { schema, io }]) => [name, jsonSchema(schema, io)])),
      responses: errorResponses(),
    },
  };
}
