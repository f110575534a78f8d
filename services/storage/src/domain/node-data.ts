/**
 * What a node may ask storage to move between a team's bucket and its own (decision 0025). Pure:
 * the caller reads the facts from the event store (placement's JobPlaced, intake's JobSubmitted,
 * the node's recorded ComputeReleased, the job's recorded checkpoints) and the folder manifests
 * from the team's bucket.
 */
import type { InputRef } from '#contracts';

/** Why a node's request was refused. */
export type NodeDataRefusal = 'unknown_job' | 'not_placed' | 'released' | 'not_referenced';

/** The recorded facts about one attempt and its job that a node's request is judged against. */
export interface NodeAttemptFacts {
  /** The job's team (intake's JobSubmitted); undefined when the job was never submitted. */
  readonly team: string | undefined;
  /** The job's inputs as submitted. */
  readonly inputs: readonly Pick<InputRef, 'kind' | 'sha256'>[];
  /** Every node the attempt was placed on (placement's JobPlaced, rank order); empty when never placed. */
  readonly placedOn: readonly string[];
  /** True when the asking node's part of the attempt has released its compute. */
  readonly released: boolean;
  /** Folder manifests of the job's recorded checkpoints (any attempt). */
  readonly checkpoints: readonly string[];
}

export type NodeAttemptVerdict = { ok: true; team: string } | { ok: false; reason: NodeDataRefusal; message: string };

/** May `nodeId` move data of this attempt at all: the job exists, the attempt is placed on it and not released there. */
export function judgeNodeAttempt(nodeId: string, jobId: string, attemptId: string, facts: NodeAttemptFacts): NodeAttemptVerdict {
  if (facts.team === undefined) return { ok: false, reason: 'unknown_job', message: `job ${jobId} was never submitted` };
  if (!facts.placedOn.includes(nodeId)) return { ok: false, reason: 'not_placed', message: `attempt ${attemptId} of job ${jobId} is not placed on node ${nodeId}` };
  if (facts.released) return { ok: false, reason: 'released', message: `node ${nodeId} has released attempt ${attemptId} of job ${jobId}` };
  return { ok: true, team: facts.team };
}

/**
 * The folder manifests a request may need expanded: those of the job (folder inputs, checkpoints)
 * when some asked-for blob is not a top-level address. Reading them costs object store reads, so
 * a request for top-level addresses only reads none.
 */
export function manifestsToExpand(facts: NodeAttemptFacts, asked: readonly string[]): string[] {
  const top = topLevel(facts);
  if (asked.every((sha) => top.has(sha))) return [];
  return [...new Set([...facts.inputs.filter((i) => i.kind === 'folder').map((i) => i.sha256), ...facts.checkpoints])];
}

/**
 * The blobs of `asked` that are not the job's: neither an input (file, folder manifest), nor a
 * file of a folder input, nor a recorded checkpoint's manifest or file. `filesOf` gives each
 * expanded manifest's files (see {@link manifestsToExpand}).
 */
export function unreferenced(facts: NodeAttemptFacts, asked: readonly string[], filesOf: ReadonlyMap<string, readonly string[]>): string[] {
  const allowed = topLevel(facts);
  for (const files of filesOf.values()) for (const sha of files) allowed.add(sha);
  return asked.filter((sha) => !allowed.has(sha));
}

function topLevel(facts: NodeAttemptFacts): Set<string> {
  return new Set([...facts.inputs.map((i) => i.sha256), ...facts.checkpoints]);
}
