/** What a transfer is doing: reading a file to hash it, sending it, or receiving it. */
export type TransferPhase = 'hashing' | 'uploading' | 'downloading';

/**
 * One progress report. Byte counts are per phase and cumulative, so a bar can be drawn from
 * `bytesDone / bytesTotal` and the caller derives rate and ETA from successive reports (e.g.
 * `cli-progress` does). For a folder, counts cover the whole folder; blobs that already exist
 * are left out of the upload total, so the ETA only counts bytes that actually move.
 */
export interface TransferProgress {
  phase: TransferPhase;
  bytesDone: number;
  bytesTotal: number;
  /** For folders: the file being handled, relative to the folder. */
  file?: string;
}

/** Called after every chunk (at most one per chunk, at least one at the end of a phase). */
export type ProgressListener = (progress: TransferProgress) => void;

/** Sums the progress of several files of one phase into one folder-wide report. */
export class PhaseCounter {
  private done = 0;
  constructor(
    private readonly phase: TransferPhase,
    private readonly total: number,
    private readonly listener: ProgressListener | undefined,
  ) {}

  /** A listener for one file: its own counts are turned into folder-wide deltas. */
  forFile(file: string): ProgressListener {
    let seen = 0;
    return (p) => {
      this.add(p.bytesDone - seen, file);
      seen = p.bytesDone;
    };
  }

  add(bytes: number, file?: string): void {
    this.done += bytes;
    this.listener?.({ phase: this.phase, bytesDone: this.done, bytesTotal: this.total, ...(file === undefined ? {} : { file }) });
  }
}
