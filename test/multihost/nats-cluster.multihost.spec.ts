/**
 * The multi-host harness itself, and the NATS JetStream cluster gpunet runs on across machines:
 * three control hosts each running a nats-server of one cluster, two GPU hosts as its clients,
 * every host its own network namespace with its own address and no route out (test/README.md).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { HostNetwork, type Host } from '../support/hosts.js';
import { NatsCluster, CLIENT_PORT } from '../support/nats-cluster.js';

const PROBE = join(process.cwd(), 'test', 'support', 'probes', 'nats-probe.mjs');

let net: HostNetwork;
let cluster: NatsCluster;
let dir: string;

/** Runs a probe operation as a process on `host`; its JSON answer. */
async function probe(host: Host, op: string, args: Record<string, unknown>): Promise<Record<string, unknown> & { ok: boolean }> {
  const r = await net.exec(host, process.execPath, [PROBE, op, JSON.stringify(args)], { cwd: process.cwd(), timeoutMs: 90_000 });
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(line) as Record<string, unknown> & { ok: boolean };
  } catch {
    throw new Error(`probe ${op} on ${host.name} printed no answer (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gpunet-multihost-'));
  net = await HostNetwork.create({ control: 3, gpu: 2 });
  cluster = new NatsCluster(net, net.hosts.filter((h) => h.role === 'control'), dir);
  await cluster.start();
}, 120_000);

afterAll(async () => {
  await net?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('separate hosts on one machine', () => {
  it('gives every host its own namespace and address on one subnet, and no route out', async () => {
    const g1 = net.host('g1');
    const addr = await net.exec(g1, 'ip', ['-4', '-o', 'addr', 'show', 'dev', 'eth0']);
    expect(addr.stdout).toContain(`inet ${g1.address}/24`);
    expect((await net.exec(g1, 'ip', ['route'])).stdout.trim()).toBe(`10.77.0.0/24 dev eth0 proto kernel scope link src ${g1.address}`);
    // Another host is reachable through the network; the machine's own services and the world are not.
    expect(await probe(g1, 'tcp', { host: net.host('c1').address, port: CLIENT_PORT })).toMatchObject({ result: 'connected' });
    expect(await probe(g1, 'tcp', { host: '1.1.1.1', port: 443 })).toMatchObject({ result: 'ENETUNREACH' });
    // 127.0.0.1 is the host's own loopback: the machine's nats-server and PostgreSQL are not there.
    expect(await probe(g1, 'tcp', { host: '127.0.0.1', port: 5432 })).toMatchObject({ result: 'ECONNREFUSED' });
    const machine = (await promisify(execFile)('hostname', ['-I'])).stdout.trim().split(/\s+/)[0];
    if (machine) expect((await probe(g1, 'tcp', { host: machine, port: 22 })).result).toMatch(/ENETUNREACH|EHOSTUNREACH/);
  }, 60_000);

  it('cuts a host off the network and puts it back', async () => {
    const g2 = net.host('g2');
    const c2 = net.host('c2');
    await net.cut(g2);
    expect((await probe(g2, 'tcp', { host: c2.address, port: CLIENT_PORT, connectMs: 1_000 })).result).not.toBe('connected');
    await net.restore(g2);
    // The link comes up again at its own pace: ask until it answers.
    let result: unknown;
    for (const t0 = Date.now(); Date.now() - t0 < 20_000 && result !== 'connected'; ) result = (await probe(g2, 'tcp', { host: c2.address, port: CLIENT_PORT })).result;
    expect(result).toBe('connected');
  }, 60_000);
});

describe('a 3-node NATS JetStream cluster across the control hosts', () => {
  const [g1, g2] = [() => net.host('g1'), () => net.host('g2')];

  it('keeps an R3 stream with a leader and two current replicas; a client on one GPU host writes through one server, another reads through another', async () => {
    const created = await probe(g1(), 'create', { servers: cluster.urls, stream: 'WORK', replicas: 3 });
    expect(created).toMatchObject({ ok: true, numReplicas: 3 });
    const published = await probe(g1(), 'publish', { servers: [cluster.urls[0]], stream: 'WORK', count: 10, id: 'first' });
    expect(published).toMatchObject({ ok: true, seq: 10, server: 'c1' });
    const info = await probe(g1(), 'info', { servers: cluster.urls, stream: 'WORK', allCurrent: true });
    expect(info).toMatchObject({ ok: true, messages: 10 });
    expect([info.leader, ...(info.replicas as { name: string }[]).map((r) => r.name)].sort()).toEqual(['c1', 'c2', 'c3']);
    const read = await probe(g2(), 'read', { servers: [cluster.urls[2]], stream: 'WORK', consumer: 'reader', count: 10 });
    expect(read).toMatchObject({ ok: true, messages: Array.from({ length: 10 }, (_, i) => `message ${i}`) });
  }, 120_000);

  it('goes on when the stream leader is SIGKILLed, and the killed server catches up when it is back', async () => {
    const before = await probe(g1(), 'info', { servers: cluster.urls, stream: 'WORK', allCurrent: true });
    const leader = net.host(before.leader as string);
    await cluster.kill(leader);
    // Two of three remain: a new leader is elected and writes go on (deduplicated by message id across retries).
    const during = await probe(g1(), 'publish', { servers: cluster.urls, stream: 'WORK', count: 5, id: 'during' });
    expect(during).toEqual({ ok: true, seq: 15, server: expect.any(String) });
    const after = await probe(g1(), 'info', { servers: cluster.urls.filter((_, i) => cluster.hosts[i] !== leader), stream: 'WORK' });
    expect(after.leader).not.toBe(leader.name);
    await cluster.startServer(leader);
    const healed = await probe(g2(), 'info', { servers: cluster.urls, stream: 'WORK', allCurrent: true, timeoutMs: 60_000 });
    expect(healed).toMatchObject({ ok: true, messages: 15, lastSeq: 15 });
    expect((healed.replicas as { name: string; current: boolean }[]).map((r) => r.current)).toEqual([true, true]);
  }, 150_000);

  it('leaves no namespace behind when the network stops', async () => {
    const extra = await HostNetwork.create({ control: 1, gpu: 1 });
    expect((await HostNetwork.leftOver()).length).toBeGreaterThan(net.hosts.length + 1);
    await extra.stop();
    expect(await HostNetwork.leftOver()).toHaveLength(net.hosts.length + 1);
  }, 60_000);
});
