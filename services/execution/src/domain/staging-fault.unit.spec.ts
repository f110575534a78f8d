import { BlobIntegrityError, BlobNotFoundError, BlobStoreUnavailableError, ManifestInvalidError } from '#blobs';
import { TransientError, ValidationError } from '#errors';
import { MAX_STAGING_ATTEMPTS, stagingFault, stagingGivesUp, stagingMessage } from './staging-fault.js';

const errno = (code: string, message = `${code}: something`) => Object.assign(new Error(message), { code });

describe('stagingFault: whose fault a staging error is', () => {
  it.each(['ENOTDIR', 'EEXIST', 'EISDIR', 'ERR_FS_EISDIR', 'ENAMETOOLONG', 'ELOOP'])('%s is the job\'s layout: the same on every node, never retried elsewhere', (code) => {
    expect(stagingFault(errno(code))).toBe('job');
  });

  it('the job\'s inputs themselves (missing, corrupt, a bad manifest, a path leaving the directory) are the job\'s', () => {
    expect(stagingFault(new BlobNotFoundError('t', 'a'.repeat(64)))).toBe('job');
    expect(stagingFault(new BlobIntegrityError('corrupt', { sha256: 'a'.repeat(64) }, { sha256: 'b'.repeat(64) }))).toBe('job');
    expect(stagingFault(new ManifestInvalidError('bad', []))).toBe('job');
    expect(stagingFault(new ValidationError('leaves', []))).toBe('job');
  });

  it.each(['ENOSPC', 'EIO', 'EMFILE', 'ENFILE', 'ENOMEM', 'EACCES', 'EROFS', 'EDQUOT'])('%s is this node\'s: another node may stage it', (code) => {
    expect(stagingFault(errno(code))).toBe('node');
  });

  it('an object store that does not answer, and anything unknown, are the node\'s (retried, then requeued)', () => {
    expect(stagingFault(new BlobStoreUnavailableError('down'))).toBe('node');
    expect(stagingFault(new TransientError('later'))).toBe('node');
    expect(stagingFault(new Error('what was that'))).toBe('node');
  });
});

describe('stagingMessage', () => {
  it('names places relative to GPUNET_INPUT_DIR, not the node\'s own directories', () => {
    const err = errno('ENOTDIR', "ENOTDIR: not a directory, mkdir '/var/lib/gpunet/runs/job_1/a1/inputs/d/x'");
    expect(stagingMessage(err, '/var/lib/gpunet/runs/job_1/a1/inputs')).toBe("inputs could not be staged: ENOTDIR: not a directory, mkdir '$GPUNET_INPUT_DIR/d/x'");
  });
});

describe('stagingGivesUp: what an attempt whose staging kept failing on this node ends as', () => {
  it('node_lost (requeued elsewhere) while the job has had few attempts', () => {
    expect(stagingGivesUp(errno('ENOSPC'), 1)).toBe('node_lost');
    expect(stagingGivesUp(new Error('what was that'), MAX_STAGING_ATTEMPTS - 1)).toBe('node_lost');
  });

  it('failed once a cause no rule names has followed the job to its last attempt: never requeued without end', () => {
    expect(stagingGivesUp(errno('ENOSPC'), MAX_STAGING_ATTEMPTS)).toBe('failed');
    expect(stagingGivesUp(new Error('what was that'), MAX_STAGING_ATTEMPTS + 7)).toBe('failed');
  });

  it('an object store that does not answer is never the job\'s, whatever the attempt', () => {
    expect(stagingGivesUp(new BlobStoreUnavailableError('down'), MAX_STAGING_ATTEMPTS + 7)).toBe('node_lost');
  });
});
