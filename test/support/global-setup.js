// Jest loads global setup outside its module transform, so the TypeScript launcher is loaded through tsx.
import { tsImport } from 'tsx/esm/api';

/** One in-memory DynamoDB Local for the whole run; every test file creates its own uniquely prefixed tables. */
export default async function globalSetup() {
  // The infra tier's setup (test/infra/global-setup.js) calls this too: one emulator for the run.
  if (globalThis.__DYNAMODB_LOCAL__) return;
  const { startDynamoDbLocal } = await tsImport('../../local/dynamodb-local.ts', import.meta.url);
  const { patience } = await tsImport('./processes.ts', import.meta.url);
  // A loaded CI machine can take well over a minute to start the JVM.
  const ddb = await startDynamoDbLocal({ readyTimeoutMs: patience(60_000) });
  globalThis.__DYNAMODB_LOCAL__ = ddb;
  // Jest skips global teardown when a later global setup fails: the emulator must not outlive the run.
  process.once('exit', () => ddb.kill());
  process.env.TEST_DYNAMODB_ENDPOINT = ddb.endpoint;
}
