import type Stripe from 'stripe';
import type { SquareClient } from 'square';
import * as z from 'zod';
import { ConfigError } from '../config.js';
import { ServiceUnavailableError } from '../errors.js';
import { parseGatewayKind, type GatewayKind, type GatewayRegistry, type PaymentGateway } from './port.js';
import { SquareGateway } from './square.js';
import { StripeGateway } from './stripe.js';

/** An empty variable (`FOO=` in a .env file) means unset, not an empty credential. */
const unsetIfBlank = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === '' ? undefined : value), schema.optional());
const optionalText = unsetIfBlank(z.string().min(1));

/** Environment read by the registry. Secrets may instead come from the `resolveSecret` option. */
export const gatewayConfigSchema = z.object({
  /** Comma-separated kinds to enable (aliases allowed). Unset: those whose credentials or sandbox are set. */
  PAYMENT_GATEWAYS: optionalText,
  STRIPE_SECRET_KEY: optionalText,
  SQUARE_ACCESS_TOKEN: optionalText,
  SQUARE_LOCATION_ID: optionalText,
  SQUARE_ENVIRONMENT: z.enum(['sandbox', 'production']).default('sandbox'),
  /** The local test double (local/gateway-sandbox); when set, both gateways talk to it and nothing else. */
  GATEWAY_SANDBOX_URL: unsetIfBlank(z.url()),
  GATEWAY_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** Attempts per request including the first; the spec's retry guidance caps it at 3. */
  GATEWAY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(3).default(3),
});

export type StripeTarget =
  { mode: 'sandbox'; baseUrl: string } | { mode: 'provider'; secretKey: string | undefined };
export type SquareTarget =
  | { mode: 'sandbox'; baseUrl: string; locationId: string }
  | {
      mode: 'provider';
      accessToken: string | undefined;
      locationId: string;
      environment: 'sandbox' | 'production';
    };

export interface GatewayConfig {
  gateway_a: StripeTarget | null;
  gateway_b: SquareTarget | null;
  timeoutMs: number;
  maxAttempts: number;
}

/** Any location id is accepted by the local sandbox; this one just makes its objects recognisable. */
const SANDBOX_LOCATION_ID = 'LSANDBOX';

