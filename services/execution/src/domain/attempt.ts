/**
 * One run attempt on this node, as a pure state machine:
 *
 *   placed → staging → held → running → finished → outputs → released
 *
 * with a way out at every step (a cancel, the agent stopping, the agent having lost the
 * process). `decide(state, command)` says which facts a command leads to, `evolve(state, fact)`
 * applies one. Facts are either events recorded in the attempt's stream
 * (`execution-<nodeId>-attempt-<attemptId>`: ComputeHeld, JobStarted, JobFinished,
 * ComputeReleased) or local facts that only steer this agent process (staging began, a stop was
 * asked for, the outputs step is over). Folding the recorded events alone gives the state
 * a restarted agent resumes from.
 *
 * Billing reads ComputeHeld.heldAt → JobFinished.finishedAt, so the rules below decide what a
 * team pays: an attempt that never held compute has no ComputeHeld (billed 0), and every
 * attempt ends with exactly one JobFinished and one ComputeReleased.
 */
import { gangPartOf, type ComputeHeld, type ComputeReleased, type JobFinished, type JobOutcome, type JobPlaced, type JobStarted } from '#contracts';
import type { JobCheckpointed, JobLimit } from '#contracts';
import { IllegalStateError } from '#errors';

export const ATTEMPT_PHASES = ['placed', 'staging', 'held', 'running', 'finished', 'outputs', 'released'] as const;
export type AttemptPhase = (typeof ATTEMPT_PHASES)[number];

/**
 * Where an attempt runs on this node: its ids, this node and its GPUs, as placement chose them.
 * For a multi-node gang, this node's part: its rank and every node of the gang in rank order.
 */
export type Placement = Pick<JobPlaced, 'jobId' | 'attemptId' | 'nodeId' | 'gpuIndices' | 'gpuModel'> & {
  /** 0 for a one-node attempt and for a gang's main part (which alone hands over outputs). */
  readonly rank?: number;
  /** Every node of a multi-node gang, rank order; absent for a one-node attempt. */
  readonly gangNodes?: readonly string[];
  /** The job's attempt number (JobPlaced.attempt); absent in states kept before it was. */
  readonly attempt?: number;
};

/** This node's part of a placement, or undefined when the node takes no part in it. */
export function placementOn(placed: JobPlaced, nodeId: string): Placement | undefined {
  const part = gangPartOf(placed, nodeId);
  if (!part) return undefined;
  return {
    jobId: placed.jobId,
    attemptId: placed.attemptId,
    nodeId,
    gpuIndices: [...part.gpuIndices],
    gpuModel: placed.gpuModel,
    attempt: placed.attempt,
    ...(placed.nodes !== undefined ? { rank: part.rank, gangNodes: placed.nodes.map((n) => n.nodeId) } : {}),
  };
}

/** Events this agent records in the attempt's stream, in the order they can occur. */
export type RecordedAttemptEvent =
  | { type: 'ComputeHeld'; data: ComputeHeld }
  | { type: 'JobStarted'; data: JobStarted }
  | { type: 'JobCheckpointed'; data: JobCheckpointed }
  | { type: 'JobFinished'; data: JobFinished }
  | { type: 'ComputeReleased'; data: ComputeReleased };

/** Types of {@link RecordedAttemptEvent}, e.g. to read them back from the store. */
export const RECORDED_ATTEMPT_EVENT_TYPES = ['ComputeHeld', 'JobStarted', 'JobCheckpointed', 'JobFinished', 'ComputeReleased'] as const;

/** How an attempt ends when the agent stops it before the job is done. */
export type StopOutcome = Extract<JobOutcome, 'cancelled' | 'node_lost'>;

/** Facts only this agent process knows; they are not recorded and a restart forgets them. */
export type LocalAttemptFact =
  | { type: 'StagingBegan' }
  | { type: 'StopRequested'; outcome: StopOutcome; reason: string; peerEnded?: string }
  | { type: 'OutputsSettled'; stored: boolean };

export type AttemptFact = RecordedAttemptEvent | LocalAttemptFact;

/** What a finished attempt recorded. */
export type FinishedFacts = Pick<JobFinished, 'outcome' | 'exitCode' | 'signal' | 'finishedAt' | 'message' | 'limit'>;

