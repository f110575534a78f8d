/**
 * gpunet blobs: content-addressed, team-scoped blobs on the NATS Object Store (one bucket
 * per team, `gpunet-blobs-<team>`, object `<team>/<sha256>`; one per execution node,
 * `gpunet-node-<nodeId>`, the only one a node may touch). Upload files and folders (skipping what the team
 * already holds), check, download with verification, materialize job inputs, remove.
 */
export { BlobStore, parseFolderManifest, writeVerified, type BlobStat, type BlobStoreOptions, type CopyResult, type FolderUploadResult, type InputBlobRef, type MaterializedInput, type UploadResult } from './blob-store.js';
export { BlobIntegrityError, BlobNotFoundError, BlobStoreUnavailableError, FolderInputError, ManifestInvalidError } from './errors.js';
export { listFolder, type FolderFile } from './folder.js';
export { hashBytes, hashFile, type BlobDigest } from './hash.js';
export { BLOB_BUCKET, blobBucket, blobName, digestToHex, isSha256, NODE_BUCKET, nodeBucket } from './names.js';
export type { ProgressListener, TransferPhase, TransferProgress } from './progress.js';
export { mapLimit } from './pool.js';
export { ResumableUpload, UploadTooLargeError, type UploadState } from './resumable-upload.js';
export { chunkStream, type ChunkGetter, type ChunkStream, type StoredChunk } from './chunked-put.js';
