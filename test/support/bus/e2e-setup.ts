/**
 * globalSetup of the e2e project: a fresh directory for this run's bus tap, named in
 * GPUNET_BUS_TAP_DIR (`BUS_TAP_DIR_ENV` of bus-contract.ts) so that every network the run starts
 * (test/support/network.ts) records its bus there; the globalTeardown (bus-contract.ts) checks
 * everything recorded against the exported documents. Jest loads this file without the
 * project's module mapping, so it imports nothing of ours.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): void {
  process.env.GPUNET_BUS_TAP_DIR = mkdtempSync(join(tmpdir(), 'gpunet-bus-tap-'));
}