export function gatewayConfigFromEnv(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const parsed = gatewayConfigSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid gateway configuration: ${issues.join('; ')}`);
  }
  const values = parsed.data;
  const sandbox = values.GATEWAY_SANDBOX_URL;
  const enabled = new Set<GatewayKind>();
  if (values.PAYMENT_GATEWAYS !== undefined) {
    for (const name of values.PAYMENT_GATEWAYS.split(',').map((part) => part.trim())) {
      const kind = parseGatewayKind(name);
      if (!kind) {
        throw new ConfigError(`Invalid gateway configuration: PAYMENT_GATEWAYS names unknown "${name}"`);
      }
      enabled.add(kind);
    }
  } else {
    if (sandbox || values.STRIPE_SECRET_KEY) enabled.add('gateway_a');
    if (sandbox || (values.SQUARE_ACCESS_TOKEN && values.SQUARE_LOCATION_ID)) enabled.add('gateway_b');
  }
  if (!sandbox && enabled.has('gateway_b') && !values.SQUARE_LOCATION_ID) {
    throw new ConfigError('Invalid gateway configuration: gateway_b needs SQUARE_LOCATION_ID');
  }
  const stripe: StripeTarget = sandbox
    ? { mode: 'sandbox', baseUrl: sandbox }
    : { mode: 'provider', secretKey: values.STRIPE_SECRET_KEY };
  const square: SquareTarget = sandbox
    ? { mode: 'sandbox', baseUrl: sandbox, locationId: values.SQUARE_LOCATION_ID ?? SANDBOX_LOCATION_ID }
    : {
        mode: 'provider',
        accessToken: values.SQUARE_ACCESS_TOKEN,
        locationId: values.SQUARE_LOCATION_ID ?? '',
        environment: values.SQUARE_ENVIRONMENT,
      };
  return {
    gateway_a: enabled.has('gateway_a') ? stripe : null,
    gateway_b: enabled.has('gateway_b') ? square : null,
    timeoutMs: values.GATEWAY_TIMEOUT_MS,
    maxAttempts: values.GATEWAY_MAX_ATTEMPTS,
  };
}

export type SecretName = 'STRIPE_SECRET_KEY' | 'SQUARE_ACCESS_TOKEN';
/** The deployed stack plugs in a Secrets Manager read here; undefined means "no such secret". */
export type ResolveSecret = (name: SecretName) => Promise<string | undefined>;

type StripeModule = typeof import('stripe');
type SquareModule = typeof import('square');

/** How the SDKs are loaded; injectable so tests can observe that nothing loads before first use. */
export interface SdkLoaders {
  stripe(): Promise<StripeModule>;
  square(): Promise<SquareModule>;
}

export const defaultSdkLoaders: SdkLoaders = {
  stripe: () => import('stripe'),
  square: () => import('square'),
};

export interface GatewayRegistryOptions {
  resolveSecret?: ResolveSecret;
  loaders?: Partial<SdkLoaders>;
}

export function createGatewayRegistry(
  config: GatewayConfig,
  options: GatewayRegistryOptions = {},
): GatewayRegistry {
  const loaders: SdkLoaders = { ...defaultSdkLoaders, ...options.loaders };
  const built = new Map<GatewayKind, Promise<PaymentGateway>>();
  // Both SDKs count retries after the first attempt.
  const retries = config.maxAttempts - 1;

  async function secret(name: SecretName, fromEnv: string | undefined): Promise<string> {
    const value = fromEnv ?? (await options.resolveSecret?.(name));
    if (!value) throw new ConfigError(`Gateway credential ${name} is not configured`);
    return value;
  }

  async function buildStripe(target: StripeTarget): Promise<PaymentGateway> {
    const { default: StripeClient } = await loaders.stripe();
    const common = { maxNetworkRetries: retries, timeout: config.timeoutMs };
    let client: Stripe;
    if (target.mode === 'sandbox') {
      const url = new URL(target.baseUrl);
      const protocol = url.protocol === 'https:' ? 'https' : 'http';
      client = new StripeClient('sk_test_local_sandbox', {
        ...common,
        host: url.hostname,
        port: url.port || (protocol === 'https' ? 443 : 80),
        protocol,
      });
    } else {
      client = new StripeClient(await secret('STRIPE_SECRET_KEY', target.secretKey), common);
    }
    return new StripeGateway(client);
  }

  async function buildSquare(target: SquareTarget): Promise<PaymentGateway> {
    const sdk = await loaders.square();
    const common = { maxRetries: retries, timeoutInSeconds: config.timeoutMs / 1000 };
    let client: SquareClient;
    if (target.mode === 'sandbox') {
      client = new sdk.SquareClient({ ...common, token: 'local-sandbox-token', baseUrl: target.baseUrl });
    } else {
      const environment =
        target.environment === 'production'
          ? sdk.SquareEnvironment.Production
          : sdk.SquareEnvironment.Sandbox;
      const token = await secret('SQUARE_ACCESS_TOKEN', target.accessToken);
      client = new sdk.SquareClient({ ...common, token, environment });
    }
    return new SquareGateway(client, target.locationId);
  }

  async function build(kind: GatewayKind): Promise<PaymentGateway> {
    if (kind === 'gateway_a' && config.gateway_a) return buildStripe(config.gateway_a);
    if (kind === 'gateway_b' && config.gateway_b) return buildSquare(config.gateway_b);
    throw new ServiceUnavailableError(`Payment gateway ${kind} is not configured`);
  }

  return {
    configured: () => (['gateway_a', 'gateway_b'] as const).filter((kind) => config[kind] !== null),
    get(kind) {
      let pending = built.get(kind);
      if (!pending) {
        // Shared by concurrent first calls, so one cold start builds one client.
        pending = build(kind);
        built.set(kind, pending);
        // A failed build (secret not readable yet) must not stick: the next call tries again.
        pending.catch(() => built.delete(kind));
      }
      return pending;
    },
  };
}
