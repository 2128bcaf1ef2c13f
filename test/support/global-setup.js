// Jest loads global setup outside its module transform, so the TypeScript launcher is loaded through tsx.
import { tsImport } from 'tsx/esm/api';

/** One in-memory DynamoDB Local for the whole run; every test file creates its own uniquely prefixed tables. */
export default async function globalSetup() {
  const { startDynamoDbLocal } = await tsImport('../../local/dynamodb-local.ts', import.meta.url);
  const ddb = await startDynamoDbLocal();
  globalThis.__DYNAMODB_LOCAL__ = ddb;
  process.env.TEST_DYNAMODB_ENDPOINT = ddb.endpoint;
}
