import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { ESLint } from 'eslint';
import { nodeImport } from '../support/node-import.js';

/*
 * The import boundaries of eslint.config.js, held to account: each fixture breaks one boundary (or
 * none) and is linted with the project's own configuration, exactly as `npm run lint` would lint it,
 * as if it were the file of the same path in the tree. Fixtures end in `.fixture` so that tsc and
 * `eslint .` leave them alone where they are stored: their imports mean something only from the
 * place they stand in for.
 */
const root = join(import.meta.dirname, '../..');
const fixtures = join(import.meta.dirname, 'fixtures/boundaries');

const PATHS = 'import-x/no-restricted-paths';

const FLOOR = `${PATHS}: lib/`;
const CYCLE = 'import-x/no-cycle: Dependency cycle';
const EXTRANEOUS = 'import-x/no-extraneous-dependencies';

/** What each fixture must produce: one entry per reported problem, as `rule: part of the message`. */
const expected: Record<string, string[]> = {
  // lib/ against everything outside it
  'lib/imports-functions.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/imports-local.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/imports-infra.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/imports-bench.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/imports-scripts.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/db/dynamic-import-local.ts': [`${PATHS}: lib/ is the service itself`],
  // lib/'s floors: each forbidden direction, once per floor
  'lib/kernel/imports-crypto.ts': [`${FLOOR}kernel stands on floor 1`],
  'lib/crypto/imports-db.ts': [`${FLOOR}crypto stands on floor 2`],
  'lib/gateways/imports-crypto.ts': [`${FLOOR}gateways stands on floor 2`],
  'lib/db/imports-api-keys.ts': [`${FLOOR}db stands on floor 3`],
  'lib/api-keys/imports-app.ts': [`${FLOOR}api-keys stands on floor 4`],
  'lib/app/imports-receipts.ts': [`${FLOOR}app stands on floor 5`],
  'lib/access/imports-http.ts': [`${FLOOR}access stands on floor 6`],
  'lib/transactions/imports-receipts.ts': [`${FLOOR}transactions stands on floor 6`],
  'lib/receipts/imports-payments.ts': [`${FLOOR}receipts stands on floor 6`],
  'lib/users/imports-receipts.ts': [`${FLOOR}users stands on floor 6`],
  'lib/http/imports-wiring.ts': [`${FLOOR}http stands on floor 7`],
  'lib/openapi/imports-http.ts': [`${FLOOR}openapi stands on floor 7`],
  // a cycle (log.ts imports lru.ts; this lru.ts imports log.ts back)
  'lib/kernel/lru.ts': [CYCLE],
  // crypto's own rules
  'lib/crypto/imports-aws-sdk.ts': [`${PATHS}: lib/crypto is pure cryptography`],
  'lib/crypto/imports-fs.ts': ['no-restricted-imports: lib/crypto does not touch the filesystem'],
  'lib/crypto/dynamic-import-fs.ts': ['no-restricted-syntax: lib/crypto does not touch the filesystem'],
  'lib/crypto/imports-http-errors.ts': [`${PATHS}: lib/crypto throws its own errors`],
  // the payment SDKs stay in their adapters
  'lib/payments/imports-stripe.ts': [`${PATHS}: Only the gateway_a adapter`],
  'lib/receipts/imports-square.ts': [`${PATHS}: Only the gateway_b adapter`],
  'lib/gateways/registry-imports-stripe.ts': [`${PATHS}: Only the gateway_a adapter`],
  'local/imports-square.ts': [`${PATHS}: Only the gateway_b adapter`],
  // functions/
  'functions/platform/health/imports-infra.ts': [`${PATHS}: A handler is bundled into a Lambda`],
  'functions/platform/health/imports-local.ts': [`${PATHS}: A handler is bundled into a Lambda`],
  'functions/receipts/get-receipt/imports-other-endpoint.ts': [`${PATHS}: An endpoint folder imports lib/`],
  // workspace packages: by name only, floor 0 under lib/ (scripts/layers.js)
  'lib/imports-package-src.ts': [`${PATHS}: Import @receipt-service/receipt-core by its package name`],
  'local/imports-sdk-src.ts': [`${PATHS}: Import @receipt-service/sdk by its package name`],
  'test/integration/imports-sdk-src.ts': [`${PATHS}: Import @receipt-service/sdk by its package name`],
  'packages/receipt-core/src/imports-lib.ts': [`${PATHS}: packages/receipt-core is floor 0`],
  // local/ calls lib/'s use cases, not the admin scripts
  'local/imports-scripts.ts': [`${PATHS}: local/ runs the service on this machine`],
  // dependencies where they belong (package.json)
  'lib/imports-dev-dependency.ts': [
    `${EXTRANEOUS}: 'aws-sdk-client-mock' should be listed in the project's dependencies, not devDependencies`,
  ],
  'lib/imports-undeclared.ts': [
    `${EXTRANEOUS}: '@smithy/signature-v4' should be listed in the project's dependencies`,
  ],
  'packages/sdk/src/imports-undeclared.ts': [
    `${EXTRANEOUS}: 'zod' should be listed in the project's dependencies`,
  ],
  // what each rule still allows
  'lib/allowed-packages.ts': [],
  'test/sdk/imports-own-src.ts': [],
  'lib/wiring/allowed.ts': [],
  'lib/crypto/allowed.ts': [],
  'lib/payments/allowed.ts': [],
  'lib/gateways/stripe-client.ts': [],
  'lib/gateways/square.ts': [],
  'functions/platform/health/allowed.ts': [],
  'functions/receipts/get-receipt/allowed.ts': [],
  'local/allowed.ts': [],
};

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