export interface AttemptState {
  readonly placement: Placement;
  readonly phase: AttemptPhase;
  /** Agent clock, ISO: billing starts here. Absent when compute was never held. */
  readonly heldAt?: string;
  /** Agent clock, ISO: the process started. Absent when it never did (then there are no outputs). */
  readonly startedAt?: string;
  readonly finished?: FinishedFacts;
  /** A stop asked for while the process runs; the run's end is then recorded with this outcome. */
  readonly stop?: { readonly outcome: StopOutcome; readonly reason: string; readonly peerEnded?: string };
  /** Set once the outputs step is over: whether storage recorded them. */
  readonly outputsStored?: boolean;
  /** Sequence of the last checkpoint this attempt saved (JobCheckpointed). */
  readonly lastCheckpoint?: number;
  /** Recorded events so far: the stream's revision is `recorded - 1`. */
  readonly recorded: number;
}

/** What can be asked of an attempt. Times are the agent's clock (ISO), injected by the caller. */
export type AttemptCommand =
  /** Inputs are being downloaded (not billed). */
  | { type: 'BeginStaging' }
  /** Inputs are in place: reserve the GPUs. Billing starts. */
  | { type: 'Hold'; at: string }
  /** The job's process is running: what ran (its digest, for the audit) and the checkpoint it resumed from. */
  | { type: 'Start'; at: string; work?: JobStarted['work']; resumedFromCheckpoint?: number }
  /**
   * The job's checkpoint directory was saved to storage (while it runs, or once it ended and
   * before the end is recorded, so a requeued attempt finds the last one).
   */
  | { type: 'Checkpoint'; sequence: number; sha256: string; size: number; at: string }
  /**
   * The attempt is over: the process ended (from `held` or `running`), or the attempt is refused
   * before compute was held (from `placed` or `staging`, e.g. a GPU conflict or an input that
   * cannot be staged; never billed).
   */
  | { type: 'Finish'; outcome: JobOutcome; exitCode: number | null; signal: string | null; message?: string; at: string; /** The cap the job was stopped at, if any. */ limit?: JobLimit }
  /**
   * Stop an attempt this agent still controls: before the process runs it finishes at once
   * (nothing more to do); while it runs the stop is remembered and the caller stops the process;
   * once finished it changes nothing.
   */
  | { type: 'Stop'; outcome: StopOutcome; reason: string; at: string; /** A gang part stopped because the part on that node ended first. */ peerEnded?: string }
  /**
   * The agent lost the process (it was restarted): an unfinished attempt ends `node_lost` now;
   * a finished one resumes where it stopped.
   */
  | { type: 'Abandon'; reason: string; at: string }
  /**
   * The outputs step is over: uploaded and recorded by storage (`stored`), or given up (the run
   * directory is gone, storage refused them or did not answer in time; the caller logs why).
   * The GPUs are not kept from other jobs for want of a storage service.
   */
  | { type: 'SettleOutputs'; stored: boolean }
  /** Free the GPUs. */
  | { type: 'Release'; at: string };

/** The state of an attempt that was just placed here. */
export function placedAttempt(placement: Placement): AttemptState {
  return { placement: { ...placement, gpuIndices: [...placement.gpuIndices] }, phase: 'placed', recorded: 0 };
}

/** Expected revision of the attempt's stream for the next append. */
export function expectedRevision(state: AttemptState): 'no_stream' | bigint {
  return state.recorded === 0 ? 'no_stream' : BigInt(state.recorded - 1);
}

/** Whether the process ran and ended in a way whose files are worth keeping. A gang's outputs come from rank 0 only. */
export function needsOutputs(state: AttemptState): boolean {
  return state.startedAt !== undefined && state.finished !== undefined && state.finished.outcome !== 'node_lost' && (state.placement.rank ?? 0) === 0;
}

/** Whether the attempt is over as far as billing goes (JobFinished recorded). */
export function isFinished(state: AttemptState): boolean {
  return state.finished !== undefined;
}

function illegal(state: AttemptState, command: AttemptCommand['type'], allowed: readonly AttemptPhase[]): never {
  throw new IllegalStateError(
    `attempt ${state.placement.attemptId} cannot ${command} while ${state.phase} (only while ${allowed.join(' or ')})`,
  );
}

/** Longest `JobFinished.message` the contract takes (HumanText). */
export const MAX_FINISH_MESSAGE_CHARS = 2000;

