import { BlobIntegrityError, BlobNotFoundError, ManifestInvalidError, type BlobStore } from '#blobs';
import type { BlobRef } from '#contracts';

/**
 * The files of a team's folder manifest; none when the manifest is gone or unusable (it cannot be
 * materialized then, so no file is needed through it). Other failures (the object store is down)
 * are thrown: the caller tries again.
 */
export async function manifestFiles(blobs: BlobStore, team: string, sha256: string, size: number | undefined): Promise<BlobRef[]> {
  try {
    const manifest = await blobs.readFolderManifest(team, sha256, size === undefined ? {} : { size });
    return manifest.entries.map((e) => ({ sha256: e.sha256, size: e.size }));
  } catch (err) {
    if (err instanceof BlobNotFoundError || err instanceof ManifestInvalidError || err instanceof BlobIntegrityError) return [];
    throw err;
  }
}
