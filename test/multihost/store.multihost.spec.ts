/**
 * The store of a multi-host network: a PostgreSQL server of its own on a control host, reached by
 * the other control hosts through the network, never by a GPU host, and kept across a restart.
 */
import { HostNetwork } from '../support/hosts.js';
import { HostPostgres } from '../support/host-postgres.js';

let net: HostNetwork;
let pgs: HostPostgres;
let url: string;

beforeAll(async () => {
  net = await HostNetwork.create({ control: 2, gpu: 1 });
  pgs = await HostPostgres.start(net, net.host('c1'));
  url = await pgs.createDatabase('gpunet');
}, 120_000);

afterAll(async () => {
  await pgs?.remove();
  await net?.stop();
}, 60_000);

/** Runs one statement with psql on `host`: its exit code and output. */
const psql = (host: string, sql: string) => net.exec(net.host(host), 'psql', [url, '-v', 'ON_ERROR_STOP=1', '-tAc', sql], { timeoutMs: 30_000 });

describe('PostgreSQL on a control host', () => {
  it('serves another control host through the network and refuses a GPU host', async () => {
    const fromC2 = await psql('c2', 'CREATE TABLE t (v int); INSERT INTO t VALUES (42); SELECT v FROM t');
    expect({ code: fromC2.code, out: fromC2.stdout.trim().split('\n').at(-1), err: fromC2.stderr }).toEqual({ code: 0, out: '42', err: '' });
    const fromG1 = await psql('g1', 'SELECT v FROM t');
    expect(fromG1.code).not.toBe(0);
    expect(fromG1.stderr).toMatch(/no pg_hba\.conf entry for host "10\.77\.0\.21"/);
  }, 60_000);

  it('keeps what was committed across a restart, and clients connect again afterwards', async () => {
    await pgs.stopServer();
    const down = await psql('c2', 'SELECT v FROM t');
    expect(down.code).not.toBe(0);
    expect(down.stderr).toMatch(/Connection refused|could not connect/);
    await pgs.startServer();
    const after = await psql('c2', 'SELECT v FROM t');
    expect({ code: after.code, out: after.stdout.trim() }).toEqual({ code: 0, out: '42' });
  }, 60_000);
});
