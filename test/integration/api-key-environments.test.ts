import { execFile } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createApiKey } from '../../scripts/admin/api-keys.js';
import type { ErrorBody } from '../../lib/http/error-envelope.js';
import { startTestStack, type TestStack } from '../support/stack.js';

const GENERATE_KEYS = '/api/v1/onboarding/generate-keys';

/** A key of the right shape for an environment; its id is in no table, so only its prefix can decide. */
const strangerKey = (environment: string) =>
  `rk_${environment}_${randomBytes(16).toString('hex')}_${randomBytes(32).toString('base64url')}`;

/**
 * A key as the previous version made it: `rk_<keyId>_<secret>`, and a record with no environment.
 * Written straight to the table, as that version's CLI did.
 */
async function legacyKey(stack: TestStack): Promise<string> {
  const keyId = randomBytes(16).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  await stack.deps.repos.apiKeys.create({
    keyId,
    clientId: randomUUID(),
    name: 'made by the previous version',
    roles: ['issuer'],
    tier: 'enterprise',
    secretHash: createHash('sha256').update(secret).digest('hex'),
    status: 'active',
    createdAt: stack.clock.now().toISOString(),
  });
  return `rk_${keyId}_${secret}`;
}

async function refusal(stack: TestStack, apiKey: string): Promise<{ status: number; message: string }> {
  const reply = await stack.request<ErrorBody>('POST', GENERATE_KEYS, { apiKey });
  expect(reply.json.error.code).toBe('unauthorized');
  return { status: reply.status, message: reply.json.error.message };
}

describe('API keys per environment, over HTTP on the local stack', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack();
  });

  afterAll(async () => {
    await stack?.close();
  });

  it('refuses an rk_test_ key with 401 naming staging', async () => {
    const { status, message } = await refusal(stack, strangerKey('test'));
    expect(status).toBe(401);
    expect(message).toBe(
      'This is a test (staging) API key; this is the local (local development) environment, which takes only rk_local_ keys',
    );
  });

  it('refuses an rk_live_ key with 401 naming production', async () => {
    const { status, message } = await refusal(stack, strangerKey('live'));
    expect(status).toBe(401);
    expect(message).toMatch(/^This is a live \(production\) API key; /);
  });

  it('accepts an rk_local_ key made by the admin', async () => {
    const issuer = await stack.apiKey(['issuer']);
    expect(issuer.apiKey.startsWith('rk_local_')).toBe(true);
    expect((await stack.request('POST', GENERATE_KEYS, { apiKey: issuer.apiKey })).status).toBe(200);
  });

  it('refuses an unknown rk_local_ key with the plain message: only a foreign key names an environment', async () => {
    const { status, message } = await refusal(stack, strangerKey('local'));
    expect(status).toBe(401);
    expect(message).not.toMatch(/production|staging/);
  });

  it('keeps accepting a key the previous version made, locally', async () => {
    const apiKey = await legacyKey(stack);
    expect((await stack.request('POST', GENERATE_KEYS, { apiKey })).status).toBe(200);
  });

  it('lets a public route ignore a foreign key, as it ignores any key', async () => {
    const reply = await stack.request('GET', '/api/v1/health', { apiKey: strangerKey('live') });
    expect(reply.status).not.toBe(401);
  });

  describe('the admin CLI', () => {
    const admin = (...args: string[]) =>
      promisify(execFile)('npx', ['tsx', 'scripts/admin.ts', 'api-keys', ...args], {
        env: {
          ...process.env,
          DYNAMODB_ENDPOINT: stack.dynamoDbEndpoint,
          TABLE_PREFIX: stack.config.tables.apiKeys!.replace(/api-keys$/, ''),
        },
      });
    const create = ['create', '--name', 'cli', '--roles', 'issuer', '--tier', 'free', '--json'];

    it('creates rk_local_ keys for the local stack, which work there', async () => {
      const { stdout } = await admin(...create, '--environment', 'local');
      const created = JSON.parse(stdout) as { apiKey: string; environment: string };
      expect(created.environment).toBe('local');
      expect(created.apiKey).toMatch(/^rk_local_/);
      expect((await stack.request('POST', GENERATE_KEYS, { apiKey: created.apiKey })).status).toBe(200);
    });

    it('refuses to create a key for another environment, and writes nothing', async () => {
      const before = (await stack.deps.repos.apiKeys.list()).length;
      const failure = await admin(...create, '--environment', 'test').then(
        () => null,
        (error: unknown) => error as { code: number; stderr: string },
      );
      expect(failure?.code).toBe(2);
      expect(failure?.stderr).toContain(
        'Cannot create a test (staging) key here: this table belongs to the local (local development) environment',
      );
      expect((await stack.deps.repos.apiKeys.list()).length).toBe(before);
    });
  });
});

describe('a stack configured as staging (API_KEY_ENVIRONMENT=test)', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ env: { API_KEY_ENVIRONMENT: 'test' } });
  });

  afterAll(async () => {
    await stack?.close();
  });

  it('accepts its own rk_test_ keys', async () => {
    const created = await createApiKey(
      { repository: stack.deps.repos.apiKeys, environment: 'test', now: () => stack.clock.now() },
      { name: 'staging issuer', roles: ['issuer'], tier: 'enterprise' },
    );
    expect(created.apiKey.startsWith('rk_test_')).toBe(true);
    expect((await stack.request('POST', GENERATE_KEYS, { apiKey: created.apiKey })).status).toBe(200);
  });

  it('refuses an rk_local_ key, even one whose record is in its table, naming local', async () => {
    const local = await createApiKey(
      { repository: stack.deps.repos.apiKeys, now: () => stack.clock.now() },
      { name: 'local issuer', roles: ['issuer'], tier: 'enterprise' },
    );
    const { status, message } = await refusal(stack, local.apiKey);
    expect(status).toBe(401);
    expect(message).toMatch(/^This is a local \(local development\) API key; this is the test \(staging\)/);
  });

  it('refuses a key in the previous format, saying to ask for a new one', async () => {
    const { status, message } = await refusal(stack, await legacyKey(stack));
    expect(status).toBe(401);
    expect(message).toMatch(/old format .* names no environment.*Ask for a new key/);
  });
});
