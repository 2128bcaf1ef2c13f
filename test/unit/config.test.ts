import { describe, expect, it } from '@jest/globals';
import { systemClock } from '../../lib/kernel/clock.js';
import { ConfigError, loadConfig } from '../../lib/kernel/config.js';
import { createDynamoClients } from '../../lib/db/client.js';
import { createCoreDeps } from '../../lib/app/deps.js';
import { createLogger } from '../../lib/kernel/log.js';
import { tiers } from '../../lib/kernel/tiers.js';
import { LogTelemetry } from '../../lib/kernel/telemetry.js';

describe('configuration', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({ TABLE_PREFIX: 'x-' });
    expect(config).toMatchObject({
      stage: 'local',
      tokenTtlSeconds: 180,
      maxActiveTokens: 5,
      receiptRetentionDays: 2557,
      escrowRetentionDays: 90,
      maxBodyBytes: 131_072,
    });
    expect(config.tables.users).toBe('x-users');
  });

  it.each([
    ['TOKEN_TTL_SECONDS', '60'],
    ['TOKEN_TTL_SECONDS', '181'],
    ['LOG_LEVEL', 'LOUD'],
    ['DYNAMODB_ENDPOINT', 'not a url'],
  ])('fails fast naming %s=%s', (variable, value) => {
    expect(() => loadConfig({ TABLE_PREFIX: 'x-', [variable]: value })).toThrow(new RegExp(variable));
  });

  it.each([
    [{ STRIPE_SECRET_KEY: `sk_live_${'a'.repeat(24)}` }, 'STRIPE_SECRET_KEY'],
    [{ STRIPE_SECRET_KEY: `rk_live_${'a'.repeat(24)}`, STAGE: 'staging' }, 'STRIPE_SECRET_KEY'],
    [{ SQUARE_ENVIRONMENT: 'production' }, 'SQUARE_ENVIRONMENT'],
  ])('refuses live gateway credentials outside production at start: %j', (env, named) => {
    expect(() => loadConfig({ TABLE_PREFIX: 'x-', ...env })).toThrow(ConfigError);
    expect(() => loadConfig({ TABLE_PREFIX: 'x-', ...env })).toThrow(
      new RegExp(`${named}: .*non-production stage`),
    );
  });

  it('lets production start with live credentials, and any stage with test ones', () => {
    expect(
      loadConfig({ TABLE_PREFIX: 'x-', STAGE: 'prod', STRIPE_SECRET_KEY: `sk_live_${'a'.repeat(24)}` }).stage,
    ).toBe('prod');
    expect(loadConfig({ TABLE_PREFIX: 'x-', STRIPE_SECRET_KEY: 'sk_test_abc' }).stage).toBe('local');
  });

  it("builds a function's dependencies from only the tables it was granted, and names a missing one on use", () => {
    // What the CDK stack gives the grant-access function: its own tables and nothing else.
    const config = loadConfig({
      TABLE_API_KEYS: 'k',
      TABLE_RATE_LIMITS: 'r',
      TABLE_AUDIT: 'a',
      TABLE_USERS: 'u',
      TABLE_ACCESS_TOKENS: 't',
    });
    const deps = createCoreDeps({
      config,
      dynamo: createDynamoClients({ region: 'us-east-1' }),
      clock: systemClock,
      logger: createLogger({ level: 'SILENT' }),
      tiers,
      telemetry: new LogTelemetry(createLogger({ level: 'SILENT' })),
    });
    expect(deps.repos.users).toBeDefined();
    expect(deps.repos.accessTokens).toBeDefined();
    expect(() => deps.repos.receipts).toThrow(ConfigError);
    expect(() => deps.repos.receipts).toThrow(/TABLE_RECEIPTS is not set/);
  });
});
