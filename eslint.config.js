import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import js from '@eslint/js';
import { featureImports, floors, packageFloor } from './scripts/layers.js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';

const root = import.meta.dirname;

const zodNamespaceOnly = {
  selector:
    "ImportDeclaration[source.value='zod'] > :matches(ImportSpecifier[imported.name='z'], ImportDefaultSpecifier)",
  message:
    "Use `import * as z from 'zod'`: the `z` object holds all of zod, every locale included, and esbuild cannot leave any of it out of a Lambda bundle (~470 KB against ~105 KB).",
};

/*
 * Import boundaries. Each zone forbids files under `target` to import anything that resolves under
 * `from`; imports are resolved (sources import `./x.js` for `./x.ts`), so a relative path, a dynamic
 * import() and an `import type` are all caught. test/contract/boundaries.test.ts lints a wrong import
 * for every zone and fails if one stops being reported.
 *
 * "Nothing a Lambda bundles reaches local/" follows from the first two zones: a function bundles
 * functions/ and lib/ and their packages, and neither may import local/, infra/, bench/ or scripts/.
 * infra/bundle-guard.ts checks the same on every real bundle at synth time.
 */
const outside = ['functions', 'local', 'infra', 'bench', 'scripts', 'test'];

/*
 * lib/'s floors (scripts/layers.js): each folder's zone forbids every floor above it, and on the
 * use-case floor every feature it does not name in `featureImports`.
 */
const floorFolders = floors.map((floor) => Object.keys(floor));
const lib = (folder) => `lib/${folder}`;
const layerZones = floorFolders
  .flatMap((floor, level) => {
    const above = floorFolders.slice(level + 1).flat();
    return floor.map((folder) => {
      const siblings = floor.filter((other) => other !== folder);
      const allowedSiblings = featureImports[folder] ?? [];
      const forbidden = [...above, ...siblings.filter((other) => !allowedSiblings.includes(other))];
      return {
        target: lib(folder),
        from: forbidden.map(lib),
        message:
          `lib/${folder} stands on floor ${level + 1} of lib/: it imports only the floors below it` +
          (allowedSiblings.length ? ` and ${allowedSiblings.map(lib).join(', ')}` : '') +
          ' (docs/ARCHITECTURE.md).',
      };
    });
  })
  .filter((zone) => zone.from.length > 0);

/*
 * An endpoint's folder (functions/<feature>/<endpoint>/) tells its whole story: it imports lib/ and its
 * own files, never another endpoint's folder. What two endpoints share lives in lib/.
 */
const endpointFolders = readdirSync(join(root, 'functions'), { withFileTypes: true })
  .filter((feature) => feature.isDirectory())
  .flatMap((feature) =>
    readdirSync(join(root, 'functions', feature.name), { withFileTypes: true })
      .filter((endpoint) => endpoint.isDirectory())
      .map((endpoint) => `functions/${feature.name}/${endpoint.name}`),
  );
const endpointZones = endpointFolders.map((folder) => ({
  target: folder,
  from: endpointFolders.filter((other) => other !== folder),
  message:
    "An endpoint folder imports lib/ and its own files, never another endpoint's folder: move what they share into lib/.",
}));

/*
 * Workspace packages (packages/*) are imported by name, never by a path into another package's src/:
 * what an app installs and what the service runs must be the same package. A package's own tests
 * (test/sdk for the SDK) may reach its internals. The packages on lib/'s floor 0 (scripts/layers.js)
 * import nothing of the repository around them.
 */
