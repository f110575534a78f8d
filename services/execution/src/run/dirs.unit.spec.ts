import { mkdtemp, rm, stat, writeFile, mkdir, symlink, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValidationError } from '#errors';
import { prepareRunDirs, removeRunDirs, runIdIssues, sealInputs } from './dirs.js';

describe('run directories', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'gpunet-dirs-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('creates inputs, work, outputs, checkpoints and logs under runs/<job>/<attempt>, idempotently', async () => {
    const dirs = await prepareRunDirs(root, 'job-1', '0a1b2c3d-0000-4000-8000-000000000001');
    expect(dirs.root).toBe(join(root, 'runs', 'job-1', '0a1b2c3d-0000-4000-8000-000000000001'));
    expect((await readdir(dirs.root)).sort()).toEqual(['checkpoints', 'inputs', 'logs', 'outputs', 'work']);
    expect((await stat(dirs.work)).mode & 0o777).toBe(0o700);
    await writeFile(join(dirs.work, 'keep'), 'x');
    expect(await prepareRunDirs(root, 'job-1', '0a1b2c3d-0000-4000-8000-000000000001')).toEqual(dirs);
    expect(await readdir(dirs.work)).toEqual(['keep']);
  });

  it.each([['..'], ['.'], ['../x'], ['a/b'], [''], ['.hidden'], ['a\0b'], ['x'.repeat(129)], ['/abs']])('refuses the id %j', async (bad) => {
    await expect(prepareRunDirs(root, bad, 'a1')).rejects.toThrow(ValidationError);
    await expect(prepareRunDirs(root, 'j1', bad)).rejects.toThrow(ValidationError);
    expect(await readdir(root)).toEqual([]);
  });

  it('names the bad field and how to fix it', () => {
    expect(runIdIssues('../etc', 'ok')).toEqual([expect.objectContaining({ path: 'jobId', fix: expect.stringMatching(/UUID/) })]);
  });

  it('seals inputs read-only without following symlinks, and can still remove them', async () => {
    const dirs = await prepareRunDirs(root, 'j1', 'a1');
    const outside = join(root, 'outside.txt');
    await writeFile(outside, 'not ours');
    await mkdir(join(dirs.inputs, 'data'));
    await writeFile(join(dirs.inputs, 'data', 'train.csv'), '1,2\n', { mode: 0o644 });
    await symlink(outside, join(dirs.inputs, 'link'));
    await sealInputs(dirs.inputs);
    expect((await stat(join(dirs.inputs, 'data', 'train.csv'))).mode & 0o777).toBe(0o444);
    expect((await stat(join(dirs.inputs, 'data'))).mode & 0o777).toBe(0o555); // was 0o755
    expect((await stat(dirs.inputs)).mode & 0o777).toBe(0o500);
    expect((await stat(outside)).mode & 0o222).not.toBe(0); // the link's target kept its write bits
    await removeRunDirs(dirs);
    await expect(stat(dirs.root)).rejects.toMatchObject({ code: 'ENOENT' });
    await removeRunDirs(dirs); // already gone: no error
  });
});
