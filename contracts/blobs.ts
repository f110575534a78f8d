/**
 * Blobs on NATS: the layout of a team's bucket in JetStream's Object Store, for producers that
 * upload inputs or download outputs over NATS without our libraries.
 *
 * - bucket `gpunet-blobs-<team>` (stream `OBJ_gpunet-blobs-<team>`), one per team: NATS
 *   permissions let a team's identity reach its own bucket only;
 * - object name `<team>/<sha256>` (content-addressed, lower-case hex); a folder input is the
 *   object of its `FolderManifest`;
 * - chunks on `$O.gpunet-blobs-<team>.C.<nuid>`, raw bytes in order (gpunet's writer sets
 *   `Gpunet-Chunk` = index on each, so an upload resumes after the last whole chunk, once that
 *   chunk's bytes are the file's; chunks earlier versions wrote also carry `Gpunet-Chunk-Sha256`);
 * - the object's record ({@link BlobObjectRecord}) on `$O.gpunet-blobs-<team>.M.<base64url(name)>`
 *   (padded base64url of the name, `Nats-Rollup: sub`), written last: an object is there once its
 *   record is, and its bytes hash to `digest`.
 * Downloads need no consumer (a team may not make one): the record by a direct get with
 * `last_by_subj`, then the chunks by direct gets `{ seq, next_by_subj: <chunk subject> }` in order
 * (nats-server 2.9+, `allow_direct` as Object Store buckets have), checked against the sha256.
 * Uploads are JetStream publishes of the chunks, then of the record.
 */
import { z } from 'zod';

/** Prefix of the team buckets: `gpunet-blobs-<team>`. */
export const BLOB_BUCKET_PREFIX = 'gpunet-blobs';

/** Prefix of the execution nodes' own buckets: `gpunet-node-<nodeId>` (decision 0025). */
export const NODE_BUCKET_PREFIX = 'gpunet-node';

/** Header of a chunk gpunet's writer stores: its 0-based index in the object. */
export const CHUNK_INDEX_HEADER = 'Gpunet-Chunk';
/** Header of a chunk earlier versions of gpunet's writer stored: the hex sha256 of the chunk's bytes (no longer written or read: a resumed upload compares bytes). */
export const CHUNK_SHA256_HEADER = 'Gpunet-Chunk-Sha256';

export const BlobObjectRecord = z
  .looseObject({
    name: z.string().min(1).describe('`<team>/<sha256>`.'),
    bucket: z.string().min(1).describe('`gpunet-blobs-<team>`.'),
    nuid: z.string().min(1).describe('Chunks are on `$O.<bucket>.C.<nuid>`.'),
    size: z.int().min(0).describe('Bytes (0 once deleted).'),
    chunks: z.int().min(0).describe('Chunks (0 once deleted).'),
    digest: z.string().describe('`SHA-256=<padded base64url of the sha256>` (empty once deleted).'),
    mtime: z.string().describe('When the record was written (ISO-8601).'),
    deleted: z.boolean().optional().describe('True once the object is removed (its chunks are purged).'),
    description: z.string().optional(),
    options: z.looseObject({ max_chunk_size: z.int().min(1).optional() }).optional(),
  })
  .describe('The Object Store record of one blob, on `$O.<bucket>.M.<base64url(name)>`.');
export type BlobObjectRecord = z.output<typeof BlobObjectRecord>;