const repositoryFolders = ['lib', 'functions', 'local', 'infra', 'bench', 'scripts', 'test'];
/** The test/ folder that holds a package's own tests. */
const packageTests = { sdk: 'sdk' };
const packageNames = readdirSync(join(root, 'packages'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);
const packageZones = packageNames.flatMap((name) => {
  const others = packageNames.filter((other) => other !== name).map((other) => `packages/${other}`);
  const ownTests = packageTests[name];
  const importers = ownTests
    ? [...repositoryFolders.filter((folder) => folder !== 'test'), 'test/*.ts', `test/!(${ownTests})/**`]
    : repositoryFolders;
  const zones = [
    {
      target: [...importers, ...others],
      from: [`packages/${name}/src`],
      message: `Import @receipt-service/${name} by its package name, never another package's src/ by path.`,
    },
  ];
  if (name in packageFloor) {
    zones.push({
      target: `packages/${name}`,
      from: [...repositoryFolders, ...others],
      message: `packages/${name} is floor 0, under lib/: it imports its own files and its declared packages only.`,
    });
  }
  return zones;
});

const boundaryZones = [
  {
    target: 'lib',
    from: outside,
    message:
      'lib/ is the service itself: it must not depend on handlers, the local stack, infrastructure, benchmarks, scripts or tests.',
  },
  {
    target: 'functions',
    from: ['infra', 'local', 'bench', 'scripts', 'test'],
    message:
      'A handler is bundled into a Lambda: it may import lib/ and packages, never infrastructure or the local stack.',
  },
  ...endpointZones,
  ...layerZones,
  ...packageZones,
  {
    target: 'local',
    from: ['scripts'],
    message:
      'local/ runs the service on this machine: it calls the use cases in lib/, never the admin scripts (scripts/).',
  },
  {
    target: 'lib/crypto',
    from: ['node_modules/@aws-sdk', 'node_modules/@smithy', 'node_modules/@aws-lambda-powertools'],
    message:
      'lib/crypto is pure cryptography: AWS wiring belongs in lib/wiring (the KMS escrow key is lib/wiring/kms-escrow.ts).',
  },
  {
    target: 'lib/crypto',
    from: ['lib/kernel/errors.ts'],
    message:
      'lib/crypto throws its own errors (lib/crypto/errors.ts); lib/http/error-envelope.ts maps them to HTTP.',
  },
  {
    // Service code only: benchmarks and tests may measure or drive an SDK directly, and the gateway
    // sandbox signs Stripe's events with the SDK's own generateTestHeaderString, as Stripe would.
    target: [
      'lib/!(gateways)/**',
      'lib/gateways/!(stripe|stripe-client).ts',
      'functions/**',
      'local/*.ts',
      'local/!(gateway-sandbox)/**',
      'scripts/**',
    ],
    from: ['node_modules/stripe/**'],
    message:
      'Only the gateway_a adapter (lib/gateways/stripe.ts, stripe-client.ts) and the gateway sandbox import `stripe`.',
  },
  {
    target: [
      'lib/!(gateways)/**',
      'lib/gateways/!(square|square-client).ts',
      'functions/**',
      'local/**',
      'scripts/**',
    ],
    from: ['node_modules/square/**'],
    message: 'Only the gateway_b adapter (lib/gateways/square.ts, square-client.ts) imports `square`.',
  },
];

/** No filesystem in lib/crypto: keys come in as values, and the key file of the local stack is local/'s. */
const filesystemModules = ['fs', 'node:fs', 'fs/promises', 'node:fs/promises'];
const noFilesystemMessage =
  'lib/crypto does not touch the filesystem: key files are read by their owners (local/escrow-key.ts).';

export default tseslint.config(
  {
    ignores: ['node_modules/', 'cdk.out/', '.local-data/', 'coverage/', 'bench/results/', 'packages/*/dist/'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['warn', 'error'] }],
      'no-restricted-syntax': ['error', zodNamespaceOnly],
    },
  },
  {
    files: ['**/*.{ts,js,mjs}'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.mts'] },
      'import-x/extensions': ['.ts', '.mts', '.js', '.mjs'],
      'import-x/resolver-next': [
        createNodeResolver({
          extensions: ['.ts', '.mjs', '.js', '.json', '.node'],
          extensionAlias: { '.js': ['.ts', '.js'] },
        }),
      ],
    },
    rules: {
      'import-x/no-restricted-paths': ['error', { basePath: root, zones: boundaryZones }],
      // No import cycle anywhere, type-only imports included: a cycle is a layer that is not one.
      'import-x/no-cycle': ['error', { ignoreExternal: true, allowUnsafeDynamicCyclicDependency: false }],
    },
  },
  {
    files: ['lib/crypto/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: filesystemModules.map((name) => ({ name, message: noFilesystemMessage })) },
      ],
      'no-restricted-syntax': [
        'error',
        zodNamespaceOnly,
        {
          selector: `ImportExpression[source.value=/^(node:)?fs(\\u002Fpromises)?$/]`,
          message: noFilesystemMessage,
        },
      ],
    },
  },
  {
    // The SDK runs in browsers and React Native as well: WebCrypto and fetch only, no Node modules
    // (its tsconfig has no Node types, so Buffer and process do not compile either).
    files: ['packages/*/src/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(node:|(fs|path|crypto|buffer|os|util|stream|http|https|url)(/|$))',
              message: 'The SDK uses platform APIs (WebCrypto, fetch, TextEncoder) only.',
            },
          ],
        },
      ],
    },
  },
  /*
   * Every package a file imports is declared by the package.json that ships it: what lib/ and functions/
   * import goes into a Lambda bundle, so it is a dependency (`npm audit --omit=dev` then covers every
   * package that ships); a workspace package declares its own; the rest of the repository (the local
   * stack, infra, scripts, benchmarks, tests) may use devDependencies. Type-only imports are not checked.
   */
  {
    files: ['**/*.{ts,js,mjs}'],
    rules: {
      'import-x/no-extraneous-dependencies': [
        'error',
        { devDependencies: true, optionalDependencies: false, peerDependencies: false, packageDir: root },
      ],
    },
  },
  {
    files: ['lib/**', 'functions/**'],
    rules: {
      'import-x/no-extraneous-dependencies': [
        'error',
        { devDependencies: false, optionalDependencies: false, peerDependencies: false, packageDir: root },
      ],
    },
  },
  ...packageNames.map((name) => ({
    files: [`packages/${name}/src/**`],
    rules: {
      'import-x/no-extraneous-dependencies': [
        'error',
        {
          devDependencies: false,
          optionalDependencies: false,
          // The SDK's PDF entry point imports jsPDF, an optional peer the app installs.
          peerDependencies: true,
          packageDir: join(root, 'packages', name),
        },
      ],
    },
  })),
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    files: ['**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly' } },
  },
  {
    files: ['local/**', 'scripts/**', 'bench/**', 'test/**'],
    rules: { 'no-console': 'off' },
  },
);
