import { join } from 'node:path';

/**
 * The payment SDKs are large (Square's is ~3.8 MB minified) and needed only once a gateway is used,
 * so they are not inlined into a function's bundle. Each is bundled on its own, offline, with the
 * project's esbuild into `node_modules/<sdk>/index.mjs` beside the function's index.mjs, where the
 * handler's dynamic `import('stripe')` / `import('square')` finds it on first use.
 */
export const PAYMENT_SDKS = ['stripe', 'square'] as const;

// Bundles are ESM; a CommonJS dependency that calls require() (e.g. for node: built-ins) needs one.
export const REQUIRE_BANNER =
  "import { createRequire as __receiptServiceCreateRequire } from 'node:module';" +
  'const require = __receiptServiceCreateRequire(import.meta.url);';

const shellQuote = (value: string): string => `'${value.replace(/'/g, `'\\''`)}'`;

/**
 * A function loads the bundles as ES modules (its dynamic `import('stripe')`). Jest's module registry
 * loads CommonJS only: as an ES module, Square's bundle went through Jest's transform once per test
 * project (about 2 s of CPU each) and came out 20 MB with its source map, which every test file that
 * loaded it read and compiled again. The tests take the same entries bundled as CommonJS instead.
 */
export type PaymentSdkFormat = 'esm' | 'cjs';

/** The file a bundled SDK is in, under its own `node_modules/<sdk>/` folder. */
const paymentSdkFile = (format: PaymentSdkFormat): string => (format === 'esm' ? 'index.mjs' : 'index.cjs');

export function paymentSdkBundlingCommands(
  projectRoot: string,
  outputDir: string,
  format: PaymentSdkFormat = 'esm',
): string[] {
  const esbuild = join(projectRoot, 'node_modules', '.bin', 'esbuild');
  const file = paymentSdkFile(format);
  return PAYMENT_SDKS.flatMap((sdk) => {
    const target = join(outputDir, 'node_modules', sdk);
    const manifest = JSON.stringify({
      name: sdk,
      type: format === 'esm' ? 'module' : 'commonjs',
      exports: `./${file}`,
    });
    return [
      `mkdir -p ${shellQuote(target)}`,
      [
        shellQuote(esbuild),
        shellQuote(join(projectRoot, 'infra', 'payment-sdks', `${sdk}.mjs`)),
        `--bundle --platform=node --format=${format} --target=node24 --minify --log-level=warning`,
        // CommonJS has its own require.
        ...(format === 'esm' ? [`--banner:js=${shellQuote(REQUIRE_BANNER)}`] : []),
        `--outfile=${shellQuote(join(target, file))}`,
      ].join(' '),
      `printf '%s' ${shellQuote(manifest)} > ${shellQuote(join(target, 'package.json'))}`,
    ];
  });
}
