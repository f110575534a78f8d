/**
 * Names of HTTP uploads. The URL names a blob by address and size, `<sha256>.<size>`; the upload
 * itself is always the caller's team's (`<team>.<sha256>.<size>` inside intake), taken from the
 * API key on every request, so a team can name, resume, read or overwrite only its own. Pure.
 */

/** One upload: whose, which blob, how large. */
export interface UploadRef {
  team: string;
  sha256: string;
  size: number;
}

const PATH = /^([0-9a-f]{64})\.(0|[1-9][0-9]{0,15})$/;
const ID = /^([A-Za-z0-9][A-Za-z0-9_-]{0,63})\.([0-9a-f]{64})\.(0|[1-9][0-9]{0,15})$/;

/** The URL's last segment of an upload: `<sha256>.<size>`. */
export function uploadPath(ref: Pick<UploadRef, 'sha256' | 'size'>): string {
  return `${ref.sha256}.${ref.size}`;
}

/** The upload of `team` named by a URL's last segment, or undefined when it names none. */
export function uploadOfPath(team: string, segment: string): UploadRef | undefined {
  const m = PATH.exec(segment);
  if (!m) return undefined;
  const size = Number(m[2]);
  return Number.isSafeInteger(size) ? { team, sha256: m[1]!, size } : undefined;
}

/** Intake's id of an upload: `<team>.<sha256>.<size>`. */
export function uploadId(ref: UploadRef): string {
  return `${ref.team}.${ref.sha256}.${ref.size}`;
}

/** The upload an id names; undefined for anything else. */
export function parseUploadId(id: string): UploadRef | undefined {
  const m = ID.exec(id);
  if (!m) return undefined;
  const size = Number(m[3]);
  return Number.isSafeInteger(size) ? { team: m[1]!, sha256: m[2]!, size } : undefined;
}
