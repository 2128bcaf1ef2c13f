/**
 * The SDK's tarball carries receipt-core (bundleDependencies), so an app installs the SDK alone. In
 * the repository receipt-core is a workspace link in the root node_modules, which npm pack does not
 * bundle; `prepack` puts a real copy (its package.json and built dist/) in the SDK's own node_modules,
 * where npm pack finds it, and `postpack` (`--remove`) takes it away again.
 */
import { cp, mkdir, readFile, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const sdk = join(dirname(fileURLToPath(import.meta.url)), '..');
const core = join(sdk, '..', 'receipt-core');
const staged = join(sdk, 'node_modules', '@receipt-service', 'receipt-core');

/*
 * npm installs no dependency of a bundled package: receipt-core's own (canonicalize, @noble/hashes)
 * are the SDK's dependencies too, at the same ranges, so an app gets them beside the SDK.
 */
const read = async (dir) => JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
const [sdkManifest, coreManifest] = await Promise.all([read(sdk), read(core)]);
const missing = Object.entries(coreManifest.dependencies ?? {}).filter(
  ([name, range]) => sdkManifest.dependencies?.[name] !== range,
);
if (missing.length > 0) {
  const names = missing.map(([name, range]) => `${name}@${range}`).join(', ');
  throw new Error(
    `packages/sdk/package.json must depend on receipt-core's dependencies as it does: ${names}`,
  );
}

await rm(staged, { recursive: true, force: true });
if (!process.argv.includes('--remove')) {
  await mkdir(staged, { recursive: true });
  await cp(join(core, 'package.json'), join(staged, 'package.json'));
  await cp(join(core, 'dist'), join(staged, 'dist'), { recursive: true });
}
