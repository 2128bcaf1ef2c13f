import { paymentSdkPath } from './test/support/payment-sdks.js';

/*
 * Three tiers, chosen by path so that a new test file lands in one without touching this file:
 *   unit         pure logic: no DynamoDB, no network, no child processes; the whole tier under 30 s
 *   integration  the service over HTTP on the local stack and the run's shared DynamoDB Local
 *   slow         `npm start` and other npm scripts as processes, CDK synthesis and a real esbuild
 *                bundle, a DynamoDB outage (its own emulator), Redocly lint
 * `npm test` runs all three; `npm run test:unit` (and the other test:* scripts) one of them.
 *
 * Jest runs the sources as CommonJS, transformed by swc, and without --experimental-vm-modules. With
 * that flag Node gives every script Jest compiles its own dynamic-import options, so V8's compilation
 * cache never hits and each test file compiles every module it loads again; and Node 24 keeps every
 * evaluated ES module (vm.SourceTextModule, nodejs/node#63186). Without it a worker compiles a module
 * once. The ES-module-only packages the code imports are transformed too (esmOnlyPackages); test tools
 * that are ES modules load through Node's own loader (test/support/node-import.ts). The service itself
 * still runs as ES modules wherever it runs outside Jest: `npm start`, the bundles, and the tests that
 * start or import those (npm-start.test.ts, the bundle tests, `npm run openapi -- --check`).
 */

/*
 * Slow: child processes (npm, DynamoDB Local of its own, Redocly), bundles and CDK synthesis. Loading
 * aws-cdk-lib into a test file's module registry and synthesizing the app costs 10-25 s on two cores,
 * which alone would spend the unit tier's 30 s. A new test that spawns processes is slow too: name it
 * *.slow.test.ts, or put it in slowFiles.
 */
const infraFolder = '<rootDir>/test/infra';
const slowFolders = [infraFolder];
const slowFiles = [
  '<rootDir>/test/integration/npm-start.test.ts',
  '<rootDir>/test/integration/newcomer-errors.test.ts',
  '<rootDir>/test/integration/outage.test.ts',
  '<rootDir>/test/contract/lint.test.ts',
];
const slowSuffix = '.slow.test.ts';

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** testPathIgnorePatterns are regular expressions; these match the folders and files above exactly. */
const underFolders = (folders) => folders.map((folder) => `^${escapeRegExp(folder)}/`);
const exactly = (files) => files.map((file) => `^${escapeRegExp(file)}$`);

/*
 * Packages that ship ES modules only, which the code under test imports: swc turns
 * them into CommonJS like our own sources. Test tools that are ES modules load through Node's own
 * loader instead (test/support/node-import.ts).
 */
const esmOnlyPackages = [
  '@middy',
  'jose',
  '@noble',
  'canonicalize',
  'leven',
  // openapi-typescript's own (parse-json, supports-color), for scripts/openapi.ts
  'openapi-typescript/node_modules',
  'index-to-position',
  'change-case',
];

/** @type {import('jest').Config} */
const shared = {
  // Jest's Node environment, which sends the service's log lines to a file per test file and lets a
  // finished test file go (node-environment.js says why).
  testEnvironment: '<rootDir>/test/support/node-environment.js',
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2023' },
        module: { type: 'commonjs' },
        sourceMaps: 'inline',
      },
    ],
    '^.+\\.m?js$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'ecmascript' }, target: 'es2023' },
        module: { type: 'commonjs' },
      },
    ],
  },
  transformIgnorePatterns: [
    `^(?!.*/node_modules/(?:${esmOnlyPackages.map(escapeRegExp).join('|')})/).*/node_modules/`,
  ],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // The workspace packages by name, from their sources (tsconfig.json's paths say the same).
    '^@receipt-service/receipt-core$': '<rootDir>/packages/receipt-core/src/index.ts',
    '^@receipt-service/receipt-core/credential$': '<rootDir>/packages/receipt-core/src/credential.ts',
    '^@receipt-service/sdk$': '<rootDir>/packages/sdk/src/index.ts',
    '^@receipt-service/sdk/pdf$': '<rootDir>/packages/sdk/src/pdf.ts',
    '^@receipt-service/sdk/credential$': '<rootDir>/packages/sdk/src/credential.ts',
    // Middy's packages export an `import` condition only, which Jest's CommonJS resolver does not match.
    '^@middy/([a-z-]+)$': '<rootDir>/node_modules/@middy/$1/index.js',
    // The payment SDKs as a deployed function loads them, one bundled file each (test/support/payment-sdks.js).
    ...Object.fromEntries(['stripe', 'square'].map((sdk) => [`^${sdk}$`, paymentSdkPath(sdk)])),
  },
};

