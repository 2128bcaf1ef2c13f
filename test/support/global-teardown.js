export default async function globalTeardown() {
  await globalThis.__DYNAMODB_LOCAL__?.stop();
}
