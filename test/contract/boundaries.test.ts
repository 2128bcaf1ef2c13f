import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { ESLint } from 'eslint';

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

/** What each fixture must produce: one entry per reported problem, as `rule: part of the message`. */
const expected: Record<string, string[]> = {
  'lib/imports-functions.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/imports-local.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/imports-infra.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/imports-bench.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/imports-scripts.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/db/dynamic-import-local.ts': [`${PATHS}: lib/ is the service itself`],
  'lib/crypto/imports-aws-sdk.ts': [`${PATHS}: lib/crypto is pure cryptography`],
  'lib/crypto/imports-fs.ts': ['no-restricted-imports: lib/crypto does not touch the filesystem'],
  'lib/crypto/dynamic-import-fs.ts': ['no-restricted-syntax: lib/crypto does not touch the filesystem'],
  'lib/crypto/imports-http-errors.ts': [`${PATHS}: lib/crypto throws its own errors`],
  'lib/payments/imports-stripe.ts': [`${PATHS}: Only the gateway_a adapter`],
  'lib/receipts/imports-square.ts': [`${PATHS}: Only the gateway_b adapter`],
  'lib/gateways/registry-imports-stripe.ts': [`${PATHS}: Only the gateway_a adapter`],
  'local/imports-square.ts': [`${PATHS}: Only the gateway_b adapter`],
  'functions/health/imports-infra.ts': [`${PATHS}: A handler is bundled into a Lambda`],
  'functions/health/imports-local.ts': [`${PATHS}: A handler is bundled into a Lambda`],
  'lib/wiring/allowed.ts': [],
  'lib/crypto/allowed.ts': [],
  'lib/gateways/stripe-client.ts': [],
  'lib/gateways/square.ts': [],
  'functions/health/allowed.ts': [],
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
    eslint = new ESLint({ cwd: root });
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
