/**
 * Architecture boundaries, checked by `npm run lint` (see docs/decisions and ARCHITECTURE.md):
 * services share only contracts/ and libs/, contracts/ stands alone, libs/ never reach into a
 * service, and domain/ folders (pure decide/evolve and policies) touch no framework and no I/O.
 *
 * test/architecture/boundaries.unit.spec.ts proves every rule below can fail, by name.
 */

/** Frameworks and drivers a pure domain folder must not import (matched on the resolved path). */
const FRAMEWORKS = String.raw`node_modules/(@nestjs/|@nats-io/|pg/|pg-[^/]+/|better-sqlite3/|pino/|pino-[^/]+/|express/)`;

/** Node built-ins that do I/O or spawn processes; `node:` prefixed or not. */
const NODE_IO = String.raw`^(node:)?(fs|fs/promises|net|tls|dgram|dns|dns/promises|http|https|http2|child_process|cluster|worker_threads|readline)$`;

/** A domain folder of a service or a lib. Specs beside the code may use test tooling. */
const DOMAIN = String.raw`^(services|libs)/[^/]+/src/domain/`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-service-to-service',
      comment:
        'A service never imports another service: services share only contracts/ and libs/, and talk through NATS.',
      severity: 'error',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/', pathNot: '^services/$1/' },
    },
    {
      name: 'contracts-import-nothing-of-ours',
      comment: 'contracts/ is imported by everyone (and by producers in other languages), so it imports nothing of ours.',
      severity: 'error',
      from: { path: '^contracts/' },
      to: { path: '^(libs|services|test|scripts|deploy)/' },
    },
    {
      name: 'contracts-only-zod',
      comment:
        'The contracts themselves depend on zod and node built-ins only; their export tool and specs may use more.',
      severity: 'error',
      from: { path: '^contracts/', pathNot: [String.raw`\.spec\.ts$`, '^contracts/tools/'] },
      to: { couldNotResolve: false, dependencyTypesNot: ['core', 'local'], pathNot: 'node_modules/zod/' },
    },
    {
      name: 'libs-not-to-services',
      comment: 'libs/ are shared by services and must never depend on one.',
      severity: 'error',
      from: { path: '^libs/' },
      to: { path: '^services/' },
    },
    {
      name: 'domain-no-framework',
      comment:
        'Domain code (decide/evolve, policies) is pure: no Nest, NATS, SQL drivers, logger or HTTP framework. Adapters wire it.',
      severity: 'error',
      from: { path: DOMAIN },
      to: { path: FRAMEWORKS },
    },
    {
      name: 'domain-no-io',
      comment: 'Domain code is pure: no file, network or process I/O; time, ids and prices are injected.',
      severity: 'error',
      from: { path: DOMAIN },
      to: { dependencyTypes: ['core'], path: NODE_IO },
    },
    {
      name: 'console-only-http',
      comment: 'The web console knows gpunet only through its public HTTP API (the client generated from /openapi.json): no service, lib or contract code in the browser.',
      severity: 'error',
      from: { path: '^console/' },
      to: { path: '^(services|libs|contracts|test|scripts)/' },
    },
    {
      name: 'not-to-unresolvable',
      comment:
        'Every import must resolve; an unresolved #subpath import would hide its edges from the rules above.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['^dist/', '^coverage/', '^\\.gpunet/', '^contracts/generated/', '^test/architecture/fixtures/'] },
    // Type-only imports are dependencies too: a domain file importing a Nest type is still coupled.
    tsPreCompilationDeps: true,
    // `#contracts` etc. are package.json subpath imports; the `types` condition points at the
    // .ts source, so rules see the real source file rather than dist/.
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['types', 'import', 'node', 'default'],
      extensions: ['.ts', '.tsx', '.js', '.cjs', '.mjs', '.json', '.d.ts'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
  },
};
