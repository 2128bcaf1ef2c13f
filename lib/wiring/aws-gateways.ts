import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import type { ServiceConfig } from '../kernel/config.js';
import { createGatewayRegistry, gatewayConfigFromEnv, type SecretName } from '../gateways/registry.js';
import type { GatewayRegistry } from '../gateways/port.js';
import type { Logger } from '../kernel/log.js';

/** Secrets Manager names of the provider credentials, set by the CDK stack. */
const credentialVariables = {
  STRIPE_SECRET_KEY: 'STRIPE_SECRET_NAME',
  SQUARE_ACCESS_TOKEN: 'SQUARE_SECRET_NAME',
} as const;

/**
 * And of the webhook signing secrets, set for the events function only (the only one granted them).
 * The Square notification URL is not secret: SQUARE_WEBHOOK_URL carries it.
 */
const secretNameVariables: Partial<Record<SecretName, string>> = {
  ...credentialVariables,
  STRIPE_WEBHOOK_SECRET: 'STRIPE_WEBHOOK_SECRET_NAME',
  SQUARE_WEBHOOK_SIGNATURE_KEY: 'SQUARE_WEBHOOK_SECRET_NAME',
};

let registry: GatewayRegistry | undefined;

/**
 * Gateways for a deployed function: credentials are read from Secrets Manager on first use and
 * cached by Powertools for the life of the container (refreshed every 5 minutes, so rotation lands).
 */
export function awsGateways(config: ServiceConfig, logger: Logger): GatewayRegistry {
  if (registry) return registry;
  const env = process.env;
  const enabled = Object.entries(credentialVariables)
    .filter(([, variable]) => env[variable])
    .map(([name]) => (name === 'STRIPE_SECRET_KEY' ? 'gateway_a' : 'gateway_b'));
  registry = createGatewayRegistry(
    gatewayConfigFromEnv({
      // Three attempts must fit in API Gateway's 29 s integration timeout.
      GATEWAY_TIMEOUT_MS: '8000',
      ...env,
      PAYMENT_GATEWAYS: env.PAYMENT_GATEWAYS ?? enabled.join(','),
    }),
    {
      // A staging function given a live key in its secret refuses it when it reads it.
      stage: config.stage,
      resolveSecret: async (name) => {
        const variable = secretNameVariables[name];
        const secretName = variable ? env[variable] : undefined;
        if (!secretName) return undefined;
        const value = await getSecret<string>(secretName, { maxAge: 300 });
        if (typeof value !== 'string') logger.error('gateway secret is not a string', { secretName });
        return typeof value === 'string' ? value : undefined;
      },
    },
  );
  return registry;
}