async function fixtureFiles(): Promise<string[]> {
  const entries = await readdir(fixtures, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(fixtures, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
}

describe('import boundaries (eslint.config.js)', () => {
  let eslint: ESLint;
  const problems = new Map<string, string[]>();

  beforeAll(async () => {
    // Through Node's own loader: ESLint imports eslint.config.js, an ES module.
    const { ESLint: Linter } = await nodeImport<typeof import('eslint')>('eslint');
    eslint = new Linter({ cwd: root });
    for (const file of await fixtureFiles()) {
      const standsFor = file.replace(/\.fixture$/, '');
      const [result] = await eslint.lintText(await readFile(join(fixtures, file), 'utf8'), {
        filePath: join(root, standsFor),
      });
      if (!result) throw new Error(`ESLint returned no result for ${file}`);
      problems.set(
        standsFor,
        result.messages.map((message) => `${message.ruleId ?? 'fatal'}: ${message.message}`),
      );
    }
  });

  it('has an expectation for every fixture, and a fixture for every expectation', async () => {
    const files = (await fixtureFiles()).map((file) => file.replace(/\.fixture$/, ''));
    expect(files).toEqual(Object.keys(expected).sort());
  });

  it.each(Object.entries(expected).filter(([, wanted]) => wanted.length > 0))(
    '%s is refused, and for that reason only',
    (file, wanted) => {
      const found = problems.get(file) ?? [];
      expect(found).toHaveLength(wanted.length);
      wanted.forEach((want, index) => {
        const [rule, reason] = want.split(': ') as [string, string];
        expect(found[index]).toMatch(new RegExp(`^${escape(rule)}: .*${escape(reason)}`));
      });
    },
  );

  it.each(Object.entries(expected).filter(([, wanted]) => wanted.length === 0))('%s is accepted', (file) => {
    expect(problems.get(file)).toEqual([]);
  });
});

/*
 * ESLint's no-cycle skips type-only imports; dependency-cruiser's no-circular (.dependency-cruiser.cjs,
 * run by `npm run lint`) does not. Two files that import each other's types only are copied into a
 * folder of their own and cruised with the project's configuration.
 */
describe('import cycles (.dependency-cruiser.cjs)', () => {
  const cruise = async (files: Record<string, string>) => {
    const dir = await mkdtemp(join(tmpdir(), 'cycle-'));
    try {
      for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
      const { cruise: run } = await nodeImport<typeof import('dependency-cruiser')>('dependency-cruiser');
      const require = createRequire(import.meta.url);
      const config = require(join(root, '.dependency-cruiser.cjs')) as {
        forbidden: unknown[];
        options: object;
      };
      const result = await run([dir], {
        ...config.options,
        ruleSet: { forbidden: config.forbidden },
        tsConfig: undefined,
        validate: true,
      } as never);
      const output = result.output as {
        summary: { violations: { rule: { name: string }; cycle?: unknown[] }[] };
      };
      return output.summary.violations;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };

  it('reports a cycle held together by type-only imports', async () => {
    const violations = await cruise({
      'a.ts': "import type { B } from './b.js';\nexport interface A { b?: B }\n",
      'b.ts': "import type { A } from './a.js';\nexport interface B { a?: A }\n",
    });
    expect(violations.map((violation) => violation.rule.name)).toContain('no-circular');
  });

  it('reports nothing for the same files without the loop', async () => {
    const violations = await cruise({
      'a.ts': "import type { B } from './b.js';\nexport interface A { b?: B }\n",
      'b.ts': 'export interface B { name: string }\n',
    });
    expect(violations).toEqual([]);
  });
});
