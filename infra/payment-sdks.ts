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

export function paymentSdkBundlingCommands(projectRoot: string, outputDir: string, banner: string): string[] {
  const esbuild = join(projectRoot, 'node_modules', '.bin', 'esbuild');
  return PAYMENT_SDKS.flatMap((sdk) => {
    const target = join(outputDir, 'node_modules', sdk);
    const manifest = JSON.stringify({ name: sdk, type: 'module', exports: './index.mjs' });
    return [
      `mkdir -p ${shellQuote(target)}`,
      [
        shellQuote(esbuild),
        shellQuote(join(projectRoot, 'infra', 'payment-sdks', `${sdk}.mjs`)),
        '--bundle --platform=node --format=esm --target=node24 --minify --log-level=warning',
        `--banner:js=${shellQuote(banner)}`,
        `--outfile=${shellQuote(join(target, 'index.mjs'))}`,
      ].join(' '),
      `printf '%s' ${shellQuote(manifest)} > ${shellQuote(join(target, 'package.json'))}`,
    ];
  });
}