/** A message cut to what the contract takes, so a long error text never makes the end unrecordable. */
export function clipMessage(message: string): string {
  return message.length <= MAX_FINISH_MESSAGE_CHARS ? message : `${message.slice(0, MAX_FINISH_MESSAGE_CHARS - 1)}…`;
}

function finishedEvent(state: AttemptState, f: Omit<FinishedFacts, 'message' | 'limit'> & { message?: string; peerEnded?: string | undefined; limit?: JobLimit | undefined }): RecordedAttemptEvent {
  const { jobId, attemptId, nodeId } = state.placement;
  return {
    type: 'JobFinished',
    data: {
      jobId,
      attemptId,
      nodeId,
      outcome: f.outcome,
      exitCode: f.exitCode,
      signal: f.signal,
      ...(f.message !== undefined && { message: clipMessage(f.message) }),
      finishedAt: f.finishedAt,
      ...(f.limit !== undefined && { limit: f.limit }),
      ...(f.peerEnded !== undefined && { peerEnded: f.peerEnded }),
    },
  };
}

/**
 * The facts a command leads to in the given state. Pure.
 *
 * @throws IllegalStateError when the command makes no sense in this phase (a bug in the caller,
 *   or a race it must resolve by re-reading the state).
 */
export function decide(state: AttemptState, command: AttemptCommand): AttemptFact[] {
  const { jobId, attemptId, nodeId, gpuIndices, gpuModel } = state.placement;
  switch (command.type) {
    case 'BeginStaging':
      if (state.phase !== 'placed') illegal(state, command.type, ['placed']);
      return [{ type: 'StagingBegan' }];

    case 'Hold':
      if (state.phase !== 'staging') illegal(state, command.type, ['staging']);
      return [{ type: 'ComputeHeld', data: { jobId, attemptId, nodeId, gpuIndices: [...gpuIndices], gpuModel, gpus: gpuIndices.length, heldAt: command.at } }];

    case 'Start':
      if (state.phase !== 'held') illegal(state, command.type, ['held']);
      return [
        {
          type: 'JobStarted',
          data: {
            jobId,
            attemptId,
            nodeId,
            startedAt: command.at,
            ...(command.work !== undefined && { work: command.work }),
            ...(command.resumedFromCheckpoint !== undefined && { resumedFromCheckpoint: command.resumedFromCheckpoint }),
          },
        },
      ];

    case 'Checkpoint':
      if (state.phase !== 'running') illegal(state, command.type, ['running']);
      if (state.lastCheckpoint !== undefined && command.sequence <= state.lastCheckpoint) {
        throw new IllegalStateError(`checkpoint ${command.sequence} of attempt ${attemptId} is not after checkpoint ${state.lastCheckpoint}`);
      }
      return [{ type: 'JobCheckpointed', data: { jobId, attemptId, nodeId, sequence: command.sequence, sha256: command.sha256, size: command.size, checkpointedAt: command.at } }];

    case 'Finish': {
      const before = ['placed', 'staging'] as const;
      if (state.phase === 'held' || state.phase === 'running') {
        // A stop asked for while the process ran: the engine reports the abort as `cancelled`;
        // record why the agent stopped it. A process that ended on its own keeps its outcome.
        const stopped = state.stop !== undefined && command.outcome === 'cancelled';
        const outcome = stopped ? state.stop!.outcome : command.outcome;
        const message = command.message ?? (outcome === state.stop?.outcome ? state.stop.reason : undefined);
        return [finishedEvent(state, { outcome, exitCode: command.exitCode, signal: command.signal, message, finishedAt: command.at, peerEnded: stopped ? state.stop!.peerEnded : undefined, limit: stopped ? undefined : command.limit })];
      }
      if ((before as readonly AttemptPhase[]).includes(state.phase)) {
        // Refused before compute was held: nothing ran, so no exit status.
        return [finishedEvent(state, { outcome: command.outcome, exitCode: null, signal: null, message: command.message, finishedAt: command.at })];
      }
      return illegal(state, command.type, [...before, 'held', 'running']);
    }

    case 'Stop':
      switch (state.phase) {
        case 'placed':
        case 'staging':
        case 'held':
          return [finishedEvent(state, { outcome: command.outcome, exitCode: null, signal: null, message: command.reason, finishedAt: command.at, peerEnded: command.peerEnded })];
        case 'running':
          // The first stop wins: a cancel followed by the agent stopping stays a cancel.
          return state.stop === undefined
            ? [{ type: 'StopRequested', outcome: command.outcome, reason: command.reason, ...(command.peerEnded !== undefined && { peerEnded: command.peerEnded }) }]
            : [];
        default:
          return [];
      }

    case 'Abandon':
      if (state.finished !== undefined || state.phase === 'released') return [];
      return [finishedEvent(state, { outcome: 'node_lost', exitCode: null, signal: null, message: command.reason, finishedAt: command.at })];

    case 'SettleOutputs':
      if (state.phase !== 'finished' || !needsOutputs(state)) {
        throw new IllegalStateError(`attempt ${attemptId} has no outputs to settle (${state.phase}${state.startedAt ? '' : ', never started'})`);
      }
      return [{ type: 'OutputsSettled', stored: command.stored }];

    case 'Release':
      if (state.phase === 'outputs' || (state.phase === 'finished' && !needsOutputs(state))) {
        return [{ type: 'ComputeReleased', data: { jobId, attemptId, nodeId, gpuIndices: [...gpuIndices], releasedAt: command.at } }];
      }
      if (state.phase === 'finished') {
        throw new IllegalStateError(`attempt ${attemptId} cannot be released before its outputs step is over`);
      }
      return illegal(state, command.type, ['finished', 'outputs']);
  }
}

