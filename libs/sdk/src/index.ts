/**
 * gpunet SDK: a typed client for producers. `GpunetClient` submits jobs (uploading the local
 * inputs a job.yaml names), follows them, and reads their logs, timeline, outputs and charges.
 */
export { AuditJobAnswer, GpunetClient, isFinalState, type DownloadedOutput, type GpunetClientOptions, type UploadVia, type WaitOptions } from './client.js';
export { followFeed, type FeedOptions } from './feed.js';
export { HttpUploader, type HttpFolderUploadResult, type HttpUploaderOptions, type HttpUploadResult } from './http-upload.js';
export type { DownloadProgress } from './download.js';
export {
  ClientConfigError,
  GpunetApiError,
  GpunetProtocolError,
  GpunetUnreachableError,
  JobFileError,
  OutputIntegrityError,
  WaitTimeoutError,
} from './errors.js';
export { HttpTransport, type HttpTransportOptions, type RequestSpec } from './http.js';
export type { InputProgress, InputUpload, InputUploader, UploadedInputs, UploadInputsOptions } from './inputs.js';
export { checkJobFile, parseJobFileText, resolveInputs, unresolvedInputs, type JobFileSpec, type PendingInput, type ResolvedInput } from './job-file.js';
export { NdjsonSyntaxError, parseNdjson, splitLines } from './ndjson.js';
export { JobEventRecord, JobEvents, JobOutputs } from '#contracts';
