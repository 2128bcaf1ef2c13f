import { describe, expect, it } from '@jest/globals';
import { gatewayConfigFromEnv as deployedGatewayConfig } from '../../../lib/gateways/registry.js';
import { gatewayConfigFromEnv as localGatewayConfig } from '../../../local/gateway-settings.js';

const SANDBOX = 'http://127.0.0.1:4010';

describe('where the sandbox setting lives', () => {
  it('a deployed function ignores GATEWAY_SANDBOX_URL: no variable sends its payments elsewhere', () => {
    expect(deployedGatewayConfig({ GATEWAY_SANDBOX_URL: SANDBOX, STRIPE_SECRET_KEY: 'sk_live_x' })).toEqual({
      gateway_a: { mode: 'provider', secretKey: 'sk_live_x' },
      gateway_b: null,
      timeoutMs: 10_000,
      maxAttempts: 3,
    });
  });

  it('the local stack honours it, narrowed by PAYMENT_GATEWAYS, with the shared settings read as usual', () => {
    expect(
      localGatewayConfig({
        GATEWAY_SANDBOX_URL: SANDBOX,
        PAYMENT_GATEWAYS: 'square',
        GATEWAY_TIMEOUT_MS: '2500',
        SQUARE_ACCESS_TOKEN: 'real-token-ignored',
      }),
    ).toEqual({
      gateway_a: null,
      gateway_b: { mode: 'sandbox', baseUrl: SANDBOX, locationId: 'LSANDBOX' },
      timeoutMs: 2_500,
      maxAttempts: 3,
    });
  });

  it('the local stack without a sandbox reads the providers exactly as a deployed function does', () => {
    const env = { STRIPE_SECRET_KEY: 'sk_test_x', SQUARE_ACCESS_TOKEN: 't', SQUARE_LOCATION_ID: 'L1' };
    expect(localGatewayConfig(env)).toEqual(deployedGatewayConfig(env));
  });
});
