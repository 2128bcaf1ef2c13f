import { randomBytes, randomUUID } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  APIGatewayClient,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  GetApiKeysCommand,
  GetRestApiCommand,
  GetUsagePlanCommand,
  type ApiKey,
} from '@aws-sdk/client-api-gateway';
import { mockClient } from 'aws-sdk-client-mock';
import { ApiGatewayEdgeKeyStore, type UsagePlanIds } from '../../scripts/admin/api-gateway-keys.js';
import { createApiKey } from '../../scripts/admin/api-keys.js';
import { EdgeMigrationError, migrateEdgeKeys } from '../../scripts/admin/edge-migration.js';
import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { ApiKeyAuthenticator, newApiKeyRecord } from '../../lib/api-keys/authenticator.js';
import { ManualClock } from '../../lib/kernel/clock.js';
import type { ApiKeyEnvironment } from '../../lib/kernel/config.js';
import { ApiKeyRepository } from '../../lib/db/api-keys.js';
import { createDynamoClients } from '../../lib/db/client.js';
import { ensureTables } from '../../lib/db/create-tables.js';
import { edgeUsageKey, formatKeyedRoutes, INVALID_KEY_MESSAGE } from '../../lib/api-keys/edge-authorizer.js';
import { rateGroupOf } from '../../lib/kernel/route.js';
import { routes } from '../../functions/routes.js';
import { awsEdgeAuthorizerDeps } from '../../lib/wiring/aws-edge-authorizer.js';
import { createLogger } from '../../lib/kernel/log.js';
import { prefixedTableNames } from '../../lib/kernel/tables.js';
import { createHandler } from '../../functions/platform/edge-authorizer/handler.js';
import { logsWhile } from '../support/logs.js';

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
      TABLE_RATE_LIMITS: names.rateLimits,
      // As the CDK stack sets it from the route table.
      EDGE_KEYED_ROUTES: formatKeyedRoutes(
        routes
          .filter((route) => route.apiKeyRequired)
          .map((route) => ({ method: route.method, path: route.path, group: rateGroupOf(route) })),
      ),
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
  await ensureTables(client, names, { timeToLive: false });
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
    expect(result.context).toMatchObject({
      clientId: record.clientId,
      keyId: record.keyId,
      tier: 'standard',
    });
    // What the gateway responses show (test/infra/gateway-responses.test.ts): the time, the binding limit.
    expect(Object.keys(result.context ?? {}).sort()).toEqual(
      [
        'clientId',
        'keyId',
        'tier',
        'timestamp',
        'rateLimitLimit',
        'rateLimitRemaining',
        'rateLimitReset',
        'quotaLimit',
        'quotaReset',
      ].sort(),
    );
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

  it('denies a request without the header, saying what to send (it reaches the authorizer: no identity source)', async () => {
    const result = await liveAuthorizer()(event(null));
    expect(denial(result)).toEqual({
      effect: 'Deny',
      usage: undefined,
      message: 'Missing API key: send it in the X-API-Key header',
    });
    const bearer = await liveAuthorizer()(event({ Authorization: 'Bearer rk_live_x' }));
    expect(denial(bearer).message).toBe(
      'Send the API key in the X-API-Key header; the Authorization header is not read',
    );
  });

  it('lets anyone through a method that needs no key, with the time and the source IP budget', async () => {
    const result = await liveAuthorizer()({
      ...event(null),
      resource: '/api/v1/health',
      httpMethod: 'GET',
      requestContext: {
        requestTimeEpoch: Date.parse('2026-01-02T03:04:05.006Z'),
        identity: { sourceIp: '198.51.100.7' },
      },
    } as unknown as APIGatewayRequestAuthorizerEvent);
    expect(denial(result)).toMatchObject({ effect: 'Allow', usage: undefined });
    expect(result.context).toMatchObject({
      timestamp: '2026-01-02T03:04:05.006Z',
      rateLimitLimit: '60',
      rateLimitRemaining: '60',
    });
  });

  it('refuses to start without the list of keyed methods, rather than opening every method', () => {
    expect(() =>
      awsEdgeAuthorizerDeps({
        AWS_REGION: region,
        TABLE_API_KEYS: names.apiKeys,
        TABLE_RATE_LIMITS: names.rateLimits,
        API_KEY_ENVIRONMENT: 'live',
        STAGE: 'prod',
      }),
    ).toThrow(/EDGE_KEYED_ROUTES/);
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

  it("logs a refusal with API Gateway's request id, and nothing of the key", async () => {
    const authorizer = createHandler({
      authenticator: new ApiKeyAuthenticator(repository, new ManualClock(), 0, 'live'),
      logger: createLogger({ level: 'INFO' }),
    });
    const unknown = `rk_live_${randomBytes(16).toString('hex')}_${randomBytes(32).toString('base64url')}`;
    const requestId = randomUUID();
    const { text } = await logsWhile(() =>
      authorizer({
        ...event({ 'X-API-Key': unknown }),
        requestContext: { requestId },
      } as APIGatewayRequestAuthorizerEvent),
    );
    const lines = text
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({ message: 'edge key refused', reason: 'invalid_key', requestId }),
    ]);
    expect(text).not.toContain(unknown);
  });
});

/**
 * API Gateway's key store as the admin CLI sees it: the SDK client is stubbed with a small account
 * (aws-sdk-client-mock), the key table is DynamoDB Local.
 */
