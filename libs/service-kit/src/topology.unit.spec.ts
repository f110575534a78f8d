import { standingDurables } from '#bus-auth';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultTopologyFile, topologyFor } from './topology.js';

describe('deploy/topology.yaml: the durables GPUNET_EVENTS keeps its messages for (decision 0038)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'gpunet-topology-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** The topology file with `eventPartitions` set to `n`. */
  function withPartitions(n: number): string {
    const file = join(dir, `topology-${n}.yaml`);
    writeFileSync(file, readFileSync(defaultTopologyFile(), 'utf8').replace(/^eventPartitions: \d+$/m, `eventPartitions: ${n}`));
    return file;
  }

  it('keeps the events for storage\'s two durables, placement and the ledger, each partition\'s ledger on a split network, and the permissions let services make exactly those', async () => {
    for (const n of [1, 3]) {
      const topology = await topologyFor(withPartitions(n), 'x', []);
      expect(topology.streams.find((s) => s.name === 'GPUNET_EVENTS')?.retention).toBe('interest');
      const standing = topology.standing.map((c) => ({ durable: c.durable, filter: c.filterSubjects?.[0] }));
      expect(standing).toEqual(standingDurables(n));
      expect(topology.standing.every((c) => c.stream === 'GPUNET_EVENTS' && c.filterSubjects?.length === 1)).toBe(true);
    }
  });

  it('gives a process its own consumers beside the standing ones, and no node work consumer among the standing', async () => {
    const topology = await topologyFor(withPartitions(2), 'n1', ['ledger-p1'], 1);
    expect(topology.consumers.map((c) => c.durable)).toEqual(['ledger-p1']);
    expect(topology.standing.map((c) => c.durable)).toEqual(['storage-released', 'storage', 'placement', 'ledger-p0', 'ledger-p1']);
    expect(topology.standing.some((c) => c.stream === 'GPUNET_WORK')).toBe(false);
  });
});
