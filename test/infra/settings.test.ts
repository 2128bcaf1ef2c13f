import { describe, expect, it } from '@jest/globals';
import { App, Stack } from 'aws-cdk-lib';
import { forbiddenInputs } from '../../infra/bundle-guard.js';
import { envelopeTemplate } from '../../infra/gateway-responses.js';
import { resolveSettings, SettingsError, type SettingsInput } from '../../infra/settings.js';
import { tiers } from '../../lib/kernel/tiers.js';
import { resourcesOf, sharedTemplate } from './support.js';
import { synthVariant } from './variants.js';

const settingsFrom = (context: Record<string, unknown>, overrides?: SettingsInput) =>
  resolveSettings(new Stack(new App({ context }), 'S'), overrides);

describe('settings', () => {
  it('deploys with no context at all', () => {
    const settings = settingsFrom({});
    expect(settings).toMatchObject({
      stage: 'dev',
      resourcePrefix: 'receipt-service-dev',
      tiers,
      tiersOverridden: false,
      logLevel: 'INFO',
      logRetentionDays: 365,
      tokenTtlSeconds: 180,
      receiptRetentionDays: 2557,
      escrowRetentionDays: 90,
      auditRetentionDays: 400,
      stripeSecretName: '/dev/receipt-service/stripe-secret-key',
      squareSecretName: '/dev/receipt-service/square-access-token',
      squareEnvironment: 'sandbox',
      apiGatewayCloudWatchRole: true,
      unauthorizedAlarmThreshold: 50,
      forbiddenAlarmThreshold: 50,
      decryptionErrorAlarmThreshold: 20,
      grantErrorAlarmThreshold: 20,
      registerConflictAlarmThreshold: 1,
      reRegistrationAlarmThreshold: 1,
    });
    expect(settings.alarmEmail).toBeUndefined();
    expect(settings.squareLocationId).toBeUndefined();
  });

  it('reads `-c key=value` strings as the types they stand for', () => {
    const settings = settingsFrom({
      stage: 'prod',
      tokenTtlSeconds: '150',
      apiGatewayCloudWatchRole: 'false',
      dashboard: 'true',
      alarmEmail: 'ops@example.com',
      tiers: '{"enterprise":{"dailyQuota":20000000}}',
      logRetentionDays: '90',
      decryptionErrorAlarmThreshold: '5',
    });
    expect(settings).toMatchObject({
      stage: 'prod',
      tokenTtlSeconds: 150,
      apiGatewayCloudWatchRole: false,
      dashboard: true,
      alarmEmail: 'ops@example.com',
      stripeSecretName: '/prod/receipt-service/stripe-secret-key',
      tiersOverridden: true,
      logRetentionDays: 90,
      decryptionErrorAlarmThreshold: 5,
    });
    expect(settings.tiers.enterprise).toEqual({ ...tiers.enterprise, dailyQuota: 20_000_000 });
    expect(settings.tiers.free).toEqual(tiers.free);
  });

  it('lets props win over context', () => {
    expect(settingsFrom({ stage: 'staging', logLevel: 'DEBUG' }, { logLevel: 'WARN' })).toMatchObject({
      stage: 'staging',
      logLevel: 'WARN',
    });
  });

  it.each([
    [{ stage: 'Prod Stage' }, 'stage'],
    // Issue 20: a deployment named like the local stack is refused at synth (a stack named `local`
    // was accepted before, and its functions loosened the webhook URL guard by that name).
    [{ stage: 'local' }, 'stage'],
    [{ stage: 'local-eu' }, 'stage'],
    [{ tokenTtlSeconds: 60 }, 'tokenTtlSeconds'],
    [{ logRetentionDays: 31 }, 'logRetentionDays'],
    [{ alarmEmail: 'not-an-address' }, 'alarmEmail'],
    [{ registerConflictAlarmThreshold: 0 }, 'registerConflictAlarmThreshold'],
    [{ grantErrorAlarmThreshold: 'many' }, 'grantErrorAlarmThreshold'],
    [{ squareEnvironment: 'live' }, 'squareEnvironment'],
    [{ tiers: '{"gold":{"burst":1}}' }, 'tiers'],
    [{ tiers: { free: { burst: 0 } } }, 'tiers.free.burst'],
  ])('refuses %j, naming %s', (context, key) => {
    expect(() => settingsFrom(context)).toThrow(SettingsError);
    expect(() => settingsFrom(context)).toThrow(new RegExp(`${key.replace(/\./g, '\\.')}:`));
  });

  describe('live gateway credentials', () => {
    const liveKey = `sk_live_${'x'.repeat(24)}`;

    it('fail the synth of a staging stage given an sk_live_ key, naming the setting', () => {
      expect(() => synthVariant({ settings: { stage: 'staging', stripeSecretName: liveKey } })).toThrow(
        /stripeSecretName: a live Stripe key \(sk_live_\/rk_live_\) in the non-production stage "staging"/,
      );
    });

    it.each([
      [{ stage: 'staging', stripeSecretName: `rk_live_${'y'.repeat(24)}` }, 'stripeSecretName'],
      [{ stage: 'staging', squareSecretName: liveKey }, 'squareSecretName'],
      [{ stage: 'staging', squareEnvironment: 'production' }, 'squareEnvironment'],
      [{ stage: 'dev', squareEnvironment: 'production' }, 'squareEnvironment'],
      // Production may use live keys, from Secrets Manager only: a key in a setting would be in the template.
      [{ stage: 'prod', stripeSecretName: liveKey }, 'stripeSecretName'],
    ])('refuse %j, naming %s', (context, key) => {
      expect(() => settingsFrom(context)).toThrow(new RegExp(`${key}:`));
    });

    it("leave production its live Square environment and test keys' names alone", () => {
      expect(settingsFrom({ stage: 'prod', squareEnvironment: 'production' }).squareEnvironment).toBe(
        'production',
      );
      expect(settingsFrom({ stage: 'staging', stripeSecretName: '/staging/stripe' }).stripeSecretName).toBe(
        '/staging/stripe',
      );
    });
  });

  it('leaves the account-wide API Gateway logging role out when asked', () => {
    const { template } = synthVariant({ context: { apiGatewayCloudWatchRole: 'false' } }).templates;
    expect(Object.keys(resourcesOf(template, 'AWS::ApiGateway::Account'))).toHaveLength(0);
    const withRole = sharedTemplate();
    const [account] = Object.values(resourcesOf(withRole, 'AWS::ApiGateway::Account'));
    expect(account?.DeletionPolicy).toBe('Retain');
  });
});

