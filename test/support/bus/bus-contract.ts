/**
 * Checks messages seen on a gpunet bus against the exported AsyncAPI document
 * (`contracts/generated/asyncapi.json`), headers included: every message on a gpunet subject must
 * match a channel of the document, its payload that channel's message schema and its headers the
 * message's header schema; every reply to a request whose operation has a reply, the reply's
 * schema. NATS's own protocol (`$JS.…` API and acks, replies to anything else) is not ours and is
 * counted, not checked. Validation by ajv (draft-07, formats on), as a producer in another
 * language would validate.
 *
 * Its default export is the e2e project's globalTeardown, which Jest loads without the project's
 * module mapping: so this file imports nothing of ours and uses no `import.meta`.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsImport from 'ajv-formats';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** One message as the tap recorded it (one JSON line). */
export interface BusRecord {
  /** Subject it was published on. */
  subject: string;
  /** Its reply subject, when it was a request. */
  reply?: string;
  /** For a reply: the subject of the request it answers. */
  inReplyTo?: string;
  /** Header name → every value sent. */
  headers?: Record<string, string[]>;
  /** The body as UTF-8 text; absent for a binary channel's body (blob chunks). */
  body?: string;
  /** Bytes of the body. */
  size: number;
}

/** Why one message does not satisfy the document. */
export interface BusProblem {
  subject: string;
  /** The message (or reply) schema checked, or `-` when no channel matched. */
  schema: string;
  /** What failed, one line per ajv error. */
  errors: string[];
}

/** What a check found: counts per message kind, the problems. */
export interface BusReport {
  checked: number;
  /** NATS protocol messages (JetStream API, acks, other replies): not gpunet's contract. */
  protocol: number;
  /** Messages a test sent off-contract on purpose (header `Gpunet-Test-Off-Contract`). */
  offContract: number;
  byMessage: Record<string, number>;
  problems: BusProblem[];
}

/** A test that sends an off-contract message on purpose (a forgery, garbage) marks it with this header; it is counted apart, not checked. */
export const OFF_CONTRACT_HEADER = 'Gpunet-Test-Off-Contract';

interface ChannelMatcher {
  name: string;
  pattern: RegExp;
  messages: { name: string; payload: ValidateFunction | undefined; headers: ValidateFunction | undefined }[];
  /**
   * `binaryWhen`: a reply carrying this header is raw bytes under the reply's `headers` schema, and
   * one with neither body nor headers is a status reply (AsyncAPI `x-binary-when-header`: a read's
   * chunk, answered by nats-server, decision 0036). Other replies are JSON and carry no headers.
   */
  reply: { name: string; payload: ValidateFunction; headers?: ValidateFunction | undefined; binaryWhen?: string } | undefined;
}

type Json = Record<string, unknown>;

/** The id the document's component schemas are registered under, so `#/components/schemas/X` references resolve. */
const DOC_ID = 'https://contracts.gpunet.invalid/asyncapi.json';

/** The contract of a bus: channel matchers compiled from the AsyncAPI document. */
export class BusContract {
  private constructor(private readonly channels: ChannelMatcher[]) {}

  /** From `contracts/generated/` (or another directory holding `asyncapi.json`). */
  static load(generatedDir: string): BusContract {
    return BusContract.fromDocument(JSON.parse(readFileSync(join(generatedDir, 'asyncapi.json'), 'utf8')) as Json);
  }

