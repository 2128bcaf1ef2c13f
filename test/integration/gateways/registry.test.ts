import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ManualClock } from '../../../lib/kernel/clock.js';
import { ConfigError } from '../../../lib/kernel/config.js';
import { ServiceUnavailableError } from '../../../lib/kernel/errors.js';
import { GatewayError } from '../../../lib/gateways/vocabulary.js';
import { parseGatewayKind } from '../../../lib/gateways/port.js';
import {
  createGatewayRegistry,
  defaultSdkLoaders,
  type SdkLoaders,
  type SecretName,
} from '../../../lib/gateways/registry.js';
import { startGatewaySandbox, type GatewaySandbox } from '../../../local/gateway-sandbox/index.js';
import { gatewayConfigFromEnv } from '../../../local/gateway-settings.js';
import { paymentRequest, sandboxConfig } from './support.js';

const root = join(import.meta.dirname, '../../..');

function countingLoaders(): { loaders: SdkLoaders; loads: { stripe: number; square: number } } {
  const loads = { stripe: 0, square: 0 };
  return {
    loads,
    loaders: {
      stripe: () => {
        loads.stripe += 1;
        return defaultSdkLoaders.stripe();
      },
      square: () => {
        loads.square += 1;
        return defaultSdkLoaders.square();
      },
    },
  };
}

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(join(root, dir), { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('gateway configuration', () => {
  it('accepts the wire names and the provider aliases', () => {
    expect(
      ['gateway_a', 'stripe', 'gateway_b', 'square', 'paypal', 'toString'].map(parseGatewayKind),
    ).toEqual(['gateway_a', 'gateway_a', 'gateway_b', 'gateway_b', null, null]);
  });

  it('sends both gateways to the sandbox when GATEWAY_SANDBOX_URL is set, with safe defaults', () => {
    const config = gatewayConfigFromEnv({
      GATEWAY_SANDBOX_URL: 'http://127.0.0.1:4010',
      STRIPE_SECRET_KEY: 'sk_x',
    });
    expect(config).toEqual({
      gateway_a: { mode: 'sandbox', baseUrl: 'http://127.0.0.1:4010' },
      gateway_b: { mode: 'sandbox', baseUrl: 'http://127.0.0.1:4010', locationId: 'LSANDBOX' },
      timeoutMs: 10_000,
      maxAttempts: 3,
    });
  });

  it('enables only the providers whose credentials are present', () => {
    const config = gatewayConfigFromEnv({
      STRIPE_SECRET_KEY: 'sk_live_x',
      SQUARE_ACCESS_TOKEN: '',
      GATEWAY_TIMEOUT_MS: '2500',
    });
    expect(config.gateway_a).toEqual({ mode: 'provider', secretKey: 'sk_live_x' });
    expect(config.gateway_b).toBeNull();
    expect(config.timeoutMs).toBe(2_500);
    expect(createGatewayRegistry(config).configured()).toEqual(['gateway_a']);
  });

  it('enables gateways named in PAYMENT_GATEWAYS whose secrets come from the credentials provider', () => {
    const config = gatewayConfigFromEnv({
      PAYMENT_GATEWAYS: 'stripe, gateway_b',
      SQUARE_LOCATION_ID: 'L1',
      SQUARE_ENVIRONMENT: 'production',
    });
    expect(config.gateway_a).toEqual({ mode: 'provider', secretKey: undefined });
    expect(config.gateway_b).toEqual({
      mode: 'provider',
      accessToken: undefined,
      locationId: 'L1',
      environment: 'production',
    });
  });

  it.each([
    [{ PAYMENT_GATEWAYS: 'square' }, 'SQUARE_LOCATION_ID'],
    [{ PAYMENT_GATEWAYS: 'paypal' }, 'paypal'],
    [{ GATEWAY_TIMEOUT_MS: 'soon' }, 'GATEWAY_TIMEOUT_MS'],
    [{ GATEWAY_MAX_ATTEMPTS: '5' }, 'GATEWAY_MAX_ATTEMPTS'],
    [{ SQUARE_ENVIRONMENT: 'staging' }, 'SQUARE_ENVIRONMENT'],
    [{ GATEWAY_SANDBOX_URL: 'not a url' }, 'GATEWAY_SANDBOX_URL'],
  ])('refuses %j naming the bad variable', (env, named) => {
    expect(() => gatewayConfigFromEnv(env)).toThrow(ConfigError);
    expect(() => gatewayConfigFromEnv(env)).toThrow(named);
  });
});

describe('gateway registry', () => {
  let sandbox: GatewaySandbox;
  beforeAll(async () => {
    sandbox = await startGatewaySandbox();
  });
  afterAll(() => sandbox.stop());

  it('loads each SDK only when its gateway is first used, and once', async () => {
    const { loaders, loads } = countingLoaders();
    const registry = createGatewayRegistry(sandboxConfig(sandbox.url), { loaders });

    expect(registry.configured()).toEqual(['gateway_a', 'gateway_b']);
    expect(loads).toEqual({ stripe: 0, square: 0 });

    const [first, second] = await Promise.all([registry.get('gateway_a'), registry.get('gateway_a')]);
    expect(first).toBe(second);
    expect(first.kind).toBe('gateway_a');
    expect(loads).toEqual({ stripe: 1, square: 0 });

    const square = await registry.get('gateway_b');
    await registry.get('gateway_b');
    expect(square.kind).toBe('gateway_b');
    expect(loads).toEqual({ stripe: 1, square: 1 });
  });

  it('keeps the SDKs out of the static import graph of lib/gateways', async () => {
    const files = await sourceFiles('lib/gateways');
    // The adapters are the files that could import an SDK: a listing without them checks nothing.
    expect(files).toEqual(
      expect.arrayContaining([join(root, 'lib/gateways/stripe.ts'), join(root, 'lib/gateways/square.ts')]),
    );
    for (const file of files) {
      const source = await readFile(file, 'utf8');
      expect({
        file,
        valueImports: source.match(/^import (?!type )[^;]*from '(stripe|square)(\/[^']*)?';/gm),
      }).toEqual({
        file,
        valueImports: null,
      });
    }
  });

  it('is never imported by service code', async () => {
    const files = [...(await sourceFiles('lib')), ...(await sourceFiles('functions'))];
    // Both trees listed (a renamed folder reads as empty): the wiring that builds the gateways and
    // the route table that names the payment functions are among them.
    expect(files).toEqual(
      expect.arrayContaining([join(root, 'lib/wiring/aws-gateways.ts'), join(root, 'functions/routes.ts')]),
    );
    const offenders: string[] = [];
    for (const file of files) {
      const source = await readFile(file, 'utf8');
      if (/(from|import\s*\()\s*['"][^'"]*gateway-sandbox/.test(source)) offenders.push(file);
    }
    expect(offenders).toEqual([]);
  });

  it('takes missing secrets from the credentials provider, and retries a failed lookup on the next use', async () => {
    const asked: SecretName[] = [];
    const vault = new Map<SecretName, string>();
    const registry = createGatewayRegistry(
      {
        gateway_a: { mode: 'provider', secretKey: undefined },
        gateway_b: null,
        timeoutMs: 1_000,
        maxAttempts: 3,
      },
      {
        resolveSecret: async (name) => {
          asked.push(name);
          return vault.get(name);
        },
      },
    );

    await expect(registry.get('gateway_a')).rejects.toThrow(ConfigError);
    vault.set('STRIPE_SECRET_KEY', 'sk_test_from_secrets_manager');
    await expect(registry.get('gateway_a')).resolves.toMatchObject({ kind: 'gateway_a' });
    expect(asked).toEqual(['STRIPE_SECRET_KEY', 'STRIPE_SECRET_KEY']);
  });

  it('refuses live credentials read at run time outside production, naming them, and uses them in production', async () => {
    const liveKey = `sk_live_${'z'.repeat(24)}`;
    const provider = (stage: string) =>
      createGatewayRegistry(
        {
          gateway_a: { mode: 'provider', secretKey: undefined },
          gateway_b: {
            mode: 'provider',
            accessToken: 'EAAA-token',
            locationId: 'L1',
            environment: 'production',
          },
          timeoutMs: 1_000,
          maxAttempts: 3,
        },
        { stage, resolveSecret: async () => liveKey },
      );
    const staging = provider('staging');
    await expect(staging.get('gateway_a')).rejects.toThrow(ConfigError);
    await expect(staging.get('gateway_a')).rejects.toThrow(
      /STRIPE_SECRET_KEY: a live Stripe key .* "staging"/,
    );
    await expect(staging.get('gateway_b')).rejects.toThrow(
      /SQUARE_ENVIRONMENT: Square's production environment/,
    );
    const production = provider('prod');
    await expect(production.get('gateway_a')).resolves.toMatchObject({ kind: 'gateway_a' });
    await expect(production.get('gateway_b')).resolves.toMatchObject({ kind: 'gateway_b' });
  });

  it('answers 503 for a gateway that is not configured, without loading anything', async () => {
    const { loaders, loads } = countingLoaders();
    const registry = createGatewayRegistry(sandboxConfig(sandbox.url, { gateway_b: null }), { loaders });

    expect(registry.configured()).toEqual(['gateway_a']);
    await expect(registry.get('gateway_b')).rejects.toBeInstanceOf(ServiceUnavailableError);
    expect(loads).toEqual({ stripe: 0, square: 0 });
  });
});

describe('gateway sandbox control endpoints (for a sandbox in another process)', () => {
  let sandbox: GatewaySandbox;
  const clock = new ManualClock(Date.parse('2030-01-02T03:04:05.000Z'));
  const control = (path: string, init?: RequestInit) => fetch(`${sandbox.url}/__sandbox/${path}`, init);
  const post = (path: string, body: unknown) =>
    control(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    sandbox = await startGatewaySandbox({ clock });
  });
  afterAll(() => sandbox.stop());

  it('arms faults, reports stats and resets over HTTP', async () => {
    const stripe = await createGatewayRegistry(sandboxConfig(sandbox.url)).get('gateway_a');
    const armed = await post('faults', [
      { kind: 'status', operation: 'stripe.paymentIntents.create', status: 500, times: 'always' },
    ]);
    expect(armed.status).toBe(200);

    await expect(stripe.createPayment(paymentRequest())).rejects.toBeInstanceOf(GatewayError);
    const stats = (await (await control('stats')).json()) as { requests: Record<string, number> };
    expect(stats.requests['stripe.paymentIntents.create']).toBe(3);

    expect((await post('reset', {})).status).toBe(200);
    await expect(stripe.createPayment(paymentRequest())).resolves.toMatchObject({
      status: 'requires_payment_method',
    });
    expect(sandbox.stats.requests['stripe.paymentIntents.create']).toBe(1);
  });

  it('rejects a malformed fault', async () => {
    const response = await post('faults', { kind: 'status', operation: 'paypal.charge' });
    expect(response.status).toBe(400);
    expect(sandbox.faults.list()).toEqual([]);
  });

  it('stamps objects with the injected clock', async () => {
    const square = await createGatewayRegistry(sandboxConfig(sandbox.url)).get('gateway_b');
    const { paymentId } = await square.createPayment(paymentRequest());

    const response = await fetch(`${sandbox.url}/v2/payments/${paymentId}`, {
      headers: { Authorization: 'Bearer t' },
    });
    const { payment } = (await response.json()) as { payment: { created_at: string } };
    expect(payment.created_at).toBe('2030-01-02T03:04:05.000Z');
  });
});