describe('edge keys made and migrated by the admin CLI', () => {
  const plans: UsagePlanIds = { free: 'plan-free', standard: 'plan-standard', enterprise: 'plan-enterprise' };
  const apiGateway = mockClient(APIGatewayClient);
  let account: ApiKey[];
  let keySource: string;
  let sequence = 0;
  const edge = () => new ApiGatewayEdgeKeyStore(new APIGatewayClient({ region }), plans);

  beforeEach(() => {
    account = [];
    keySource = 'HEADER';
    apiGateway.reset();
    apiGateway.on(CreateApiKeyCommand).callsFake((input: ApiKey) => {
      const created = { ...input, id: `new-${(sequence += 1)}` };
      account.push(created);
      return created;
    });
    apiGateway.on(CreateUsagePlanKeyCommand).resolves({});
    apiGateway.on(GetApiKeysCommand).callsFake((input: { nameQuery?: string; includeValues?: boolean }) => ({
      items: account
        .filter((key) => !input.nameQuery || (key.name ?? '').startsWith(input.nameQuery))
        .map((key) => (input.includeValues ? key : { ...key, value: undefined })),
    }));
    apiGateway.on(DeleteApiKeyCommand).callsFake((input: { apiKey: string }) => {
      account = account.filter((key) => key.id !== input.apiKey);
      return {};
    });
    apiGateway.on(GetUsagePlanCommand).resolves({ apiStages: [{ apiId: 'api-1', stage: 'prod' }] });
    apiGateway.on(GetRestApiCommand).callsFake(() => ({ apiKeySource: keySource }));
  });

  it('creates the API Gateway key with the usage identifier the authorizer names, never the secret', async () => {
    const created = await createApiKey(
      { repository, edge: edge(), environment: 'live', now: () => new Date() },
      { name: 'Acme POS', roles: ['merchant'], tier: 'standard' },
    );
    const sent = apiGateway.commandCalls(CreateApiKeyCommand).map((call) => call.args[0].input);
    expect(sent).toHaveLength(1);
    const secret = created.apiKey.split('_').slice(3).join('_');
    expect(JSON.stringify(sent)).not.toContain(secret);
    expect(sent[0]?.value).not.toBe(created.apiKey);

    // What the edge will look up is exactly the key the CLI created.
    const allowed = await liveAuthorizer()(event({ 'X-API-Key': created.apiKey }));
    expect(allowed.usageIdentifierKey).toBe(sent[0]?.value);
    expect((await repository.get(created.record.keyId))?.edgeKeyId).toBe(account[0]?.id);
  });

  it('moves every active key to a usage-identifier key, then deletes the old keys once the API reads the authorizer', async () => {
    const migrationNames = prefixedTableNames(`edge-migrate-${process.pid}-${Date.now()}-`);
    await ensureTables(client, migrationNames, { timeToLive: false });
    const table = new ApiKeyRepository(doc, migrationNames.apiKeys);
    // Three keys of the previous CLI, whose API Gateway keys hold the whole API key as their value.
    const old = [];
    for (const [index, status] of (['active', 'active', 'revoked'] as const).entries()) {
      const { apiKey, record } = newApiKeyRecord(
        { name: `client ${index}`, roles: ['issuer'], tier: 'free', environment: 'live' },
        new Date(),
      );
      account.push({
        id: `old-${index}`,
        name: record.name,
        value: apiKey,
        tags: { clientId: record.clientId },
      });
      await table.create({ ...record, status, edgeKeyId: `old-${index}` });
      old.push({ apiKey, record });
    }
    // Another stage's key in the same account: not this table's client, never touched.
    account.push({
      id: 'elsewhere',
      name: 'other stage',
      value: 'x'.repeat(40),
      tags: { clientId: 'not-ours' },
    });

    const first = await migrateEdgeKeys({ repository: table, edge: edge() }, { deleteOld: false });
    expect(first.moved.map((moved) => moved.previousEdgeKeyId)).toEqual(['old-0', 'old-1']);
    expect(first.oldKeys.sort()).toEqual(['old-0', 'old-1', 'old-2']);
    expect(first.deleted).toBe(false);
    expect(apiGateway.commandCalls(DeleteApiKeyCommand)).toHaveLength(0);
    for (const { record } of old.slice(0, 2)) {
      const edgeKeyId = (await table.get(record.keyId))?.edgeKeyId;
      expect(account.find((key) => key.id === edgeKeyId)?.value).toBe(edgeUsageKey(record.keyId));
    }
    // No new key for the revoked client.
    expect(apiGateway.commandCalls(CreateApiKeyCommand)).toHaveLength(2);

    // Repeated, it finds what it made.
    const second = await migrateEdgeKeys({ repository: table, edge: edge() }, { deleteOld: false });
    expect(second.moved).toEqual([]);
    expect(second.unchanged).toHaveLength(2);
    expect(apiGateway.commandCalls(CreateApiKeyCommand)).toHaveLength(2);

    // Before the deploy, deleting the old keys would lock every client out.
    await expect(
      migrateEdgeKeys({ repository: table, edge: edge() }, { deleteOld: true }),
    ).rejects.toBeInstanceOf(EdgeMigrationError);
    expect(account.map((key) => key.id)).toEqual(expect.arrayContaining(['old-0', 'old-1', 'old-2']));

    keySource = 'AUTHORIZER';
    const last = await migrateEdgeKeys({ repository: table, edge: edge() }, { deleteOld: true });
    expect(last.deleted).toBe(true);
    expect(account.map((key) => key.id).sort()).toEqual(
      ['elsewhere', 'new-' + String(sequence - 1), 'new-' + String(sequence)].sort(),
    );
    // No API Gateway key of this table's clients holds a secret any more.
    const values = account.map((key) => key.value ?? '');
    for (const { apiKey } of old) expect(values).not.toContain(apiKey);
  });
});
