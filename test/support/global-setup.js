// Jest loads global setup outside its module transform, so the TypeScript launcher is loaded through tsx.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tsImport } from 'tsx/esm/api';

/** One in-memory DynamoDB Local for the whole run; every test file creates its own uniquely prefixed tables. */
export default async function globalSetup() {
  // The infra tier's setup (test/infra/global-setup.js) calls this too: one emulator for the run.
  if (globalThis.__DYNAMODB_LOCAL__) return;
  const { startDynamoDbLocal } = await tsImport('../../local/dynamodb-local.ts', import.meta.url);
  const { patience } = await tsImport('./processes.ts', import.meta.url);
  // A loaded CI machine can take well over a minute to start the JVM.
  const starting = startDynamoDbLocal({ readyTimeoutMs: patience(60_000) }).then((ddb) => {
    globalThis.__DYNAMODB_LOCAL__ = ddb;
    // Jest skips global teardown when a later global setup fails: the emulator must not outlive the run.
    process.once('exit', () => ddb.kill());
    return ddb;
  });
  // All settle before any failure is reported, so that the emulator is always the exit handler's.
  const [started, ...written] = await Promise.allSettled([
    starting,
    writeOpenApiDocument(),
    writeEscrowKey(),
  ]);
  if (started.status === 'rejected') throw started.reason;
  for (const outcome of written) if (outcome.status === 'rejected') throw outcome.reason;
  process.env.TEST_DYNAMODB_ENDPOINT = started.value.endpoint;
}

/**
 * One escrow key for the run's test stacks (test/support/escrow-key.ts says why). The folder (0700, the
 * key file 0600) is removed by the global teardown.
 */
async function writeEscrowKey() {
  const folder = mkdtempSync(join(tmpdir(), 'receipt-service-escrow-'));
  globalThis.__ESCROW_KEY_FOLDER__ = folder;
  const { LocalEscrowKey } = await tsImport('../../local/escrow-key.ts', import.meta.url);
  await LocalEscrowKey.loadOrCreate(folder);
  process.env.TEST_ESCROW_KEY_DIR = folder;
}

/** The OpenAPI document every response is checked against (test/support/contract.ts), built once for the run. */
async function writeOpenApiDocument() {
  const folder = mkdtempSync(join(tmpdir(), 'receipt-service-openapi-'));
  globalThis.__OPENAPI_DOCUMENT_FOLDER__ = folder;
  const { openApiDocumentJson } = await tsImport('./openapi-document.ts', import.meta.url);
  writeFileSync(join(folder, 'openapi.json'), openApiDocumentJson());
  process.env.TEST_OPENAPI_DOCUMENT = join(folder, 'openapi.json');
}