  static fromDocument(doc: Json): BusContract {
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
    const addFormats = addFormatsImport as unknown as (a: Ajv) => Ajv;
    addFormats(ajv);
    const components = doc.components as { schemas: Record<string, Json>; messages: Record<string, Json> };
    // Every component schema under its own id, so `#/components/schemas/X` references resolve in one place.
    ajv.addSchema({ $id: DOC_ID, components: { schemas: components.schemas } });
    const compile = (r: unknown): ValidateFunction | undefined => {
      if (!r || typeof r !== 'object') return undefined;
      const refPath = (r as { $ref?: string }).$ref;
      if (refPath) return ajv.getSchema(`${DOC_ID}${refPath}`) ?? undefined;
      return ajv.compile(r);
    };
    const message = (r: { $ref: string }): Json => components.messages[r.$ref.split('/').pop()!]!;
    const channels = doc.channels as Record<string, { address: string | null; messages: Record<string, { $ref: string }> }>;
    const operations = Object.values(doc.operations as Record<string, { channel: { $ref: string }; reply?: { channel: { $ref: string } } }>);
    const out: ChannelMatcher[] = [];
    for (const [name, channel] of Object.entries(channels)) {
      if (channel.address === null) continue; // a reply channel: reached through its operation
      const op = operations.find((o) => o.channel.$ref === `#/channels/${name}` && o.reply);
      let reply: ChannelMatcher['reply'];
      if (op?.reply) {
        const replyChannel = channels[op.reply.channel.$ref.split('/').pop()!]!;
        const m = message(Object.values(replyChannel.messages)[0]!);
        const binaryWhen = m['x-binary-when-header'];
        reply = { name: String(m.name), payload: compile(m.payload)!, ...(typeof binaryWhen === 'string' && { binaryWhen, headers: compile(m.headers) }) };
      }
      out.push({
        name,
        pattern: addressPattern(channel.address),
        messages: Object.values(channel.messages).map((r) => {
          const m = message(r);
          const binary = m.contentType === 'application/octet-stream';
          return { name: String(m.name), payload: binary ? undefined : compile(m.payload), headers: compile(m.headers) };
        }),
        reply,
      });
    }
    return new BusContract(out);
  }

  /** The channel a subject belongs to, or undefined. */
  channelOf(subject: string): ChannelMatcher | undefined {
    return this.channels.find((c) => c.pattern.test(subject));
  }

  /** Whether a request on `subject` is answered by a reply the document describes (so the tap pairs its reply). */
  hasReply(subject: string): boolean {
    return this.channelOf(subject)?.reply !== undefined;
  }

  /** Checks one record: `problem` set when it does not satisfy the document; `protocol` for NATS's own messages. */
  check(record: BusRecord): { problem?: BusProblem; kind: 'checked' | 'protocol' | 'off-contract'; message?: string } {
    if (record.headers?.[OFF_CONTRACT_HEADER]) return { kind: 'off-contract' };
    if (record.inReplyTo !== undefined) {
      const channel = this.channelOf(record.inReplyTo);
      if (!channel?.reply) return { kind: 'protocol' };
      const { binaryWhen } = channel.reply;
      const hasHeaders = record.headers !== undefined && Object.keys(record.headers).length > 0;
      let errors: string[];
      if (binaryWhen !== undefined && record.headers?.[binaryWhen]) errors = headerErrors(record, channel.reply.headers);
      else if (binaryWhen !== undefined && !hasHeaders && (record.size ?? 0) === 0) errors = [];
      else {
        errors = [...headerErrors(record, undefined), ...bodyErrors(record, channel.reply.payload)];
        if (hasHeaders) errors.push(`headers: a reply carries none, got ${Object.keys(record.headers!).join(', ')}`);
      }
      return errors.length > 0 ? { kind: 'checked', problem: { subject: `${record.subject} (reply to ${record.inReplyTo})`, schema: channel.reply.name, errors } } : { kind: 'checked', message: channel.reply.name };
    }
    if (isProtocol(record.subject)) return { kind: 'protocol' };
    const channel = this.channelOf(record.subject);
    if (!channel) return { kind: 'checked', problem: { subject: record.subject, schema: '-', errors: ['no channel of the AsyncAPI document has this subject'] } };
    // A channel has one message; when it had several, the first that fits would be the one.
    let best: BusProblem | undefined;
    for (const m of channel.messages) {
      const errors = [...headerErrors(record, m.headers), ...(m.payload ? bodyErrors(record, m.payload) : [])];
      if (errors.length === 0) return { kind: 'checked', message: m.name };
      best ??= { subject: record.subject, schema: m.name, errors };
    }
    return { kind: 'checked', problem: best! };
  }

  /** Checks every record. */
  checkAll(records: Iterable<BusRecord>): BusReport {
    const report: BusReport = { checked: 0, protocol: 0, offContract: 0, byMessage: {}, problems: [] };
    for (const r of records) {
      const result = this.check(r);
      if (result.kind === 'protocol') report.protocol++;
      else if (result.kind === 'off-contract') report.offContract++;
      else {
        report.checked++;
        if (result.problem) report.problems.push(result.problem);
        else report.byMessage[result.message!] = (report.byMessage[result.message!] ?? 0) + 1;
      }
    }
    return report;
  }
}

