// Jest loads global setup outside its module transform, so TypeScript is loaded through tsx.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tsImport } from 'tsx/esm/api';
import startDynamoDbLocal from '../support/global-setup.js';

/**
 * The infra tier's setup: the app synthesized once for the run (test/infra/support.ts reads it), and
 * the run's DynamoDB Local (the api-docs bundle is run against it), started side by side.
 *
 * The synthesis is `cdk synth` without the CLI: infra/app.ts as it deploys, cdk-nag included, stage
 * `test`, esbuild skipped as the template tests always have (the bundle tests bundle for real). When
 * cdk-nag refuses the app, the templates are still written: test/infra/nag.test.ts reports the
 * findings, and every other file still runs.
 */
export default async function infraGlobalSetup() {
  const { synthesizeApp } = await tsImport('../../infra/cloud-assembly.ts', import.meta.url);
  const projectRoot = join(import.meta.dirname, '..', '..');
  const outdir = mkdtempSync(join(tmpdir(), 'receipt-service-infra-tests-'));
  globalThis.__INFRA_TEST_ASSEMBLY__ = outdir;
  // Both settle before either failure is reported, so teardown finds the emulator it has to stop.
  const [synthesized, started] = await Promise.allSettled([
    synthesizeApp(projectRoot, outdir, { stage: 'test', 'aws:cdk:bundling-stacks': [] }),
    startDynamoDbLocal(),
  ]);
  if (started.status === 'rejected') throw started.reason;
  if (synthesized.status === 'rejected') throw synthesized.reason;
  const synthesis = synthesized.value;
  if (synthesis.code !== 0 && !refusedByValidation(outdir)) {
    throw new Error(`The infra tests' synthesis of infra/app.ts failed:\n${synthesis.stderr}`);
  }
  process.env.INFRA_TEST_ASSEMBLY = outdir;
}

/** True when the assembly was written and a validation plugin (cdk-nag) is what failed the synth. */
function refusedByValidation(outdir) {
  const report = join(outdir, 'validation-report.json');
  if (!existsSync(join(outdir, 'manifest.json')) || !existsSync(report)) return false;
  const { pluginReports } = JSON.parse(readFileSync(report, 'utf8'));
  return pluginReports.some((plugin) => plugin.conclusion === 'failure');
}
