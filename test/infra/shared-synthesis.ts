import { beforeAll } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { patience, pollUntil } from '../support/processes.js';

/*
 * Each infra file's setup: the shared synthesis, which test/infra/global-setup.js runs beside the
 * tests, has ended. It writes its outcome once the assembly is complete; a synthesis that failed fails
 * every infra file with its error output (a cdk-nag refusal is not a failure here: nag.test.ts reports it).
 */
const outcomeFile = process.env.INFRA_TEST_SYNTHESIS;
if (!outcomeFile) throw new Error('INFRA_TEST_SYNTHESIS is not set: run the infra tests with `npm test`');
// One synthesis on a loaded two-core machine takes 10-20 s.
const waitMs = patience(180_000);
beforeAll(async () => {
  const outcome = await pollUntil(
    'the shared synthesis of infra/app.ts',
    async () =>
      existsSync(outcomeFile)
        ? (JSON.parse(readFileSync(outcomeFile, 'utf8')) as { ok: boolean; error?: string })
        : undefined,
    { timeoutMs: waitMs, intervalMs: 100 },
  );
  if (!outcome.ok) throw new Error(outcome.error);
}, waitMs + 10_000);
