import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder beside a Lambda bundle that its route's `staticAssets` are copied into. */
export const STATIC_ASSETS_DIR = 'assets';

/**
 * Reads one of a route's `staticAssets`: in a Lambda, from `assets/` beside the bundle (the CDK
 * build copies it there, since node_modules does not ship); locally, from the package in node_modules,
 * or for the project's own files (`./docs/…`) from the project's root, as infra/service-function.ts
 * resolves them.
 */
export function readStaticAsset(modulePath: string, importMetaUrl: string): string {
  const besideBundle = join(dirname(fileURLToPath(importMetaUrl)), STATIC_ASSETS_DIR, basename(modulePath));
  if (existsSync(besideBundle)) return readFileSync(besideBundle, 'utf8');
  // Unbundled, this module is lib/http/static-assets.ts: the project's root is two folders up.
  const fromSource = modulePath.startsWith('./')
    ? fileURLToPath(new URL(`../../${modulePath.slice(2)}`, import.meta.url))
    : createRequire(importMetaUrl).resolve(modulePath);
  return readFileSync(fromSource, 'utf8');
}

/**
 * Applies exact text replacements to a vendored script; a replacement whose text is not there
 * (a new version of the package) throws, so an upgrade cannot silently drop one.
 */
export function patchScript(
  source: string,
  patches: readonly { why: string; find: string; replace: string }[],
): string {
  return patches.reduce((text, patch) => {
    const at = text.indexOf(patch.find);
    if (at < 0 || text.indexOf(patch.find, at + 1) >= 0) {
      throw new Error(`Cannot patch the script (${patch.why}): its text is not there exactly once`);
    }
    return text.slice(0, at) + patch.replace + text.slice(at + patch.find.length);
  }, source);
}
