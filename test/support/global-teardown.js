import { rmSync } from 'node:fs';

export default async function globalTeardown() {
  await globalThis.__DYNAMODB_LOCAL__?.stop();
  // The infra tier's teardown calls this too: the second call has nothing to stop.
  globalThis.__DYNAMODB_LOCAL__ = undefined;
  if (globalThis.__OPENAPI_DOCUMENT_FOLDER__)
    rmSync(globalThis.__OPENAPI_DOCUMENT_FOLDER__, { recursive: true, force: true });
  globalThis.__OPENAPI_DOCUMENT_FOLDER__ = undefined;
}
