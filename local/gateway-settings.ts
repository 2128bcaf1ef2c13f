/**
 * How the local stack points the payment gateways at the gateway sandbox. This lives here, not in
 * lib/gateways/registry.ts, so that no deployed function has a variable that sends payments to
 * another address.
 */
import * as z from 'zod';
import { ConfigError } from '../lib/kernel/config.js';
import {
  gatewayConfigFromEnv as providerGatewayConfigFromEnv,
  gatewayConfigSchema,
  parseGatewayList,
  unsetIfBlank,
  webhookSettingsOf,
  type GatewayConfig,
} from '../lib/gateways/registry.js';
import { gatewayKinds, type GatewayKind } from '../lib/gateways/port.js';

/** Any location id is accepted by the sandbox; this one just makes its objects recognisable. */
export const SANDBOX_LOCATION_ID = 'LSANDBOX';

const sandboxSchema = z.object({
  /** The local test double (local/gateway-sandbox); when set, both gateways talk to it and nothing else. */
  GATEWAY_SANDBOX_URL: unsetIfBlank(z.url()),
});

/**
 * The registry's reading of the environment, plus GATEWAY_SANDBOX_URL. With it, PAYMENT_GATEWAYS
 * still narrows what is enabled, provider credentials are ignored, and SQUARE_LOCATION_ID is
 * optional.
 */
export function gatewayConfigFromEnv(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const parsed = sandboxSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid gateway configuration: ${issues.join('; ')}`);
  }
  const baseUrl = parsed.data.GATEWAY_SANDBOX_URL;
  if (baseUrl === undefined) return providerGatewayConfigFromEnv(env);
  // Only the shared settings (timeout, attempts) are read from the provider view, so its
  // credential checks must not see anything that would enable a provider.
  const { timeoutMs, maxAttempts } = providerGatewayConfigFromEnv({
    GATEWAY_TIMEOUT_MS: env.GATEWAY_TIMEOUT_MS,
    GATEWAY_MAX_ATTEMPTS: env.GATEWAY_MAX_ATTEMPTS,
  });
  const enabled = env.PAYMENT_GATEWAYS ? parseGatewayList(env.PAYMENT_GATEWAYS) : new Set(gatewayKinds);
  // Webhook secrets may be given as variables; otherwise the local stack's key file has them.
  const webhookValues = gatewayConfigSchema
    .pick({ STRIPE_WEBHOOK_SECRET: true, SQUARE_WEBHOOK_SIGNATURE_KEY: true, SQUARE_WEBHOOK_URL: true })
    .safeParse(env);
  if (!webhookValues.success) {
    throw new ConfigError(`Invalid gateway configuration: ${z.prettifyError(webhookValues.error)}`);
  }
  return {
    ...sandboxGatewayConfig(baseUrl, {
      timeoutMs,
      maxAttempts,
      locationId: env.SQUARE_LOCATION_ID || SANDBOX_LOCATION_ID,
      enabled,
    }),
    ...webhookSettingsOf(webhookValues.data),
  };
}

export interface SandboxGatewayOptions {
  timeoutMs: number;
  maxAttempts: number;
  locationId?: string;
  enabled?: ReadonlySet<GatewayKind>;
}

/** Both gateways (or those in `enabled`) sent to the sandbox at `baseUrl`. */
export function sandboxGatewayConfig(baseUrl: string, options: SandboxGatewayOptions): GatewayConfig {
  const on = (kind: GatewayKind) => options.enabled === undefined || options.enabled.has(kind);
  return {
    gateway_a: on('gateway_a') ? { mode: 'sandbox', baseUrl } : null,
    gateway_b: on('gateway_b')
      ? { mode: 'sandbox', baseUrl, locationId: options.locationId ?? SANDBOX_LOCATION_ID }
      : null,
    timeoutMs: options.timeoutMs,
    maxAttempts: options.maxAttempts,
  };
}
