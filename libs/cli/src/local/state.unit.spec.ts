import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateFileError, UsageError } from '../errors.js';
import { resolveSettings } from '../settings.js';
import { parseState, readState, removeState, statePath, writeState, type LocalState } from './state.js';

const state = (dataDir: string): LocalState => ({
  version: 1,
  dataDir,
  startedAt: '2025-06-01T12:00:00.000Z',
  team: 'local',
  apiKey: 'k'.repeat(64),
  apiKeysFile: join(dataDir, 'api-keys.yaml'),
  url: 'http://127.0.0.1:8080',
  natsUrl: 'nats://127.0.0.1:4222',
  natsManaged: true,
  storeUrl: `sqlite:${join(dataDir, 'events.db')}`,
  processes: [{ name: 'nats', role: 'nats', pid: 123, command: ['nats-server', '-js'], log: join(dataDir, 'logs', 'nats.log'), port: 4222 }],
});

describe('state.json', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpunet-state-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('given a state, when written and read back, then it is the same, readable by its owner only', async () => {
    const path = await writeState(state(dir));
    expect(path).toBe(statePath(dir));
    expect(await readState(dir)).toEqual(state(dir));
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    await removeState(dir);
    expect(await readState(dir)).toBeUndefined();
  });

  it('given no state file, when read, then there is none (nothing was started)', async () => {
    expect(await readState(join(dir, 'never'))).toBeUndefined();
  });

  it('given a damaged state file, when read, then the error names the file, the bad fields and what to do', async () => {
    await writeFile(statePath(dir), '{"version": 1, "url": "not a url"}');
    const err = await readState(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateFileError);
    expect((err as StateFileError).issues.map((i) => i.path)).toEqual(expect.arrayContaining(['url', 'apiKey', 'processes']));
    expect((err as StateFileError).issues.every((i) => i.fix)).toBe(true);
    expect(() => parseState('{', statePath(dir))).toThrow(/is not JSON/);
  });

  it('refuses to write a state the next command could not read', async () => {
    await expect(writeState({ ...state(dir), url: 'nope' })).rejects.toThrow();
    await expect(readFile(statePath(dir))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('connection settings', () => {
  const s = state('/d');

  it('takes flags over environment over the state file, setting by setting', () => {
    expect(resolveSettings({}, {}, s, '/d/state.json')).toMatchObject({ url: s.url, apiKey: s.apiKey, natsUrl: s.natsUrl, team: 'local', source: { url: 'state', apiKey: 'state' } });
    const env = { GPUNET_URL: 'http://env:1', GPUNET_API_KEY: 'e'.repeat(20), GPUNET_NATS_URL: 'nats://env:2', GPUNET_TEAM: 'team-env' };
    expect(resolveSettings({}, env, s, '/d/state.json')).toMatchObject({ url: 'http://env:1', natsUrl: 'nats://env:2', team: 'team-env', source: { url: 'env', apiKey: 'env' } });
    expect(resolveSettings({ url: 'http://flag:3', team: 'team-flag' }, env, s, '/d/state.json')).toMatchObject({ url: 'http://flag:3', apiKey: env.GPUNET_API_KEY, team: 'team-flag', source: { url: 'flag', apiKey: 'env' } });
  });

  it('the teams and keys commands take the admin key: flag, GPUNET_ADMIN_API_KEY, GPUNET_API_KEY, then the operator key of state.json', () => {
    const withAdmin = { ...s, adminApiKey: 'gpn_' + 'o'.repeat(43) };
    const admin = { admin: true };
    expect(resolveSettings({}, {}, withAdmin, '/d/state.json', admin)).toMatchObject({ apiKey: withAdmin.adminApiKey, source: { apiKey: 'state' } });
    expect(resolveSettings({}, { GPUNET_API_KEY: 'e'.repeat(20) }, withAdmin, '/d/state.json', admin)).toMatchObject({ apiKey: 'e'.repeat(20), source: { apiKey: 'env' } });
    expect(resolveSettings({}, { GPUNET_API_KEY: 'e'.repeat(20), GPUNET_ADMIN_API_KEY: 'a'.repeat(20) }, withAdmin, '/d/state.json', admin).apiKey).toBe('a'.repeat(20));
    expect(resolveSettings({ apiKey: 'f'.repeat(20) }, { GPUNET_ADMIN_API_KEY: 'a'.repeat(20) }, withAdmin, '/d/state.json', admin).apiKey).toBe('f'.repeat(20));
    // Other commands keep the team's key.
    expect(resolveSettings({}, {}, withAdmin, '/d/state.json').apiKey).toBe(s.apiKey);
    // A state file of an older `gpunet up` has no operator key: say where to give one.
    expect(() => resolveSettings({}, {}, s, '/d/state.json', admin)).toThrow(/no admin API key/);
  });

  it('without any network, says every way to name one', () => {
    let err: unknown;
    try {
      resolveSettings({}, {}, undefined, '/d/state.json');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).issues).toEqual([
      expect.objectContaining({ path: '--url', fix: expect.stringContaining('gpunet up') }),
      expect.objectContaining({ path: '--api-key', message: expect.stringContaining('GPUNET_API_KEY') }),
    ]);
  });
});
