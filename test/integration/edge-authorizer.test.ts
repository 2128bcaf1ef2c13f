import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { ApiKeyAuthenticator, newApiKeyRecord } from '../../lib/api-key-auth.js';
import { ManualClock } from '../../lib/clock.js';
import type { ApiKeyEnvironment } from '../../lib/config.js';
import { ApiKeyRepository } from '../../lib/db/api-keys.js';
import { createDynamoClients } from '../../lib/db/client.js';
import { ensureTables } from '../../lib/db/create-tables.js';
import { edgeUsageKey, INVALID_KEY_MESSAGE } from '../../lib/edge-authorizer.js';
import { awsEdgeAuthorizerDeps } from '../../lib/edge-authorizer-aws.js';
import { createLogger } from '../../lib/log.js';
import { prefixedTableNames } from '../../lib/tables.js';
import { createHandler } from '../../functions/edge-authorizer/handler.js';

/**
 * The edge authorizer against DynamoDB Local, built by the same wiring the Lambda uses
 * (awsEdgeAuthorizerDeps from an environment like the one the CDK stack sets): the key's hash is
 * checked against the stored record, and what API Gateway receives never holds the secret.
 */
const endpoint = process.env.TEST_DYNAMODB_ENDPOINT as string;
const region = 'us-east-1';
const names = prefixedTableNames(`edge-auth-${process.pid}-${Date.now()}-`);
const { client, doc } = createDynamoClients({ region, endpoint });
const repository = new ApiKeyRepository(doc, names.apiKeys);

const METHOD_ARN = 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/POST/api/v1/receipts/encrypt';

const event = (headers: Record<string, string> | null): APIGatewayRequestAuthorizerEvent =>
  ({
    type: 'REQUEST',
    methodArn: METHOD_ARN,
    resource: '/api/v1/receipts/encrypt',
    path: '/api/v1/receipts/encrypt',
    httpMethod: 'POST',
    headers,
    multiValueHeaders: null,
    pathParameters: null,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
  }) as unknown as APIGatewayRequestAuthorizerEvent;

/** The authorizer of a production stage, wired as in Lambda. */
const liveAuthorizer = () =>
  createHandler(
    awsEdgeAuthorizerDeps({
      AWS_REGION: region,
      DYNAMODB_ENDPOINT: endpoint,
      TABLE_API_KEYS: names.apiKeys,
      API_KEY_ENVIRONMENT: 'live',
      STAGE: 'prod',
      LOG_LEVEL: 'SILENT',
    }),
  );

async function storedKey(environment: ApiKeyEnvironment = 'live') {
  const created = newApiKeyRecord(
    { name: 'Edge POS', roles: ['merchant'], tier: 'standard', environment },
    new Date(),
  );
  await repository.create(created.record);
  return { ...created, secret: created.apiKey.split('_').slice(3).join('_') };
}

const denial = (result: APIGatewayAuthorizerResult) => ({
  effect:
    result.policyDocument.Statement[0] && 'Effect' in result.policyDocument.Statement[0]
      ? result.policyDocument.Statement[0].Effect
      : undefined,
  usage: result.usageIdentifierKey,
  message: result.context?.message,
});

beforeAll(async () => {
  await ensureTables(client, names);
});

describe('edge authorizer', () => {
  it("allows a valid key with the client's usage identifier, never its secret", async () => {
    const { apiKey, record, secret } = await storedKey();
    const result = await liveAuthorizer()(event({ 'X-API-Key': apiKey }));

    expect(result.principalId).toBe(record.clientId);
    expect(result.usageIdentifierKey).toBe(edgeUsageKey(record.keyId));
    expect(result.policyDocument.Statement).toEqual([
      {
        Action: 'execute-api:Invoke',
        Effect: 'Allow',
        // Cached per key for every method of the stage, so it names them all.
        Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*',
      },
    ]);
    expect(result.context).toEqual({ clientId: record.clientId, keyId: record.keyId, tier: 'standard' });
    const answer = JSON.stringify(result);
    expect(answer).not.toContain(secret);
    expect(answer).not.toContain(apiKey);
    expect(answer).not.toContain(record.secretHash);
  });

  it('reads the header whatever its case', async () => {
    const { apiKey, record } = await storedKey();
    const result = await liveAuthorizer()(event({ 'x-api-key': apiKey }));
    expect(result.usageIdentifierKey).toBe(edgeUsageKey(record.keyId));
  });

  it('denies an unknown key, naming nothing', async () => {
    const unknown = `rk_live_${randomBytes(16).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    const result = await liveAuthorizer()(event({ 'X-API-Key': unknown }));
    expect(denial(result)).toEqual({ effect: 'Deny', usage: undefined, message: INVALID_KEY_MESSAGE });
    expect(result.policyDocument.Statement[0]).toMatchObject({
      Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*',
    });
  });

  it('denies a known key id with another secret: the hash decides, not the id', async () => {
    const { record } = await storedKey();
    const forged = `rk_live_${record.keyId}_${randomBytes(32).toString('base64url')}`;
    const result = await liveAuthorizer()(event({ 'X-API-Key': forged }));
    expect(denial(result)).toEqual({ effect: 'Deny', usage: undefined, message: INVALID_KEY_MESSAGE });
  });

  it('denies a revoked key', async () => {
    const { apiKey, record } = await storedKey();
    await repository.update(record.keyId, { status: 'revoked', revokedAt: new Date().toISOString() });
    const result = await liveAuthorizer()(event({ 'X-API-Key': apiKey }));
    expect(denial(result)).toEqual({ effect: 'Deny', usage: undefined, message: INVALID_KEY_MESSAGE });
  });

  it('denies a staging key on production, saying whose key it is', async () => {
    // Its record is even in this table: the environment is refused before anything is read.
    const { apiKey } = await storedKey('test');
    const result = await liveAuthorizer()(event({ 'X-API-Key': apiKey }));
    expect(denial(result)).toMatchObject({ effect: 'Deny', usage: undefined });
    expect(result.context?.message).toMatch(/test \(staging\) API key/);
    expect(result.context?.message).toMatch(/rk_live_/);
    // The gateway response places it in a JSON string unescaped.
    expect(String(result.context?.message)).not.toMatch(/["\\\n]/);
  });

  it('denies the usage identifier presented as a key: it opens nothing', async () => {
    const { record } = await storedKey();
    const result = await liveAuthorizer()(event({ 'X-API-Key': edgeUsageKey(record.keyId) }));
    expect(denial(result)).toEqual({ effect: 'Deny', usage: undefined, message: INVALID_KEY_MESSAGE });
  });

  it('denies a request without the header', async () => {
    const result = await liveAuthorizer()(event(null));
    expect(denial(result)).toEqual({ effect: 'Deny', usage: undefined, message: INVALID_KEY_MESSAGE });
  });

  it('throws, rather than denying, when the key table cannot be read', async () => {
    // A Deny would be cached for five minutes and lock a good client out; a failure is not cached.
    const broken = createHandler({
      authenticator: new ApiKeyAuthenticator(
        new ApiKeyRepository(doc, `${names.apiKeys}-missing`),
        new ManualClock(),
        0,
        'live',
      ),
      logger: createLogger({ level: 'SILENT' }),
    });
    const { apiKey } = await storedKey();
    await expect(broken(event({ 'X-API-Key': apiKey }))).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
    });
  });
});
