import { rmSync } from 'node:fs';
import stopDynamoDbLocal from '../support/global-teardown.js';

export default async function infraGlobalTeardown() {
  if (globalThis.__INFRA_TEST_ASSEMBLY__)
    rmSync(globalThis.__INFRA_TEST_ASSEMBLY__, { recursive: true, force: true });
  globalThis.__INFRA_TEST_ASSEMBLY__ = undefined;
  await stopDynamoDbLocal();
}
