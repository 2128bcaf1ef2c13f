import { beforeEach, describe, expect, it } from '@jest/globals';
import {
  APIGatewayClient,
  ConflictException,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  DeleteUsagePlanKeyCommand,
  GetApiKeysCommand,
  GetRestApiCommand,
  GetUsagePlanCommand,
  GetUsagePlanKeyCommand,
  NotFoundException,
  TooManyRequestsException,
} from '@aws-sdk/client-api-gateway';
import { GetParametersCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { newApiKeyRecord } from '../../lib/api-keys/authenticator.js';
import { edgeUsageKey } from '../../lib/api-keys/edge-authorizer.js';
import { usagePlanParameterName } from '../../lib/kernel/tiers.js';
import {
  ApiGatewayEdgeKeyStore,
  EdgeKeyError,
  edgeKeyName,
  loadUsagePlanIds,
  type UsagePlanIds,
} from '../../scripts/admin/api-gateway-keys.js';

const plans: UsagePlanIds = { free: 'plan-free', standard: 'plan-standard', enterprise: 'plan-enterprise' };
const metadata = { $metadata: {} };
const notFound = () =>
  new NotFoundException({ message: 'Invalid API Key identifier specified', ...metadata });
const conflict = () => new ConflictException({ message: 'Usage Plan Key already exists', ...metadata });

const apiGateway = mockClient(APIGatewayClient);
const store = () => new ApiGatewayEdgeKeyStore(new APIGatewayClient({ region: 'eu-west-1' }), plans);

beforeEach(() => {
  apiGateway.reset();
});

describe('ApiGatewayEdgeKeyStore.createKey', () => {
  // A real key and record, so the test can look for the secret in what API Gateway is sent.
  const { apiKey, record } = newApiKeyRecord(
    { name: 'acme-pos', roles: ['merchant'], tier: 'standard', environment: 'live' },
    new Date('2026-11-22T12:00:00Z'),
  );
  const secret = apiKey.split('_').slice(3).join('_');
  const input = { name: 'acme-pos', keyId: record.keyId, tier: 'standard' as const, clientId: 'client-1' };

  it("creates an enabled key holding the client's usage identifier and puts it in the tier plan", async () => {
    apiGateway.on(CreateApiKeyCommand).resolves({ id: 'edge-1' });
    apiGateway.on(CreateUsagePlanKeyCommand).resolves({ id: 'edge-1' });

    await expect(store().createKey(input)).resolves.toEqual({ edgeKeyId: 'edge-1' });

    const created = apiGateway.commandCalls(CreateApiKeyCommand);
    expect(created).toHaveLength(1);
    expect(created[0]?.args[0].input).toMatchObject({
      name: edgeKeyName(record.keyId),
      value: edgeUsageKey(record.keyId),
      enabled: true,
      tags: { clientId: 'client-1', keyId: record.keyId },
    });
    const memberships = apiGateway.commandCalls(CreateUsagePlanKeyCommand);
    expect(memberships.map((call) => call.args[0].input)).toEqual([
      { usagePlanId: 'plan-standard', keyId: 'edge-1', keyType: 'API_KEY' },
    ]);
  });

  it('never sends the secret, its hash or the whole key to API Gateway', async () => {
    apiGateway.on(CreateApiKeyCommand).resolves({ id: 'edge-1' });
    apiGateway.on(CreateUsagePlanKeyCommand).resolves({ id: 'edge-1' });
    await store().createKey(input);
    const sent = JSON.stringify(apiGateway.calls().map((call) => call.args[0].input));
    expect(sent).toContain(record.keyId);
    for (const secretShape of [apiKey, secret, record.secretHash]) expect(sent).not.toContain(secretShape);
    // The value is at least API Gateway's minimum length.
    expect(edgeUsageKey(record.keyId).length).toBeGreaterThanOrEqual(20);
  });

  it('deletes the new key again when it cannot join the plan', async () => {
    apiGateway.on(CreateApiKeyCommand).resolves({ id: 'edge-2' });
    apiGateway
      .on(CreateUsagePlanKeyCommand)
      .rejects(new TooManyRequestsException({ message: 'slow down', ...metadata }));
    apiGateway.on(DeleteApiKeyCommand).resolves({});

    await expect(store().createKey(input)).rejects.toThrow('slow down');
    expect(apiGateway.commandCalls(DeleteApiKeyCommand).map((call) => call.args[0].input)).toEqual([
      { apiKey: 'edge-2' },
    ]);
  });

  it('fails when API Gateway returns no key id', async () => {
    apiGateway.on(CreateApiKeyCommand).resolves({});
    await expect(store().createKey(input)).rejects.toBeInstanceOf(EdgeKeyError);
    expect(apiGateway.commandCalls(CreateUsagePlanKeyCommand)).toHaveLength(0);
  });
});

describe('ApiGatewayEdgeKeyStore.ensureUsageKey', () => {
  const input = { name: 'acme-pos', keyId: 'a'.repeat(32), tier: 'free' as const, clientId: 'client-2' };

  it('reuses the key a previous run created, found by its name, and makes sure it is in the plan', async () => {
    apiGateway.on(GetApiKeysCommand).resolves({
      items: [{ id: 'edge-9', name: edgeKeyName(input.keyId), tags: { clientId: 'client-2' } }],
    });
    apiGateway.on(CreateUsagePlanKeyCommand).rejects(conflict());
    apiGateway.on(GetUsagePlanKeyCommand).resolves({ id: 'edge-9' });

    await expect(store().ensureUsageKey(input)).resolves.toEqual({ edgeKeyId: 'edge-9' });
    expect(apiGateway.commandCalls(CreateApiKeyCommand)).toHaveLength(0);
    expect(apiGateway.commandCalls(GetApiKeysCommand)[0]?.args[0].input).toMatchObject({
      nameQuery: edgeKeyName(input.keyId),
      includeValues: false,
    });
  });

  it('creates the key when no key of that exact name exists', async () => {
    // nameQuery may match more than the exact name; only the exact one counts.
    apiGateway
      .on(GetApiKeysCommand)
      .resolves({ items: [{ id: 'other', name: `${edgeKeyName(input.keyId)}-old` }] });
    apiGateway.on(CreateApiKeyCommand).resolves({ id: 'edge-10' });
    apiGateway.on(CreateUsagePlanKeyCommand).resolves({ id: 'edge-10' });

    await expect(store().ensureUsageKey(input)).resolves.toEqual({ edgeKeyId: 'edge-10' });
    expect(apiGateway.commandCalls(CreateApiKeyCommand)[0]?.args[0].input.value).toBe(
      edgeUsageKey(input.keyId),
    );
  });
});

describe('ApiGatewayEdgeKeyStore.listClientKeys and apiKeySource', () => {
  it('pages through every key, never asking for values, and keeps those tagged with a client', async () => {
    apiGateway
      .on(GetApiKeysCommand, { position: undefined })
      .resolves({
        items: [
          { id: 'k1', name: 'one', tags: { clientId: 'c1' } },
          { id: 'k2', name: 'theirs' },
        ],
        position: 'p2',
      })
      .on(GetApiKeysCommand, { position: 'p2' })
      .resolves({ items: [{ id: 'k3', name: 'three', tags: { clientId: 'c3' } }] });

    await expect(store().listClientKeys()).resolves.toEqual([
      { id: 'k1', name: 'one', clientId: 'c1' },
      { id: 'k3', name: 'three', clientId: 'c3' },
    ]);
    const listed = apiGateway.commandCalls(GetApiKeysCommand).map((call) => call.args[0].input);
    expect(listed).toHaveLength(2);
    for (const request of listed) expect(request.includeValues).toBe(false);
  });

  it('reads the key source of the API the tier plans are attached to', async () => {
    apiGateway.on(GetUsagePlanCommand, { usagePlanId: 'plan-free' }).resolves({
      apiStages: [{ apiId: 'api-1', stage: 'prod' }],
    });
    apiGateway.on(GetRestApiCommand, { restApiId: 'api-1' }).resolves({ apiKeySource: 'AUTHORIZER' });
    await expect(store().apiKeySource()).resolves.toBe('AUTHORIZER');
  });

  it('fails when the plan is attached to no stage', async () => {
    apiGateway.on(GetUsagePlanCommand).resolves({ apiStages: [] });
    await expect(store().apiKeySource()).rejects.toBeInstanceOf(EdgeKeyError);
  });
});

describe('ApiGatewayEdgeKeyStore.setTier', () => {
  it('moves the key from the old plan to the new one, in that order', async () => {
    apiGateway.on(DeleteUsagePlanKeyCommand).resolves({});
    apiGateway.on(CreateUsagePlanKeyCommand).resolves({ id: 'edge-1' });

    await store().setTier('edge-1', 'free', 'enterprise');

    const removed = apiGateway.commandCalls(DeleteUsagePlanKeyCommand);
    const added = apiGateway.commandCalls(CreateUsagePlanKeyCommand);
    expect(removed.map((call) => call.args[0].input)).toEqual([
      { usagePlanId: 'plan-free', keyId: 'edge-1' },
    ]);
    expect(added.map((call) => call.args[0].input)).toEqual([
      { usagePlanId: 'plan-enterprise', keyId: 'edge-1', keyType: 'API_KEY' },
    ]);
    expect(apiGateway.calls().map((call) => call.args[0].constructor.name)).toEqual([
      'DeleteUsagePlanKeyCommand',
      'CreateUsagePlanKeyCommand',
    ]);
  });

  it('does nothing when the tier does not change', async () => {
    await store().setTier('edge-1', 'standard', 'standard');
    expect(apiGateway.calls()).toHaveLength(0);
  });

  it('completes a retried move: the key is already out of the old plan and in the new one', async () => {
    apiGateway.on(DeleteUsagePlanKeyCommand).rejects(notFound());
    apiGateway.on(CreateUsagePlanKeyCommand).rejects(conflict());
    apiGateway.on(GetUsagePlanKeyCommand).resolves({ id: 'edge-1' });

    await expect(store().setTier('edge-1', 'free', 'standard')).resolves.toBeUndefined();
    expect(apiGateway.commandCalls(GetUsagePlanKeyCommand)[0]?.args[0].input).toEqual({
      usagePlanId: 'plan-standard',
      keyId: 'edge-1',
    });
  });

  it('puts the key back on its old plan when the new plan refuses it', async () => {
    apiGateway.on(DeleteUsagePlanKeyCommand).resolves({});
    apiGateway.on(CreateUsagePlanKeyCommand, { usagePlanId: 'plan-enterprise' }).rejects(conflict());
    apiGateway.on(CreateUsagePlanKeyCommand, { usagePlanId: 'plan-free' }).resolves({ id: 'edge-1' });
    apiGateway.on(GetUsagePlanKeyCommand).rejects(notFound());

    await expect(store().setTier('edge-1', 'free', 'enterprise')).rejects.toBeInstanceOf(ConflictException);
    expect(
      apiGateway.commandCalls(CreateUsagePlanKeyCommand).map((call) => call.args[0].input.usagePlanId),
    ).toEqual(['plan-enterprise', 'plan-free']);
  });
});

describe('ApiGatewayEdgeKeyStore.revoke', () => {
  it('deletes the API Gateway key', async () => {
    apiGateway.on(DeleteApiKeyCommand).resolves({});
    await store().revoke('edge-1');
    expect(apiGateway.commandCalls(DeleteApiKeyCommand).map((call) => call.args[0].input)).toEqual([
      { apiKey: 'edge-1' },
    ]);
  });

  it('treats a key that is already gone as revoked', async () => {
    apiGateway.on(DeleteApiKeyCommand).rejects(notFound());
    await expect(store().revoke('edge-1')).resolves.toBeUndefined();
  });

  it('reports other failures', async () => {
    apiGateway
      .on(DeleteApiKeyCommand)
      .rejects(new TooManyRequestsException({ message: 'slow down', ...metadata }));
    await expect(store().revoke('edge-1')).rejects.toThrow('slow down');
  });
});

describe('loadUsagePlanIds', () => {
  const ssm = mockClient(SSMClient);
  beforeEach(() => {
    ssm.reset();
  });

  it('prefers USAGE_PLAN_ID_* from the environment', async () => {
    const env = { USAGE_PLAN_ID_FREE: 'a', USAGE_PLAN_ID_STANDARD: 'b', USAGE_PLAN_ID_ENTERPRISE: 'c' };
    await expect(loadUsagePlanIds({ stage: 'prod', env })).resolves.toEqual({
      free: 'a',
      standard: 'b',
      enterprise: 'c',
    });
  });

  it('refuses a partial set of environment variables', async () => {
    await expect(loadUsagePlanIds({ stage: 'prod', env: { USAGE_PLAN_ID_FREE: 'a' } })).rejects.toThrow(
      /USAGE_PLAN_ID_STANDARD, USAGE_PLAN_ID_ENTERPRISE/,
    );
  });

  it('reads the parameters the stack publishes for the stage', async () => {
    ssm.on(GetParametersCommand).resolves({
      Parameters: [
        { Name: '/prod/receipt-service/usage-plans/free', Value: 'p1' },
        { Name: '/prod/receipt-service/usage-plans/standard', Value: 'p2' },
        { Name: '/prod/receipt-service/usage-plans/enterprise', Value: 'p3' },
      ],
    });
    const ids = await loadUsagePlanIds({
      stage: 'prod',
      env: {},
      ssm: new SSMClient({ region: 'eu-west-1' }),
    });
    expect(ids).toEqual({ free: 'p1', standard: 'p2', enterprise: 'p3' });
    expect(ssm.commandCalls(GetParametersCommand)[0]?.args[0].input.Names).toEqual([
      usagePlanParameterName('prod', 'free'),
      usagePlanParameterName('prod', 'standard'),
      usagePlanParameterName('prod', 'enterprise'),
    ]);
  });

  it('names the parameters that are missing', async () => {
    ssm.on(GetParametersCommand).resolves({
      Parameters: [{ Name: '/dev/receipt-service/usage-plans/free', Value: 'p1' }],
      InvalidParameters: [
        '/dev/receipt-service/usage-plans/standard',
        '/dev/receipt-service/usage-plans/enterprise',
      ],
    });
    await expect(
      loadUsagePlanIds({ stage: 'dev', env: {}, ssm: new SSMClient({ region: 'eu-west-1' }) }),
    ).rejects.toThrow(/usage-plans\/standard, \/dev\/receipt-service\/usage-plans\/enterprise not found/);
  });

  it('needs either the environment or an SSM client', async () => {
    await expect(loadUsagePlanIds({ stage: 'dev', env: {} })).rejects.toBeInstanceOf(EdgeKeyError);
  });
});
