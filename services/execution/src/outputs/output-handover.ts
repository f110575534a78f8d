import type { BlobStore } from '#blobs';
import { Commands, outputsReportSubject, outputsSigningBytes, type NodeOutputsReport, type OutputFile, type StoreOutputs, type StoreOutputsReply } from '#contracts';
import { signBytes, type Identity } from '#identity';
import { isRetryable } from '#errors';
import { requestQuery } from '#messaging';
import type { NatsConnection } from '@nats-io/transport-node';
import { stat } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { mapLimit } from '../common/map-limit.js';
import type { LogFiles } from '../logs/log-streamer.js';
import { collectOutputs, type CollectedOutputs } from '../run/index.js';

/** The files of a finished run worth keeping, and notices for the job's log about the rest. */
export interface OutputSelection {
  readonly collected: CollectedOutputs;
  readonly truncated: boolean;
  /** One line per refused file (a symlink leaving the directory, the size cap), for the job's log. */
  readonly notices: readonly string[];
}

/**
 * Selects the files matching the job's output globs (the run engine's `collectOutputs`:
 * symlinks leaving the directory and files beyond `maxBytes` are refused with a reason).
 */
export async function selectOutputs(outputsDir: string, globs: readonly string[], maxBytes?: number): Promise<OutputSelection> {
  const collected = await collectOutputs(outputsDir, globs, maxBytes === undefined ? {} : { maxTotalBytes: maxBytes });
  const notices = collected.rejected.map((r) => `[gpunet] output ${r.path} not kept: ${r.message}`);
  const truncated = collected.rejected.some((r) => r.reason === 'size_cap');
  if (truncated) notices.push(`[gpunet] outputs reached outputs.maxBytes (${maxBytes} bytes); later files were not kept`);
  return { collected, truncated, notices };
}

/** Whose outputs these are. */
export interface HandoverTarget {
  readonly team: string;
  readonly jobId: string;
  readonly attemptId: string;
  readonly nodeId: string;
  readonly correlationId: string;
}

/** Options of {@link storeOutputs}. */
export interface StoreOutputsOptions {
  /** One StoreOutputs request's timeout. Default 10 000 ms. */
  readonly requestTimeoutMs?: number;
  /** How long retryable failures (no storage service yet, timeouts) are retried. Default 120 000 ms. */
  readonly giveUpAfterMs?: number;
  /** First retry delay, doubling up to 5 s. Default 250 ms. */
  readonly retryDelayMs?: number;
  /** Files uploaded at once. Default 4. */
  readonly concurrency?: number;
  /** Aborting stops retrying (the agent is stopping). */
  readonly signal?: AbortSignal;
}

/**
 * Uploads the selected files and the non-empty stdout/stderr logs to the team's blobs (skipping
 * what the team already holds; once more when storage finds one gone, see below) and reports them, signed with the node key, to the recorder
 * (`gpunet.report.<nodeId>.outputs`), which checks them against the attempt and has storage
 * record them (idempotent per attempt); retryable failures (no recorder yet, the attempt's end
 * not recorded yet, timeouts) are retried for up to `giveUpAfterMs`.
 *
 * @throws the last error when storage refused the outputs or did not answer in time.
 */
export async function storeOutputs(
  blobs: BlobStore,
  nc: NatsConnection,
  identity: Identity,
  target: HandoverTarget,
  selection: OutputSelection,
  logFiles: LogFiles,
  log: Logger,
  options: StoreOutputsOptions = {},
): Promise<StoreOutputsReply> {
  // Uploads skip what the team already holds; `sent` says whether any blob had to be sent.
  const upload = async (): Promise<{ files: OutputFile[]; logs: StoreOutputs['logs']; sent: boolean }> => {
    let sent = false;
    const files: OutputFile[] = new Array(selection.collected.files.length);
    await mapLimit(selection.collected.files, options.concurrency ?? 4, async (file, i) => {
      options.signal?.throwIfAborted();
      // The recorded address is what was sent (hashed again while uploading), not the earlier scan.
      const up = await blobs.uploadFile(target.team, file.sourcePath);
      if (!up.skipped) sent = true;
      files[i] = { path: file.path, sha256: up.sha256, size: up.size };
    });
    const logs: StoreOutputs['logs'] = [];
    for (const stream of ['stdout', 'stderr'] as const) {
      // An empty stream is left out (absent means empty): no object store round trip per quiet job.
      const st = await stat(logFiles[stream]).catch(() => undefined);
      if (!st?.isFile() || st.size === 0) continue;
      const up = await blobs.uploadFile(target.team, logFiles[stream]);
      if (!up.skipped) sent = true;
      logs.push({ stream, sha256: up.sha256, size: up.size });
    }
    return { files, logs, sent };
  };

  const first = await upload();
  try {
    return await report(first);
  } catch (err) {
    if (isRetryable(err) || options.signal?.aborted) throw err;
    // An output with the same bytes as an input of the team is that input's blob: when the input's
    // job is released between our upload (skipped, the team held it) and storage's check, storage
    // removes it and refuses the outputs as missing. The files are still here: upload again, and
    // ask once more only when something had to be sent (otherwise the refusal stands).
    if (!(await upload()).sent) throw err;
    log.warn({ err: (err as Error).message }, 'outputs refused as missing; uploaded again and asking once more');
    return report(first);
  }

  async function report(up: { files: OutputFile[]; logs: StoreOutputs['logs'] }): Promise<StoreOutputsReply> {
    // Refused files go into the job's record with their reason, not only into its log.
    const rejected = selection.collected.rejected.slice(0, 1000).map((r) => ({ path: r.path, reason: r.reason, message: r.message }));
    const body: StoreOutputs = { ...pick(target), files: up.files, truncated: selection.truncated, rejected, logs: up.logs };
    const unsigned: Omit<NodeOutputsReport, 'signature'> = { nodeId: target.nodeId, outputs: Commands.StoreOutputs.schema.parse(body) };
    const signed: NodeOutputsReport = { ...unsigned, signature: signBytes(identity, outputsSigningBytes(unsigned)) };
    const contract = { response: Commands.StoreOutputs.replySchema };
    const giveUpAt = performance.now() + (options.giveUpAfterMs ?? 120_000);
    let delay = options.retryDelayMs ?? 250;
    for (let attempt = 1; ; attempt++) {
      try {
        return await requestQuery<StoreOutputsReply>(nc, outputsReportSubject(target.nodeId), signed, contract, {
          timeoutMs: options.requestTimeoutMs ?? 10_000,
          correlationId: target.correlationId,
          jobId: target.jobId,
        });
      } catch (err) {
        if (!isRetryable(err) || performance.now() + delay > giveUpAt || options.signal?.aborted) throw err;
        log.warn({ err: (err as Error).message, attempt, retryInMs: delay }, 'StoreOutputs failed; retrying');
        await sleep(delay);
        delay = Math.min(delay * 2, 5_000);
      }
    }
  }
}

function pick(t: HandoverTarget): Pick<StoreOutputs, 'jobId' | 'team' | 'attemptId' | 'nodeId'> {
  return { jobId: t.jobId, team: t.team, attemptId: t.attemptId, nodeId: t.nodeId };
}
