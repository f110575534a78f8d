/**
 * The OpenAPI 3.1 document of intake's HTTP API, assembled from the contracts' zod schemas
 * (`z.toJSONSchema`, JSON Schema 2020-12, the 3.1 dialect). Request bodies are rendered as
 * input (fields with defaults optional), answers as output. Served at `GET /openapi.json`.
 */
import {
  AUDIT_OUTCOMES,
  AuditJobReport,
  AuditJobsReply,
  CancelJob,
  CancelJobReply,
  CapacityReply,
  EstimateJobReply,
  GetQueueReply,
  HEADERS,
  GetChargesReply,
  JOB_STATES,
  JobId,
  JobSpecInput,
  JobView,
  ListJobsReply,
  LogLine,
  SubmitJob,
  SubmitJobReply,
  TeamId,
} from '#contracts';
import { z } from 'zod';
import { JobEvents, JobOutputs } from '#contracts';
import { INVOICE_STATUSES, InvoiceView, ListInvoicesReply, ListPriceListsReply, PriceListPublished, PublishPriceList, RebuildLedgerReply } from '#contracts';
import { ApiKeyCreated, ApiKeyView, CreateApiKey, CreateTeam, DisableTeam, ListApiKeysReply, ListTeamsReply, RevokeApiKey, TeamView } from '#contracts';
import { Healthz } from '../jobs/job-records.js';
import { ErrorBody, RETRY_AFTER_SECONDS } from './http-errors.js';

type Json = { [key: string]: unknown };

/** Version of the HTTP API document; bump the minor on additions. */
export const API_VERSION = '1.1.0';

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
  PublishPriceList: { schema: PublishPriceList, io: 'input' },
  PriceListPublished: { schema: PriceListPublished, io: 'output' },
  ListPriceListsReply: { schema: ListPriceListsReply, io: 'output' },
  RebuildLedgerReply: { schema: RebuildLedgerReply, io: 'output' },
  CreateTeam: { schema: CreateTeam, io: 'input' },
  DisableTeamRequest: { schema: DisableTeam.omit({ team: true }), io: 'input' },
  TeamView: { schema: TeamView, io: 'output' },
  ListTeamsReply: { schema: ListTeamsReply, io: 'output' },
  CreateApiKey: { schema: CreateApiKey, io: 'input' },
  RevokeApiKeyRequest: { schema: RevokeApiKey.omit({ keyId: true }), io: 'input' },
  ApiKeyCreated: { schema: ApiKeyCreated, io: 'output' },
  ApiKeyView: { schema: ApiKeyView, io: 'output' },
  ListApiKeysReply: { schema: ListApiKeysReply, io: 'output' },
  Healthz: { schema: Healthz, io: 'output' },
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
  'POST /v1/estimate',
  'GET /v1/capacity',
  'GET /v1/charges',
  'GET /v1/audit/jobs',
  'GET /v1/audit/jobs/{jobId}',
  'GET /v1/invoices',
  'GET /v1/invoices/{invoiceId}',
  'GET /v1/prices',
  'POST /v1/prices',
  'POST /v1/ledger/rebuild',
  'POST /v1/teams',
  'GET /v1/teams',
  'GET /v1/teams/{team}',
  'POST /v1/teams/{team}/disable',
  'POST /v1/keys',
  'GET /v1/keys',
  'POST /v1/keys/{keyId}/revoke',
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
          'Validates the spec, records `JobSubmitted` and answers 201 with the job id. The body is a `SubmitJob` (`{ spec, idempotencyKey? }`) or the bare spec. ' +
          'With an `Idempotency-Key` (header or body) a retry answers 200 with the original job (`duplicate: true`); another spec under a used key is 409. ' +
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
          '409': errorResponse('Conflict'),
          '413': errorResponse('TooLarge'),
        },
      },
      get: {
        operationId: 'listJobs',
        summary: 'List the team\'s jobs, newest first',
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
        ],
        responses: { '200': { description: 'One page of jobs.', content: json('ListJobsReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS },
      },
    },
    '/v1/jobs/{jobId}': {
      get: {
        operationId: 'getJob',
        summary: 'One job: state, spec, attempts, outputs and timeline',
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
          '`follow=1` keeps the response open and streams new lines until the job reaches a final state.',
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
    '/v1/estimate': {
      post: {
        operationId: 'estimateJob',
        summary: 'Expected start, end and charge of a spec, without submitting it',
        description:
          'Same body and validation as `POST /v1/jobs`; nothing is recorded. Placement answers from the live plan, the ledger prices the whole time limit ' +
          '(an upper bound: billing counts only the time the GPUs are held).',
        requestBody: { required: true, content: { 'application/json': { schema: { oneOf: [ref('SubmitJob'), ref('JobSpec')] } } } },
        responses: { '200': { description: 'The estimate.', content: json('EstimateJobReply') }, '400': errorResponse('BadRequest'), ...AUTH_ERRORS, '502': errorResponse('BadGateway') },
      },
    },
    '/v1/capacity': {
      get: {
        operationId: 'getCapacity',
        summary: 'Free GPUs per GPU model per hour ahead, from the live plan',
        parameters: [{ name: 'hours', in: 'query', required: false, description: 'Hours ahead, 1–168. Default 24.', schema: { type: 'integer', minimum: 1, maximum: 168, default: 24 } }],
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
        'teams and keys: `gpunet.cmd.CreateTeam`, `DisableTeam`, `CreateApiKey`, `RevokeApiKey`, `gpunet.qry.intake.ListTeams`, `GetTeam`, `ListApiKeys`) with the same schemas.',
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
