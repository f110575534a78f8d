// Test tiers are separate Jest projects selected by file suffix:
//   unit  *.unit.spec.ts  pure logic, no I/O beyond temp files
//   int   *.int.spec.ts   against a real nats-server / PostgreSQL / SQLite
//   e2e   test/**/*.e2e.spec.ts  real service processes
//   browser test/browser/*.browser.spec.ts  the web console in Debian's Chromium against a real network
//   multihost test/multihost/*.multihost.spec.ts  separate hosts (network namespaces) on one machine, as root
const swc = [
  '@swc/jest',
  {
    swcrc: false,
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      target: 'es2023',
      keepClassNames: true,
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
    },
    module: { type: 'es6' },
  },
];

const common = {
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper: {
    '^#contracts$': '<rootDir>/contracts/index.ts',
    '^#sdk$': '<rootDir>/libs/sdk/src/index.ts',
    '^#event-store$': '<rootDir>/libs/event-store/src/index.ts',
    '^#messaging$': '<rootDir>/libs/messaging/src/index.ts',
    '^#errors$': '<rootDir>/libs/errors/src/index.ts',
    '^#blobs$': '<rootDir>/libs/blobs/src/index.ts',
    '^#service-kit$': '<rootDir>/libs/service-kit/src/index.ts',
    '^#identity$': '<rootDir>/libs/identity/src/index.ts',
    '^#telemetry$': '<rootDir>/libs/telemetry/src/index.ts',
    '^#bus-auth$': '<rootDir>/libs/bus-auth/src/index.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testEnvironment: 'node',
  modulePathIgnorePatterns: ['<rootDir>/dist/', '<rootDir>/.gpunet/'],
};

export default {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/**/*.unit.spec.ts'] },
    { ...common, displayName: 'int', testMatch: ['<rootDir>/**/*.int.spec.ts'], slowTestThreshold: 30 },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e.spec.ts'],
      slowTestThreshold: 120,
      // Every message on the networks' buses is recorded and checked against contracts/generated/ at the end (test/support/bus/);
      // a network a test left running is stopped first.
      globalSetup: '<rootDir>/test/support/bus/e2e-setup.ts',
      globalTeardown: '<rootDir>/test/support/e2e-teardown.ts',
    },
    { ...common, displayName: 'browser', testMatch: ['<rootDir>/test/browser/**/*.browser.spec.ts'], slowTestThreshold: 180 },
    { ...common, displayName: 'multihost', testMatch: ['<rootDir>/test/multihost/**/*.multihost.spec.ts'], slowTestThreshold: 180 },
  ],
};
