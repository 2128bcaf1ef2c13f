import { rmSync } from 'node:fs';
import stopDynamoDbLocal from '../support/global-teardown.js';

export default async function infraGlobalTeardown() {
  // A run whose infra files all failed early can end before the synthesis: it must not outlive the run.
  await globalThis.__INFRA_TEST_SYNTHESIS__;
  globalThis.__INFRA_TEST_SYNTHESIS__ = undefined;
  if (globalThis.__INFRA_TEST_FOLDER__)
    rmSync(globalThis.__INFRA_TEST_FOLDER__, { recursive: true, force: true });
  globalThis.__INFRA_TEST_FOLDER__ = undefined;
  await stopDynamoDbLocal();
}
