// Jest loads global setup outside its module transform, so the TypeScript module is loaded through tsx.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const projectRoot = join(import.meta.dirname, '..', '..');

/**
 * Where the tests' payment SDKs are: `<dir>/node_modules/{stripe,square}/index.cjs`, the bundles a
 * payment function ships beside its own, built as CommonJS for Jest (infra/payment-sdks.ts says why).
 * jest.config.js maps `stripe` and `square` here (paymentSdkPath).
 */
export const paymentSdksDir = join(
  projectRoot,
  'node_modules',
  '.cache',
  'receipt-service-tests',
  'payment-sdks',
);

/** The bundled SDK `sdk` ('stripe' or 'square'), as jest.config.js maps it. */
export const paymentSdkPath = (sdk) => join(paymentSdksDir, 'node_modules', sdk, 'index.cjs');

/**
 * The tests load the Stripe and Square SDKs as a deployed function does: each bundled into one file by
 * infra/payment-sdks.ts's own commands, from the same entries, as CommonJS (the ES-module bundles a
 * function ships are loaded by the bundling test). Square's package is about 4,000 CommonJS files;
 * Jest's module registry, which every test file starts empty, took about a second of CPU to load them
 * file by file, and the bundle less than half of that. Built once per change of the SDKs, esbuild or
 * the commands.
 */
export default async function bundlePaymentSdks() {
  // Imported here, not at the top: jest.config.js imports this module for paymentSdksDir alone.
  const { tsImport } = await import('tsx/esm/api');
  const { paymentSdkBundlingCommands, PAYMENT_SDKS } = await tsImport(
    '../../infra/payment-sdks.ts',
    import.meta.url,
  );
  const versionOf = (name) =>
    JSON.parse(readFileSync(join(projectRoot, 'node_modules', name, 'package.json'), 'utf8')).version;
  const stamp = createHash('sha256')
    .update(JSON.stringify(paymentSdkBundlingCommands('.', '.', 'cjs')))
    .update(JSON.stringify([...PAYMENT_SDKS, 'esbuild'].map((name) => [name, versionOf(name)])))
    .update(
      PAYMENT_SDKS.map((sdk) =>
        readFileSync(join(projectRoot, 'infra', 'payment-sdks', `${sdk}.mjs`)),
      ).join(),
    )
    .digest('hex');
  const stampFile = join(paymentSdksDir, 'stamp');
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return;

  // Built aside and moved into place, so a run never reads a half-written SDK.
  mkdirSync(dirname(paymentSdksDir), { recursive: true });
  const building = mkdtempSync(`${paymentSdksDir}-`);
  try {
    for (const command of paymentSdkBundlingCommands(projectRoot, building, 'cjs')) {
      execFileSync('sh', ['-c', command], { stdio: ['ignore', 'ignore', 'pipe'] });
    }
    writeFileSync(join(building, 'stamp'), stamp);
    rmSync(paymentSdksDir, { recursive: true, force: true });
    renameSync(building, paymentSdksDir);
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    throw error;
  }
}
