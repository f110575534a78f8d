import { Injectable } from '@nestjs/common';

/**
 * One at a time in this process: a removal (plan from the reference model, delete the blobs,
 * record DataRemoved) and the recording of outputs (check their blobs, append OutputsStored).
 * An output with the same bytes as an input of the team *is* that input's blob; interleaved, a
 * plan made before the output's record could delete the blob the record had just checked. One at
 * a time, either the record comes first and the next plan sees it (the blob is kept), or the
 * removal comes first and the check finds the blob gone (refused as missing; the agent, which
 * still holds the files, uploads them again and asks once more).
 */
@Injectable()
export class RemovalLock {
  private queue: Promise<unknown> = Promise.resolve();

  /** Runs `fn` once everything queued before it has settled. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
