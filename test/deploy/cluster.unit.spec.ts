/**
 * deploy/ as an operator uses it (docs/operations.md): the cluster server template renders into a
 * config nats-server accepts, the systemd units pass `systemd-analyze verify` and start programs
 * this checkout builds, and every `gpunet …` command and flag the operations guide names exists.
 */
import { renderAuthorization, renderClusterConfig, loadPermissionTemplates, defaultPermissionsFile } from '#bus-auth';
import { newIdentity } from '#identity';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { Command } from 'commander';
import { buildProgram } from '../../libs/cli/src/program.js';

const root = join(import.meta.dirname, '../..');
const unitsDir = join(root, 'deploy', 'systemd');
const units = readdirSync(unitsDir).filter((f) => f.endsWith('.service') || f.endsWith('.timer'));
const operations = readFileSync(join(root, 'docs', 'operations.md'), 'utf8');
const found = (bin: string) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;

describe('deploy/nats/cluster.conf', () => {
  it('renders, with the authorization it includes, into a config nats-server accepts (-t)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpunet-cluster-conf-'));
    try {
      const templates = await loadPermissionTemplates(defaultPermissionsFile());
      const identities = [
        { kind: 'service' as const, id: 'intake', publicKey: newIdentity().publicKey },
        { kind: 'node' as const, id: 'gpu-01', publicKey: newIdentity().publicKey },
        { kind: 'joiner' as const, publicKey: newIdentity().publicKey },
        { kind: 'operator' as const, publicKey: newIdentity().publicKey },
      ];
      writeFileSync(join(dir, 'authorization.conf'), renderAuthorization(templates, identities));
      const conf = renderClusterConfig(readFileSync(join(root, 'deploy', 'nats', 'cluster.conf'), 'utf8'), {
        serverName: 'ctl-1',
        clientListen: '127.0.0.1:4222',
        routeListen: '127.0.0.1:6222',
        routes: ['127.0.0.1:6222', '127.0.0.2:6222', '127.0.0.3:6222'],
        routePassword: 'r'.repeat(43),
        storeDir: join(dir, 'js'),
        monitorListen: '127.0.0.1:8222',
        authorizationFile: 'authorization.conf',
      });
      writeFileSync(join(dir, 'nats.conf'), conf);
      const nats = process.env.GPUNET_NATS_SERVER_BIN ?? 'nats-server';
      const r = spawnSync(nats, ['-t', '-c', join(dir, 'nats.conf')], { encoding: 'utf8' });
      expect([r.status, `${r.stdout}${r.stderr}`]).toEqual([0, expect.stringMatching(/configuration file .* is valid/)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deploy/systemd', () => {
  it('has a unit for nats-server, each service, the recorder, the agent and the authorization timer', () => {
    expect(units.sort()).toEqual(
      ['gpunet-agent.service', 'gpunet-authorization.service', 'gpunet-authorization.timer', 'gpunet-intake.service', 'gpunet-ledger.service', 'gpunet-nats.service', 'gpunet-placement.service', 'gpunet-recorder.service', 'gpunet-storage.service'].sort(),
    );
  });

  it('every unit passes systemd-analyze verify (or, without systemd, names absolute programs)', () => {
    for (const unit of units) {
      const text = readFileSync(join(unitsDir, unit), 'utf8');
      for (const m of text.matchAll(/^Exec\w+=[+-]?(\S+)/gm)) expect([unit, m[1]!.startsWith('/')]).toEqual([unit, true]);
      if (!found('systemd-analyze')) continue;
      const r = spawnSync('systemd-analyze', ['verify', join(unitsDir, unit)], { encoding: 'utf8' });
      // A program missing on this machine (/opt/gpunet, /usr/sbin/nats-server) is not the unit's fault.
      const problems = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() && !/is not executable|No such file or directory|Failed to prepare filename/.test(l));
      expect([unit, r.status, problems]).toEqual([unit, 0, []]);
    }
  });

  it('starts programs this checkout builds, and reads env files the operations guide documents', () => {
    for (const unit of units) {
      const text = readFileSync(join(unitsDir, unit), 'utf8');
      for (const m of text.matchAll(/\/opt\/gpunet\/dist\/(\S+)\.js/g)) expect([unit, existsSync(join(root, `${m[1]!}.ts`))]).toEqual([unit, true]);
      for (const m of text.matchAll(/^EnvironmentFile=-?(\S+)/gm)) expect([unit, operations.includes(m[1]!)]).toEqual([unit, true]);
    }
  });
});

describe('docs/operations.md', () => {
  const io = { stdout: new PassThrough(), stderr: new PassThrough(), env: {}, cwd: root };
  const program = buildProgram(io, { code: 0 });

  /** Every `gpunet …` invocation the guide shows, in code blocks and inline code (`sudo -u gpunet gpunet …` too). */
  const code = [...operations.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((m) => m[1]!).concat([...operations.replace(/```[\s\S]*?```/g, '').matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!));
  const invocations = code
    .flatMap((text) => [...text.matchAll(/(?:^|[\s(])gpunet ((?:gpunet )?[a-z][a-z-]*(?: [^\n|&#]*)?)/gm)].map((m) => m[1]!.replace(/^gpunet /, '').trim()))
    .filter((s) => s.length > 0 && s !== 'gpunet'); // `createdb -O gpunet gpunet`: the user and the database

  it('names commands', () => {
    expect(invocations.length).toBeGreaterThan(10);
    expect(invocations).toEqual(expect.arrayContaining([expect.stringMatching(/^node join --nats /), expect.stringMatching(/^nodes token gpu-01 /), expect.stringMatching(/^up --cluster /)]));
  });

  it('names only commands and flags that exist', () => {
    const bad: string[] = [];
    for (const line of invocations) {
      const words = line.split(/\s+/);
      let cmd: Command = program;
      let i = 0;
      for (; i < words.length; i++) {
        const sub = cmd.commands.find((c) => c.name() === words[i]);
        if (!sub) break;
        cmd = sub;
      }
      if (cmd === program) {
        bad.push(`${line}: no command ${words[0]}`);
        continue;
      }
      for (const flag of words.slice(i).filter((w) => /^--[a-z]/.test(w))) {
        const name = flag.split('=')[0]!;
        if (!cmd.options.some((o) => o.long === name)) bad.push(`${line}: gpunet ${words.slice(0, i).join(' ')} has no ${name}`);
      }
    }
    expect(bad).toEqual([]);
  });
});