/*
 * A CDK App built without an outdir synthesizes into a fresh cdk.out* folder in the temp dir; this
 * removes them after each file, also when its tests fail. Only in the tiers that synthesize (slow and
 * infra): it loads aws-cdk-lib's cx-api into every file's module registry.
 */
const removeCdkOutput = { setupFilesAfterEnv: ['aws-cdk-lib/testhelpers/jest-autoclean'] };

/*
 * One DynamoDB Local for the run, shared by the tiers that use it. Jest runs a project's globalSetup
 * only when that project has tests in the run (runGlobalHook collects the paths from the tests about
 * to run, once per path), so `test:unit` starts no Java.
 */
const sharedDynamoDb = {
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
};

/** @type {import('jest').Config[]} */
const tiers = [
  {
    ...shared,
    displayName: 'unit',
    testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    testPathIgnorePatterns: ['/node_modules/', `${escapeRegExp(slowSuffix)}$`],
  },
  {
    ...shared,
    ...sharedDynamoDb,
    displayName: 'integration',
    // Everything that is neither unit nor slow: test/integration, test/contract, test/adversarial
    // and any folder added later.
    testMatch: ['<rootDir>/test/**/*.test.ts'],
    testPathIgnorePatterns: [
      '/node_modules/',
      ...underFolders(['<rootDir>/test/unit', ...slowFolders]),
      ...exactly(slowFiles),
      `${escapeRegExp(slowSuffix)}$`,
    ],
  },
  {
    ...shared,
    ...removeCdkOutput,
    // For a slow test on the local stack (startTestStack); the ones that stop DynamoDB start their own.
    ...sharedDynamoDb,
    displayName: 'slow',
    testMatch: [...slowFiles, `<rootDir>/test/**/*${slowSuffix}`],
    testPathIgnorePatterns: ['/node_modules/', ...underFolders([infraFolder])],
  },
  /*
   * The CDK tests, in the slow tier too, as a project of their own so that their setup runs only when
   * one of them is in the run: it starts the app's one synthesis (test/infra/support.ts reads it), which
   * runs while the tests do, and the run's DynamoDB Local unless another tier's setup already has.
   */
  {
    ...shared,
    displayName: 'slow',
    testMatch: [`${infraFolder}/**/*.test.ts`],
    // The shared synthesis runs beside the tests: each file waits for it first.
    setupFilesAfterEnv: [...removeCdkOutput.setupFilesAfterEnv, '<rootDir>/test/infra/shared-synthesis.ts'],
    globalSetup: '<rootDir>/test/infra/global-setup.js',
    globalTeardown: '<rootDir>/test/infra/global-teardown.js',
  },
];

/*
 * TEST_TIER picks one tier (the test:* scripts). Not --selectProjects: that option takes every
 * argument after it as a project name, so `npm run test:unit -- some/file.test.ts` would not filter.
 */
const tier = process.env.TEST_TIER;
const projects = tier ? tiers.filter((project) => project.displayName === tier) : tiers;
if (projects.length === 0) {
  throw new Error(
    `TEST_TIER=${tier} names no tier: ${tiers.map((project) => project.displayName).join(', ')}`,
  );
}

/** @type {import('jest').Config} */
export default {
  projects,
  // With no durations from a last run (a clean clone), the files that wait on processes go first.
  testSequencer: '<rootDir>/test/support/sequencer.js',
  // Every tier's, before any project's own setup: the payment SDKs the moduleNameMapper above points at.
  globalSetup: '<rootDir>/test/support/payment-sdks.js',
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  testTimeout: 60_000,
  /*
   * Three workers on two cores: the suite waits on DynamoDB Local, the gateway sandbox, child processes
   * and Chromium for about a third of its time, so a third worker fills that wait (measured: 3m27s with
   * three against 4m35s with two on the same loaded machine; four gave no more).
   */
  maxWorkers: 3,
  /*
   * How long a worker has to end once Jest is done with it, before Jest kills it and prints "a worker
   * process has failed to exit gracefully". Jest's 500 ms is shorter than a worker's own exit on a
   * loaded machine: measured with the payments feature at load 13-20 on the two cores, every worker
   * had nothing left running (no timer, socket or child; its 'exit' event came 0-20 ms after Jest's
   * end message), and the warning came anyway, 4 runs of 4: what remained was the process giving
   * back its 200-500 MB, which took a 450 MB Node process 340-770 ms after its 'exit' event at that
   * load. A handle left open (a timer of the gateway SDKs' backstop, say) still holds a worker far
   * longer than this, and still gets the warning.
   */
  workerGracefulExitTimeout: 3_000,
};