/** Applies one fact. Pure; facts are trusted (they come from `decide` or from the store). */
export function evolve(state: AttemptState, fact: AttemptFact): AttemptState {
  switch (fact.type) {
    case 'StagingBegan':
      return { ...state, phase: 'staging' };
    case 'StopRequested':
      return { ...state, stop: { outcome: fact.outcome, reason: fact.reason, ...(fact.peerEnded !== undefined && { peerEnded: fact.peerEnded }) } };
    case 'OutputsSettled':
      return { ...state, phase: 'outputs', outputsStored: fact.stored };
    case 'ComputeHeld':
      return { ...state, phase: 'held', heldAt: fact.data.heldAt, recorded: state.recorded + 1 };
    case 'JobStarted':
      return { ...state, phase: 'running', startedAt: fact.data.startedAt, recorded: state.recorded + 1 };
    case 'JobCheckpointed':
      return { ...state, lastCheckpoint: fact.data.sequence, recorded: state.recorded + 1 };
    case 'JobFinished': {
      const { outcome, exitCode, signal, finishedAt, message, limit } = fact.data;
      return {
        ...state,
        phase: 'finished',
        finished: { outcome, exitCode, signal, finishedAt, ...(message !== undefined && { message }), ...(limit !== undefined && { limit }) },
        recorded: state.recorded + 1,
      };
    }
    case 'ComputeReleased':
      return { ...state, phase: 'released', recorded: state.recorded + 1 };
  }
}

/** Whether a fact is recorded in the attempt's stream (as opposed to a local one). */
export function isRecorded(fact: AttemptFact): fact is RecordedAttemptEvent {
  return (RECORDED_ATTEMPT_EVENT_TYPES as readonly string[]).includes(fact.type);
}

/** Folds an attempt's recorded events (in stream order) onto its placed state. */
export function foldAttempt(placement: Placement, events: readonly RecordedAttemptEvent[]): AttemptState {
  return events.reduce(evolve, placedAttempt(placement));
}

/**
 * What a freshly started agent does with an attempt it finds in the store:
 * - `abandon`: compute was placed or held but the attempt never finished here; the process (if
 *   any) died with the previous agent, so it ends `node_lost` (not billed) and is released;
 * - `outputs`: it finished after running, and its outputs step did not end (storage records
 *   outputs idempotently per attempt, so handing them over again is harmless);
 * - `release`: it finished and has nothing (more) to hand over;
 * - `none`: released already.
 */
export type RecoveryStep = 'abandon' | 'outputs' | 'release' | 'none';

export function recoveryStep(state: AttemptState): RecoveryStep {
  if (state.phase === 'released') return 'none';
  if (state.finished === undefined) return 'abandon';
  if (state.phase === 'finished' && needsOutputs(state)) return 'outputs';
  return 'release';
}