describe('bundle guard', () => {
  it('finds modules from local/ among the bundle inputs', () => {
    const inputs = {
      'functions/payments/create-payment/handler.ts': {},
      'lib/gateways/registry.ts': {},
      'local/gateway-sandbox/server.ts': {},
      'node_modules/some-lib/local/index.js': {},
    };
    expect(forbiddenInputs({ inputs })).toEqual(['local/gateway-sandbox/server.ts']);
  });

  it('accepts a bundle of service code and dependencies only', () => {
    expect(
      forbiddenInputs({
        inputs: { 'functions/platform/health/handler.ts': {}, 'lib/platform/health.ts': {} },
      }),
    ).toEqual([]);
  });
});

describe('envelope template', () => {
  it('embeds the quoted message API Gateway substitutes, and escapes fixed ones', () => {
    expect(envelopeTemplate('not_found')).toContain('"message":$context.error.messageString,');
    const fixed = envelopeTemplate('forbidden', 'Say "no"');
    expect(
      JSON.parse(
        fixed.replaceAll('$context.authorizer.timestamp', 't').replaceAll('$context.requestId', 'r'),
      ),
    ).toEqual({
      success: false,
      error: { code: 'forbidden', message: 'Say "no"', timestamp: 't', request_id: 'r' },
    });
  });
});
