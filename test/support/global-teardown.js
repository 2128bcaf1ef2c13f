import { rmSync } from 'node:fs';

export default async function globalTeardown() {
  await globalThis.__DYNAMODB_LOCAL__?.stop();
  // The infra tier's teardown calls this too: the second call has nothing to stop.
  globalThis.__DYNAMODB_LOCAL__ = undefined;
  for (const name of ['__OPENAPI_DOCUMENT_FOLDER__', '__ESCROW_KEY_FOLDER__']) {
    if (globalThis[name]) rmSync(globalThis[name], { recursive: true, force: true });
    globalThis[name] = undefined;
  }
}
