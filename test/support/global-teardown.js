export default async function globalTeardown() {
  await globalThis.__DYNAMODB_LOCAL__?.stop();
  // The infra tier's teardown calls this too: the second call has nothing to stop.
  globalThis.__DYNAMODB_LOCAL__ = undefined;
}
