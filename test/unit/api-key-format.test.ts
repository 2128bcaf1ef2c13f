import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { App } from 'aws-cdk-lib';
import { resolveSettings } from '../../infra/settings.js';
import { createApiKey, EnvironmentMismatchError } from '../../scripts/admin/api-keys.js';
import {
  ApiKeyAuthenticator,
  ForeignApiKeyError,
  newApiKeyRecord,
  parseApiKey,
} from '../../lib/api-keys/authenticator.js';
import { ManualClock } from '../../lib/kernel/clock.js';
import {
  apiKeyEnvironments,
  deployedApiKeyEnvironment,
  loadConfig,
  type ApiKeyEnvironment,
} from '../../lib/kernel/config.js';
import { ApiKeyRepository } from '../../lib/db/api-keys.js';
import { createDynamoClients } from '../../lib/db/client.js';
import { UnauthorizedError } from '../../lib/kernel/errors.js';

const keyId = () => randomBytes(16).toString('hex');
const secret = () => randomBytes(32).toString('base64url');

/**
 * A repository whose every read fails at once (nothing listens on port 9): an answer other than a
 * connection error proves the authenticator decided without reading DynamoDB.
 */
function unreachableRepository(): ApiKeyRepository {
  const { doc } = createDynamoClients({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9' });
  return new ApiKeyRepository(doc, 'unreachable-api-keys');
}

const authenticatorFor = (environment: ApiKeyEnvironment) =>
  new ApiKeyAuthenticator(unreachableRepository(), new ManualClock(new Date()), 30, environment);

describe('API key format', () => {
  it.each(apiKeyEnvironments)('makes %s keys that name their environment and parse back', (environment) => {
    const { apiKey, record } = newApiKeyRecord(
      { name: 'n', roles: ['merchant'], tier: 'free', environment },
      new Date(),
    );
    expect(apiKey).toMatch(new RegExp(`^rk_${environment}_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$`));
    expect(record.environment).toBe(environment);
    const parsed = parseApiKey(apiKey);
    expect(parsed).toEqual({
      format: 'current',
      environment,
      keyId: record.keyId,
      secret: apiKey.slice(`rk_${environment}_${record.keyId}_`.length),
    });
    // Only a hash of the secret is kept.
    expect(JSON.stringify(record)).not.toContain(apiKey.slice(-43));
  });

  it('makes a local key when no environment is given, so a forgotten one works on no deployed stage', () => {
    const { apiKey, record } = newApiKeyRecord({ name: 'n', roles: ['issuer'], tier: 'free' }, new Date());
    expect(apiKey.startsWith('rk_local_')).toBe(true);
    expect(record.environment).toBe('local');
  });

  it('keeps a secret that itself contains underscores whole', () => {
    const id = keyId();
    const underscored = `_${'a_'.repeat(21)}`;
    expect(parseApiKey(`rk_test_${id}_${underscored}`)).toEqual({
      format: 'current',
      environment: 'test',
      keyId: id,
      secret: underscored,
    });
  });

  it('recognises the previous format, which names no environment', () => {
    const id = keyId();
    const s = secret();
    expect(parseApiKey(`rk_${id}_${s}`)).toEqual({ format: 'legacy', keyId: id, secret: s });
  });

  it('names the environment of a key whose remainder is mangled', () => {
    expect(parseApiKey('rk_live_short')).toEqual({ format: 'malformed', environment: 'live' });
  });

  it.each([
    ['not-a-key'],
    [''],
    [`rk_prod_${keyId()}_${secret()}`],
    [`RK_LIVE_${keyId()}_${secret()}`],
    [`rk_${keyId().toUpperCase()}_${secret()}`],
    [`rk_local_${keyId()}_${secret()}x`],
  ])('is not an API key: %s', (value) => {
    const parsed = parseApiKey(value);
    expect(parsed === null || parsed.format === 'malformed').toBe(true);
    expect(parsed?.format).not.toBe('current');
  });
});

describe('environments of the deployed stages', () => {
  it('maps the production stage to live keys and every other deployed stage to test keys', () => {
    expect(deployedApiKeyEnvironment('prod')).toBe('live');
    expect(deployedApiKeyEnvironment('production')).toBe('live');
    for (const stage of ['dev', 'staging', 'local', 'prod2', 'preprod'])
      expect(deployedApiKeyEnvironment(stage)).toBe('test');
  });

  it('gives the CDK stack the same environment for a stage as the admin CLI derives', () => {
    // An App without an outdir makes a cdk.out folder in the temp dir; this one is removed afterwards.
    const outdir = mkdtempSync(join(tmpdir(), 'api-key-format-'));
    try {
      for (const stage of ['prod', 'dev', 'staging'])
        expect(resolveSettings(new App({ outdir, context: { stage } })).apiKeyEnvironment).toBe(
          deployedApiKeyEnvironment(stage),
        );
      expect(resolveSettings(new App({ outdir })).apiKeyEnvironment).toBe('test');
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('reads API_KEY_ENVIRONMENT, local by default, and fails fast on anything else', () => {
    expect(loadConfig({ TABLE_PREFIX: 'x-' }).apiKeyEnvironment).toBe('local');
    expect(loadConfig({ TABLE_PREFIX: 'x-', API_KEY_ENVIRONMENT: 'live' }).apiKeyEnvironment).toBe('live');
    expect(() => loadConfig({ TABLE_PREFIX: 'x-', API_KEY_ENVIRONMENT: 'production' })).toThrow(
      /API_KEY_ENVIRONMENT/,
    );
  });
});

describe('the authenticator refuses a foreign key before any lookup', () => {
  const foreign: [ApiKeyEnvironment, ApiKeyEnvironment, RegExp][] = [
    [
      'local',
      'test',
      /This is a test \(staging\) API key; this is the local \(local development\) environment/,
    ],
    [
      'local',
      'live',
      /This is a live \(production\) API key; this is the local \(local development\) environment/,
    ],
    ['test', 'live', /This is a live \(production\) API key; this is the test \(staging\) environment/],
    [
      'test',
      'local',
      /This is a local \(local development\) API key; this is the test \(staging\) environment/,
    ],
    ['live', 'test', /This is a test \(staging\) API key; this is the live \(production\) environment/],
    ['live', 'local', /This is a local \(local development\) API key; .*rk_live_ keys/],
  ];

  it.each(foreign)('a %s service given a %s key: 401 naming the key', async (service, key, message) => {
    const apiKey = `rk_${key}_${keyId()}_${secret()}`;
    const refusal = authenticatorFor(service).authenticate(apiKey);
    await expect(refusal).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(refusal).rejects.toThrow(message);
    await expect(refusal).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('names the environment of a mangled foreign key too', async () => {
    await expect(authenticatorFor('local').authenticate('rk_live_x')).rejects.toThrow(/live \(production\)/);
  });

  it('never puts the presented key in the message', async () => {
    const apiKey = `rk_test_${keyId()}_${secret()}`;
    const error = await authenticatorFor('live')
      .authenticate(apiKey)
      .then(
        () => null,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(ForeignApiKeyError);
    const text = `${(error as Error).message} ${JSON.stringify(error)}`;
    expect(text).not.toContain(apiKey.slice('rk_test_'.length));
  });

  it.each(['live', 'test'] as const)(
    'refuses an old-format key on a %s stage, saying to ask for a new one',
    async (service) => {
      const refusal = authenticatorFor(service).authenticate(`rk_${keyId()}_${secret()}`);
      await expect(refusal).rejects.toThrow(/old format .* names no environment.*Ask for a new key/);
      await expect(refusal).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
    },
  );

  it('looks a key of its own environment up (and an old-format one locally)', async () => {
    // The unreachable table answers with a connection error: the lookup was attempted.
    for (const apiKey of [`rk_local_${keyId()}_${secret()}`, `rk_${keyId()}_${secret()}`]) {
      const attempt = authenticatorFor('local').authenticate(apiKey);
      await expect(attempt).rejects.not.toBeInstanceOf(UnauthorizedError);
      await expect(attempt).rejects.toThrow();
    }
  });

  it('answers null, not an environment message, for something that is no key at all', async () => {
    await expect(authenticatorFor('live').authenticate('not-a-key')).resolves.toBeNull();
    await expect(authenticatorFor('live').authenticate(undefined)).resolves.toBeNull();
  });
});

describe('the admin creates keys for its table environment only', () => {
  it.each([
    ['local', 'test'],
    ['test', 'live'],
    ['live', 'local'],
  ] as const)('refuses a %s table a %s key, before writing anything', async (table, asked) => {
    const creation = createApiKey(
      { repository: unreachableRepository(), environment: table, now: () => new Date() },
      { name: 'n', roles: ['merchant'], tier: 'free', environment: asked },
    );
    await expect(creation).rejects.toBeInstanceOf(EnvironmentMismatchError);
    await expect(creation).rejects.toThrow(new RegExp(`Cannot create a ${asked} .* the ${table} `));
  });
});
