// Jest loads global setup outside its module transform, so TypeScript is loaded through tsx.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tsImport } from 'tsx/esm/api';
import startDynamoDbLocal from '../support/global-setup.js';

/**
 * The infra tier's setup: the app synthesized once for the run (test/infra/support.ts reads it), and
 * the run's DynamoDB Local (the api-docs bundle is run against it).
 *
 * The synthesis is `cdk synth` without the CLI: infra/app.ts as it deploys, cdk-nag included, stage
 * `test`, esbuild skipped as the template tests always have (the bundle tests bundle for real). When
 * cdk-nag refuses the app, the templates are still written: test/infra/nag.test.ts reports the
 * findings, and every other file still runs.
 *
 * It runs beside the tests rather than before them: it takes one core for several seconds, during
 * which nothing else would run. Each infra file waits for its outcome first (test/infra/shared-synthesis.ts),
 * which this writes beside the assembly once the assembly is complete.
 */
export default async function infraGlobalSetup() {
  const projectRoot = join(import.meta.dirname, '..', '..');
  const folder = mkdtempSync(join(tmpdir(), 'receipt-service-infra-tests-'));
  globalThis.__INFRA_TEST_FOLDER__ = folder;
  process.env.INFRA_TEST_ASSEMBLY = join(folder, 'assembly');
  process.env.INFRA_TEST_SYNTHESIS = join(folder, 'synthesis.json');
  globalThis.__INFRA_TEST_SYNTHESIS__ = synthesize(
    projectRoot,
    process.env.INFRA_TEST_ASSEMBLY,
    process.env.INFRA_TEST_SYNTHESIS,
  );
  await startDynamoDbLocal();
}

/** Never rejects: what went wrong is written for the infra files to report. */
async function synthesize(projectRoot, outdir, resultFile) {
  let outcome;
  try {
    const { synthesizeApp } = await tsImport('../../infra/cloud-assembly.ts', import.meta.url);
    const synthesis = await synthesizeApp(projectRoot, outdir, {
      stage: 'test',
      'aws:cdk:bundling-stacks': [],
    });
    outcome =
      synthesis.code === 0 || refusedByValidation(outdir)
        ? { ok: true }
        : { ok: false, error: `The infra tests' synthesis of infra/app.ts failed:\n${synthesis.stderr}` };
  } catch (error) {
    outcome = {
      ok: false,
      error: `The infra tests' synthesis of infra/app.ts failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    };
  }
  writeFileSync(resultFile, JSON.stringify(outcome));
}

/** True when the assembly was written and a validation plugin (cdk-nag) is what failed the synth. */
function refusedByValidation(outdir) {
  const report = join(outdir, 'validation-report.json');
  if (!existsSync(join(outdir, 'manifest.json')) || !existsSync(report)) return false;
  const { pluginReports } = JSON.parse(readFileSync(report, 'utf8'));
  return pluginReports.some((plugin) => plugin.conclusion === 'failure');
}
