import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { floors, packageFloor } from './layers.js';

/**
 * The "Layout" table of docs/ARCHITECTURE.md, made from the tree: every endpoint folder under
 * functions/, every floor of lib/ (scripts/layers.js) and the folders below. `npm run layout` rewrites
 * the table between its markers; test/unit/layout.test.ts fails when the page's table is not what the
 * tree gives, or when a folder has no description here (or a description names a folder that is gone).
 * Links in the descriptions are relative to docs/, where the table lives.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const BEGIN = '<!-- layout:begin (npm run layout writes this table from the tree) -->';
const END = '<!-- layout:end -->';
export const layoutPage = join(root, 'docs', 'ARCHITECTURE.md');

/** Folders outside functions/ and lib/, by path: what each holds. */
const described: Record<string, string> = {
  'local/': '`npm start`: DynamoDB Local, the API Gateway adapter, the stream poller, local keys',
  'local/gateway-sandbox/': 'the Stripe and Square test double the real SDKs talk to locally',
  'local/console/':
    'the developer console (`GET /console`, local only): its page and its browser script, bundled with the SDK',
  'infra/': 'the CDK app ([DEPLOY.md](DEPLOY.md))',
  'scripts/': "`npm run openapi`, `npm run layout`, `npm run deploy-costs`, lib/'s floors (`layers.js`)",
  'scripts/admin/':
    '`npm run admin`: API keys, card-tag keys, users (operator tooling; nothing in the service imports it)',
  'bench/': '`npm run bench` ([PERFORMANCE.md](PERFORMANCE.md))',
  'packages/sdk/': 'the client SDK ([packages/sdk/README.md](../packages/sdk/README.md))',
  'docs/':
    'the API, the envelope format, the architecture, deployment, the threat model, the OpenAPI document',
  'test/': 'the tests, in three tiers (jest.config.js): unit, integration, slow',
  'test/unit/': 'pure logic: no DynamoDB, no network',
  'test/usecases/':
    'use cases below HTTP, on DynamoDB Local: the decisions of claims, matches, payments, key lifecycle, webhook scheduling',
  'test/integration/': 'the service over HTTP on the local stack and DynamoDB Local',
  'test/contract/': 'the OpenAPI document against the service, lint rules and boundaries',
  'test/adversarial/': 'fuzzing, tampering, OWASP checks, secrets in logs and tables',
  'test/infra/': 'CDK assertions on the synthesized stacks, bundles',
  'test/browser/': 'headless Chromium: the API reference, the console, the SDK, rendered receipts',
  'test/sdk/': 'the SDK against the service',
  'test/support/': 'test helpers: the local stack, processes, fixtures',
  'test/vendor/': 'third-party test vectors',
};

const subfolders = (path: string): string[] =>
  readdirSync(join(root, path), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();

const code = (text: string) => `\`${text}\``;

export function layoutTable(): string {
  const rows: [string, string][] = [
    [
      code('functions/routes.ts'),
      'the route table: every route declaration, read by the CDK app and the local server',
    ],
  ];
  for (const feature of subfolders('functions')) {
    const endpoints = subfolders(`functions/${feature}`);
    rows.push([
      code(`functions/${feature}/`),
      `one folder per Lambda (\`route.ts\`, or \`function.ts\` without a path, beside \`handler.ts\`): ${endpoints.map(code).join(', ')}`,
    ]);
  }
  const libFolders = subfolders('lib');
  const declared = floors.flatMap((floor) => Object.keys(floor));
  const undeclared = libFolders.filter((folder) => !declared.includes(folder));
  if (undeclared.length) {
    throw new Error(`lib/${undeclared[0]} is on no floor: add it to scripts/layers.js`);
  }
  for (const [name, what] of Object.entries(packageFloor)) {
    rows.push([
      code(`packages/${name}/`),
      `floor 0, under lib/ (imported by name by lib/ and the SDK): ${what}`,
    ]);
  }
  floors.forEach((floor, level) => {
    for (const [folder, what] of Object.entries(floor)) {
      if (!libFolders.includes(folder))
        throw new Error(`scripts/layers.js names lib/${folder}, which is gone`);
      rows.push([code(`lib/${folder}/`), `floor ${level + 1}: ${what}`]);
    }
  });
  const present = new Set(
    ['local', 'infra', 'scripts', 'bench', 'docs', 'packages', 'test'].flatMap((top) => [
      `${top}/`,
      ...subfolders(top).map((sub) => `${top}/${sub}/`),
    ]),
  );
  const ignored = new Set([
    'bench/lib/',
    'bench/results/',
    'bench/types/',
    'infra/payment-sdks/',
    'packages/',
    ...Object.keys(packageFloor).map((name) => `packages/${name}/`),
  ]);
  for (const path of [...present].sort()) {
    if (ignored.has(path)) continue;
    const what = described[path];
    if (!what) throw new Error(`${path} has no description in scripts/layout.ts`);
    rows.push([code(path), what]);
  }
  for (const path of Object.keys(described)) {
    if (!present.has(path)) throw new Error(`scripts/layout.ts describes ${path}, which is gone`);
  }
  return ['| path | what |', '|---|---|', ...rows.map(([path, what]) => `| ${path} | ${what} |`)].join('\n');
}

/** The page with its table made anew. */
export function withLayout(page: string): string {
  const begin = page.indexOf(BEGIN);
  const end = page.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`docs/ARCHITECTURE.md has no ${BEGIN} … ${END} markers`);
  return `${page.slice(0, begin + BEGIN.length)}\n${layoutTable()}\n${page.slice(end)}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(layoutPage, withLayout(readFileSync(layoutPage, 'utf8')));
  console.log('Wrote the layout table of docs/ARCHITECTURE.md');
}