/** `gpunet.evt.JobFinished.{team}.{jobId}` → a regex where each `{param}` is one token. */
function addressPattern(address: string): RegExp {
  const escaped = address.split(/(\{[^}]+\})/).map((part) => (part.startsWith('{') ? '[^.]+' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${escaped.join('')}$`);
}

/** NATS's own subjects: the JetStream API, acks, inboxes of replies the document does not describe. */
function isProtocol(subject: string): boolean {
  return subject.startsWith('$JS.') || subject.startsWith('$SYS.') || subject.startsWith('$KV.') || subject.startsWith('_INBOX');
}

function headerErrors(record: BusRecord, schema: ValidateFunction | undefined): string[] {
  const out: string[] = [];
  const single: Record<string, string> = {};
  for (const [name, values] of Object.entries(record.headers ?? {})) {
    if (values.length !== 1) out.push(`headers.${name}: sent ${values.length} times`);
    single[name] = values[0] ?? '';
  }
  if (schema && !schema(single)) out.push(...describe('headers', schema.errors));
  return out;
}

function bodyErrors(record: BusRecord, schema: ValidateFunction): string[] {
  let body: unknown;
  try {
    body = JSON.parse(record.body ?? '');
  } catch {
    return [`body: not JSON (${record.size} bytes)`];
  }
  return schema(body) ? [] : describe('body', schema.errors);
}

function describe(where: string, errors: ErrorObject[] | null | undefined): string[] {
  // Of a union (`anyOf`/`oneOf`, e.g. a reply's ok/error), ajv lists every branch's failures; keep them, they say what fits nowhere.
  return (errors ?? []).slice(0, 12).map((e) => `${where}${e.instancePath.replaceAll('/', '.')}: ${e.message ?? e.keyword}${e.params && 'additionalProperty' in e.params ? ` (${String(e.params.additionalProperty)})` : ''}`);
}

/** Formats a report's problems for a failure message: one block per message. */
export function formatProblems(problems: readonly BusProblem[], limit = 50): string {
  const lines = problems.slice(0, limit).map((p) => `- ${p.subject} [${p.schema}]\n    ${p.errors.join('\n    ')}`);
  if (problems.length > limit) lines.push(`… and ${problems.length - limit} more`);
  return lines.join('\n');
}

/** Environment variable naming the run's tap directory (set by the e2e project's globalSetup, `e2e-setup.ts`). */
export const BUS_TAP_DIR_ENV = 'GPUNET_BUS_TAP_DIR';

/**
 * globalTeardown of the e2e project: checks every message and reply the run's networks saw on
 * their bus (`bus-tap.ts`) against `contracts/generated/asyncapi.json`, headers included, and
 * fails the run listing each invalid message (subject, schema, what failed). A run that recorded
 * nothing fails too: a check that saw nothing proves nothing.
 */
export default function checkRecordedBus(_global: unknown, project: { rootDir: string }): void {
  const dir = process.env[BUS_TAP_DIR_ENV];
  if (!dir) throw new Error(`bus contract check: ${BUS_TAP_DIR_ENV} is not set (the e2e project's globalSetup did not run)`);
  const files = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
  const records: BusRecord[] = [];
  for (const f of files) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) if (line) records.push(JSON.parse(line) as BusRecord);
  }
  if (records.length === 0) {
    throw new Error(`bus contract check: no message was recorded in ${dir} (${files.length} tap files): did any test start a network through test/support/network.ts?`);
  }
  const report = BusContract.load(join(project.rootDir, 'contracts', 'generated')).checkAll(records);
  const summary = `bus contract check: ${records.length} messages from ${files.length} networks; ${report.checked} checked against contracts/generated/asyncapi.json, ${report.protocol} NATS protocol, ${report.offContract} off-contract on purpose`;
  if (report.checked === 0) throw new Error(`${summary}: none of gpunet's own`);
  if (report.problems.length > 0) {
    throw new Error(`${summary}; ${report.problems.length} invalid (recordings kept in ${dir}):\n${formatProblems(report.problems)}`);
  }
  process.stderr.write(`\n${summary}; all valid: ${Object.entries(report.byMessage).map(([k, n]) => `${k} ${n}`).join(', ')}\n`);
  if (process.env.GPUNET_E2E_KEEP_DATA !== '1') rmSync(dir, { recursive: true, force: true });
}
