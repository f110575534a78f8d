import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValidationError } from '#errors';
import { collectOutputs, outputGlobIssues } from './outputs.js';

describe('outputGlobIssues', () => {
  it('accepts relative globs and excludes', () => {
    expect(outputGlobIssues(['**/*', 'model/*.pt', '!tmp/**', 'metrics.json'])).toEqual([]);
  });

  it('refuses absolute globs, ".." segments and empty lists, naming the entry', () => {
    const issues = outputGlobIssues(['/etc/*', '../secrets/*', 'a/../../b', '!../x', '', 'ok/*', 'a\\..\\b']);
    expect(issues.map((i) => i.path)).toEqual(['outputs.0', 'outputs.1', 'outputs.2', 'outputs.3', 'outputs.4', 'outputs.6']);
    expect(outputGlobIssues([])).toEqual([expect.objectContaining({ path: 'outputs' })]);
  });

  it('does not mistake names that merely contain dots for traversal', () => {
    expect(outputGlobIssues(['..hidden', 'a..b/*', 'v1.2/**'])).toEqual([]);
  });
});

describe('collectOutputs', () => {
  let base: string;
  let out: string;
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');

  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'gpunet-outputs-'));
    out = join(base, 'outputs');
    await mkdir(join(out, 'model', 'nested'), { recursive: true });
    await writeFile(join(out, 'metrics.json'), '{"loss":0.1}');
    await writeFile(join(out, 'model', 'weights.pt'), 'w'.repeat(1000));
    await writeFile(join(out, 'model', 'nested', 'head.pt'), 'h');
    await writeFile(join(out, '.hidden'), 'dot');
    await writeFile(join(base, 'secret.txt'), 'agent secret');
  });
  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('lists matching files with relative path, size and sha256, in path order', async () => {
    const got = await collectOutputs(out, ['**/*.pt', 'metrics.json']);
    expect(got.files.map(({ path, size, sha256 }) => ({ path, size, sha256 }))).toEqual([
      { path: 'metrics.json', size: 12, sha256: sha('{"loss":0.1}') },
      { path: 'model/nested/head.pt', size: 1, sha256: sha('h') },
      { path: 'model/weights.pt', size: 1000, sha256: sha('w'.repeat(1000)) },
    ]);
    expect(got.files[0].sourcePath).toBe(join(await realpath(out), 'metrics.json'));
    expect(got.totalBytes).toBe(1013);
    expect(got.rejected).toEqual([]);
  });

  it('includes dotfiles under **, and applies !excludes', async () => {
    const got = await collectOutputs(out, ['**', '!model/nested/**']);
    expect(got.files.map((f) => f.path)).toEqual(['.hidden', 'metrics.json', 'model/weights.pt']);
  });

  it('refuses symlinks pointing outside, never reading them; accepts ones that stay inside', async () => {
    await symlink(join(base, 'secret.txt'), join(out, 'leak.txt'));
    await symlink('../../secret.txt', join(out, 'model', 'relative-leak.pt'));
    await symlink('/etc', join(out, 'etc'));
    await symlink(join(base, 'missing'), join(out, 'dangling.txt'));
    await symlink('weights.pt', join(out, 'model', 'alias.pt'));
    await symlink('nested', join(out, 'model', 'dirlink.pt'));
    const got = await collectOutputs(out, ['**/*']);
    expect(got.rejected).toEqual([
      { path: 'dangling.txt', reason: 'symlink_dangling', message: expect.stringContaining('symlink to nothing') },
      { path: 'etc', reason: 'symlink_outside', message: expect.stringContaining('pointing outside the output directory') },
      { path: 'leak.txt', reason: 'symlink_outside', message: expect.stringContaining('not followed') },
      { path: 'model/dirlink.pt', reason: 'not_regular_file', message: expect.any(String) },
      { path: 'model/relative-leak.pt', reason: 'symlink_outside', message: expect.any(String) },
    ]);
    const alias = got.files.find((f) => f.path === 'model/alias.pt');
    expect(alias).toMatchObject({ size: 1000, sha256: sha('w'.repeat(1000)) });
    expect(alias?.sourcePath).toBe(join(await realpath(out), 'model', 'weights.pt'));
    // nothing under /etc was walked into, and the secret's content is nowhere
    expect(got.files.some((f) => f.path.startsWith('etc/'))).toBe(false);
    expect(got.files.some((f) => f.sha256 === sha('agent secret'))).toBe(false);
  });

  it('refuses globs that climb out, before touching the disk', async () => {
    await expect(collectOutputs(out, ['../secret.txt'])).rejects.toThrow(ValidationError);
    await expect(collectOutputs(out, ['/etc/passwd'])).rejects.toThrow(ValidationError);
  });

  it('collects only below the directory it is given, even for **', async () => {
    const got = await collectOutputs(join(out, 'model'), ['**']);
    expect(got.files.map((f) => f.path)).toEqual(['nested/head.pt', 'weights.pt']);
  });

  it('lists a file whose name holds a newline as refused (invalid_name), whatever the globs, instead of dropping it', async () => {
    await writeFile(join(out, 'bad\nname.txt'), 'x');
    for (const globs of [['**'], ['*.json']]) {
      const { files, rejected } = await collectOutputs(out, globs);
      expect(files.map((f) => f.path)).not.toContain('bad\nname.txt');
      expect(rejected).toContainEqual({ path: 'bad\\nname.txt', reason: 'invalid_name', message: expect.stringMatching(/control character; rename it/) });
    }
  });

  it('reports FIFOs as not regular files without blocking on them', async () => {
    execFileSync('mkfifo', [join(out, 'pipe.json')]);
    const got = await collectOutputs(out, ['*.json']);
    expect(got.files.map((f) => f.path)).toEqual(['metrics.json']);
    expect(got.rejected).toEqual([{ path: 'pipe.json', reason: 'not_regular_file', message: 'pipe.json is not a regular file' }]);
  });

  it('takes files in path order up to the total size cap and names the rest', async () => {
    await writeFile(join(out, 'zz.txt'), 'z'); // would fit, but comes after the file that did not
    const got = await collectOutputs(out, ['**/*'], { maxTotalBytes: 1005 });
    expect(got.files.map((f) => f.path)).toEqual(['.hidden', 'metrics.json', 'model/nested/head.pt']);
    expect(got.totalBytes).toBe(16);
    expect(got.rejected.map((r) => [r.path, r.reason])).toEqual([
      ['model/weights.pt', 'size_cap'],
      ['zz.txt', 'size_cap'],
    ]);
    expect(got.rejected[0].message).toMatch(/model\/weights.pt \(1000 bytes\) was not kept: the outputs size cap of 1005 bytes was reached/);
  });

  it('hashes a file larger than one read chunk correctly', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 7, 0xab);
    await writeFile(join(out, 'big.bin'), big);
    const got = await collectOutputs(out, ['big.bin']);
    expect(got.files).toEqual([expect.objectContaining({ size: big.length, sha256: createHash('sha256').update(big).digest('hex') })]);
  });
});
