import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The boundary check (`.dependency-cruiser.cjs`, run by `npm run lint`) must be able to fail:
 * the fixtures folder is a miniature repository breaking each rule once, beside edges the rules
 * must allow. The real tree must pass, with `#name` subpath imports resolved to their sources.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURES = join(ROOT, 'test', 'architecture', 'fixtures');
const DEPCRUISE = join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

interface Violation {
  from: string;
  to: string;
  rule: { name: string; severity: string };
}
interface CruiseResult {
  modules: { source: string; dependencies: { module: string; resolved: string; couldNotResolve: boolean }[] }[];
  summary: { violations: Violation[]; error: number };
}

/** Runs depcruise with the real config over `cwd`, as `npm run lint` does. */
function depcruise(cwd: string, outputType: 'json' | 'err') {
  const run = spawnSync(
    process.execPath,
    [DEPCRUISE, '--config', join(ROOT, '.dependency-cruiser.cjs'), '--output-type', outputType, '.'],
    { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  if (run.error) throw run.error;
  return run;
}

/** The JSON report (whose exit status is always 0, so the lint exit status is checked apart). */
function report(cwd: string): CruiseResult {
  const run = depcruise(cwd, 'json');
  if (!run.stdout.trim()) throw new Error(`depcruise printed no report (exit ${run.status}):\n${run.stderr}`);
  return JSON.parse(run.stdout) as CruiseResult;
}

// Each cruise starts node; a cold start on a busy 2-core machine can take several seconds.
const CRUISE_TIMEOUT_MS = 60_000;

describe('architecture boundaries (dependency-cruiser)', () => {
  it('reports every violation in the fixtures by rule name, and nothing else', () => {
    const result = report(FIXTURES);
    const found = result.summary.violations
      .map((v) => `${v.rule.name}: ${v.from} -> ${v.to.replace(/^(\.\.\/)+node_modules\//, 'node_modules/')}`)
      .sort();
    expect(found).toEqual(
      [
        'console-only-http: console/src/page.tsx -> services/alpha/src/alpha.service.ts',
        'contracts-import-nothing-of-ours: contracts/index.ts -> libs/widgets/src/index.ts',
        'contracts-only-zod: contracts/index.ts -> node_modules/pino/pino.js',
        'domain-no-framework: libs/widgets/src/domain/policy.ts -> node_modules/pg/esm/index.mjs',
        'domain-no-framework: services/alpha/src/domain/decide.ts -> node_modules/@nestjs/common/index.js',
        'domain-no-io: libs/widgets/src/domain/policy.ts -> child_process',
        'domain-no-io: services/alpha/src/domain/decide.ts -> fs/promises',
        'libs-not-to-services: libs/widgets/src/index.ts -> services/alpha/src/alpha.service.ts',
        'no-service-to-service: services/alpha/src/alpha.service.ts -> services/beta/src/beta.service.ts',
        'not-to-unresolvable: services/beta/src/beta.service.ts -> ./missing.js',
      ].sort(),
    );
    expect(result.summary.violations.every((v) => v.rule.severity === 'error')).toBe(true);
    // What `npm run lint` sees: the text reporter exits non-zero and names each rule.
    const lint = depcruise(FIXTURES, 'err');
    expect(lint.status).not.toBe(0);
    expect(lint.stdout).toContain('error no-service-to-service:');
  }, CRUISE_TIMEOUT_MS);

  it('passes on the real tree, with #subpath imports resolved to their .ts sources', () => {
    const result = report(ROOT);
    expect(result.summary.violations).toEqual([]);
    expect(depcruise(ROOT, 'err').status).toBe(0);

    const subpath = result.modules.flatMap((m) => m.dependencies.filter((d) => d.module.startsWith('#')));
    // libs/errors is imported through `#errors` by the event store, so this can never be empty.
    expect(subpath.length).toBeGreaterThan(0);
    for (const dep of subpath) {
      expect(dep.couldNotResolve).toBe(false);
      expect(dep.resolved).toMatch(/^(contracts|libs)\/.*\.ts$/);
    }
    expect(result.modules.some((m) => m.source.startsWith('test/architecture/fixtures/'))).toBe(false);
  }, CRUISE_TIMEOUT_MS);
});
