import * as z from 'zod';
import { systemTimeouts, type Timeouts } from '../kernel/clock.js';
import { ConfigError, isLiveStripeKey, liveGatewayCredentialRefusal } from '../kernel/config.js';
import { ServiceUnavailableError } from '../kernel/errors.js';
import { parseGatewayKind, type GatewayKind, type GatewayRegistry, type PaymentGateway } from './port.js';
import { SquareGateway } from './square.js';
import { createSquareClient, loadSquareSdk, type SquareSdk } from './square-client.js';
import { StripeGateway } from './stripe.js';
import { createStripeClient, loadStripeSdk, type StripeSdk } from './stripe-client.js';
import { timedFetch } from './timed-fetch.js';

/** An empty variable (`FOO=` in a .env file) means unset, not an empty credential. */
export const unsetIfBlank = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === '' ? undefined : value), schema.optional());
const optionalText = unsetIfBlank(z.string().min(1));

/**
 * Environment read by the registry. Secrets may instead come from the `resolveSecret` option. There
 * is deliberately no variable that points the gateways elsewhere: a deployed function talks to the
 * providers only; the local stack builds its sandbox targets in local/gateway-settings.ts.
 */
export const gatewayConfigSchema = z.object({
  /** Comma-separated kinds to enable (aliases allowed). Unset: those whose credentials are set. */
  PAYMENT_GATEWAYS: optionalText,
  STRIPE_SECRET_KEY: optionalText,
  SQUARE_ACCESS_TOKEN: optionalText,
  SQUARE_LOCATION_ID: optionalText,
  SQUARE_ENVIRONMENT: z.enum(['sandbox', 'production']).default('sandbox'),
  GATEWAY_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** Attempts per request including the first; the spec's retry guidance caps it at 3. */
  GATEWAY_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(3).default(3),
  /** Signing secret of the Stripe webhook endpoint (`whsec_…`); or resolveSecret's. */
  STRIPE_WEBHOOK_SECRET: optionalText,
  /** Signature key of the Square webhook subscription; or resolveSecret's. */
  SQUARE_WEBHOOK_SIGNATURE_KEY: optionalText,
  /** The notification URL the Square subscription was registered with: Square signs it with the body. */
  SQUARE_WEBHOOK_URL: unsetIfBlank(z.url()),
});

/** `mode: 'sandbox'` is an API double at `baseUrl` that takes any credentials (local/gateway-sandbox). */
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

/** What verifies the providers' webhooks; unset values come from resolveSecret when first needed. */
export interface WebhookSettings {
  stripeSecret?: string | undefined;
  squareSignatureKey?: string | undefined;
  squareNotificationUrl?: string | undefined;
}

export interface GatewayConfig {
  gateway_a: StripeTarget | null;
  gateway_b: SquareTarget | null;
  timeoutMs: number;
  maxAttempts: number;
  webhooks?: WebhookSettings;
}

/** PAYMENT_GATEWAYS: comma-separated kinds or aliases. */
export function parseGatewayList(value: string): Set<GatewayKind> {
  const enabled = new Set<GatewayKind>();
  for (const name of value.split(',').map((part) => part.trim())) {
    const kind = parseGatewayKind(name);
    if (!kind)
      throw new ConfigError(`Invalid gateway configuration: PAYMENT_GATEWAYS names unknown "${name}"`);
    enabled.add(kind);
  }
  return enabled;
}

export function gatewayConfigFromEnv(env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const parsed = gatewayConfigSchema.safeParse(env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid gateway configuration: ${issues.join('; ')}`);
  }
  const values = parsed.data;
  let enabled: Set<GatewayKind>;
  if (values.PAYMENT_GATEWAYS !== undefined) {
    enabled = parseGatewayList(values.PAYMENT_GATEWAYS);
  } else {
    enabled = new Set();
    if (values.STRIPE_SECRET_KEY) enabled.add('gateway_a');
    if (values.SQUARE_ACCESS_TOKEN && values.SQUARE_LOCATION_ID) enabled.add('gateway_b');
  }
  if (enabled.has('gateway_b') && !values.SQUARE_LOCATION_ID) {
    throw new ConfigError('Invalid gateway configuration: gateway_b needs SQUARE_LOCATION_ID');
  }
  return {
    gateway_a: enabled.has('gateway_a') ? { mode: 'provider', secretKey: values.STRIPE_SECRET_KEY } : null,
    gateway_b: enabled.has('gateway_b')
      ? {
          mode: 'provider',
          accessToken: values.SQUARE_ACCESS_TOKEN,
          locationId: values.SQUARE_LOCATION_ID ?? '',
          environment: values.SQUARE_ENVIRONMENT,
        }
      : null,
    timeoutMs: values.GATEWAY_TIMEOUT_MS,
    maxAttempts: values.GATEWAY_MAX_ATTEMPTS,
    ...webhookSettingsOf(values),
  };
}

/** `{ webhooks }` when any webhook setting is given in the environment, else nothing. */
export function webhookSettingsOf(
  values: Pick<
    z.infer<typeof gatewayConfigSchema>,
    'STRIPE_WEBHOOK_SECRET' | 'SQUARE_WEBHOOK_SIGNATURE_KEY' | 'SQUARE_WEBHOOK_URL'
  >,
): { webhooks?: WebhookSettings } {
  const webhooks = {
    ...(values.STRIPE_WEBHOOK_SECRET ? { stripeSecret: values.STRIPE_WEBHOOK_SECRET } : {}),
    ...(values.SQUARE_WEBHOOK_SIGNATURE_KEY
      ? { squareSignatureKey: values.SQUARE_WEBHOOK_SIGNATURE_KEY }
      : {}),
    ...(values.SQUARE_WEBHOOK_URL ? { squareNotificationUrl: values.SQUARE_WEBHOOK_URL } : {}),
  };
  return Object.keys(webhooks).length > 0 ? { webhooks } : {};
}

export type SecretName =
  | 'STRIPE_SECRET_KEY'
  | 'SQUARE_ACCESS_TOKEN'
  | 'STRIPE_WEBHOOK_SECRET'
  | 'SQUARE_WEBHOOK_SIGNATURE_KEY'
  /** Not a secret, but known only late on the local stack (after its server listens). */
  | 'SQUARE_WEBHOOK_URL';
/** The deployed stack plugs in a Secrets Manager read here; undefined means "no such secret". */
export type ResolveSecret = (name: SecretName) => Promise<string | undefined>;

/** How the SDKs are loaded; injectable so tests can observe that nothing loads before first use. */
export interface SdkLoaders {
  stripe(): Promise<StripeSdk>;
  square(): Promise<SquareSdk>;
}

export const defaultSdkLoaders: SdkLoaders = {
  stripe: loadStripeSdk,
  square: loadSquareSdk,
};

export interface GatewayRegistryOptions {
  resolveSecret?: ResolveSecret;
  /** The stage: outside production, live credentials read at run time are refused (lib/kernel/config.ts). */
  stage?: string;
  loaders?: Partial<SdkLoaders>;
  /** What times a gateway call out after `timeoutMs` (the system's timers unless a test's clock). */
  timeouts?: Timeouts;
}

/**
 * The SDKs' own timeout per attempt: a backstop a minute past ours (stripe-client.ts's `attempts`,
 * Square's timedFetch), so that ours decides when an attempt has taken too long. A minute is longer
 * than a test waits (jest.config.js), so in a test only a move of its clock times a call out, and a
 * test that forgets to move it fails.
 */
export const sdkBackstopMs = (timeoutMs: number): number => timeoutMs + 60_000;

export function createGatewayRegistry(
  config: GatewayConfig,
  options: GatewayRegistryOptions = {},
): GatewayRegistry {
  const loaders: SdkLoaders = { ...defaultSdkLoaders, ...options.loaders };
  const built = new Map<GatewayKind, Promise<PaymentGateway>>();
  // Both SDKs count retries after the first attempt.
  const retries = config.maxAttempts - 1;
  const timeouts = options.timeouts ?? systemTimeouts;
  const timeoutMs = sdkBackstopMs(config.timeoutMs);

  async function secret(name: SecretName, fromEnv: string | undefined): Promise<string> {
    const value = fromEnv ?? (await options.resolveSecret?.(name));
    if (!value) throw new ConfigError(`Gateway credential ${name} is not configured`);
    const refusal =
      options.stage === undefined
        ? undefined
        : liveGatewayCredentialRefusal(options.stage, { setting: name, stripeKey: value });
    if (refusal) throw new ConfigError(`Gateway credential refused: ${refusal}`);
    return value;
  }

  // The sandbox takes any credentials, but both SDKs refuse to start without one.
  async function buildStripe(target: StripeTarget): Promise<PaymentGateway> {
    const sdk = await loaders.stripe();
    const attempts = { timeouts, ms: config.timeoutMs };
    const common = { maxNetworkRetries: retries, timeoutMs, attempts };
    const client =
      target.mode === 'sandbox'
        ? createStripeClient(sdk, { ...common, secretKey: 'sk_test_local_sandbox', baseUrl: target.baseUrl })
        : createStripeClient(sdk, {
            ...common,
            secretKey: await secret('STRIPE_SECRET_KEY', target.secretKey),
          });
    return new StripeGateway(client, {
      webhookSecret: () => secret('STRIPE_WEBHOOK_SECRET', config.webhooks?.stripeSecret),
      // The sandbox's intents say livemode: false themselves; a provider key's mode is the fallback.
      liveKey: target.mode === 'provider' && isLiveStripeKey(target.secretKey),
    });
  }

  async function buildSquare(target: SquareTarget): Promise<PaymentGateway> {
    const refusal =
      target.mode === 'provider' && options.stage !== undefined
        ? liveGatewayCredentialRefusal(options.stage, {
            setting: 'SQUARE_ENVIRONMENT',
            squareEnvironment: target.environment,
          })
        : undefined;
    if (refusal) throw new ConfigError(`Gateway credential refused: ${refusal}`);
    const sdk = await loaders.square();
    const fetch = timedFetch(timeouts, config.timeoutMs);
    const common = { maxRetries: retries, timeoutMs, fetch };
    const client =
      target.mode === 'sandbox'
        ? createSquareClient(sdk, {
            ...common,
            accessToken: 'local-sandbox-token',
            baseUrl: target.baseUrl,
            environment: 'sandbox',
          })
        : createSquareClient(sdk, {
            ...common,
            accessToken: await secret('SQUARE_ACCESS_TOKEN', target.accessToken),
            environment: target.environment,
          });
    return new SquareGateway(client, target.locationId, {
      testNonceFallback: target.mode === 'sandbox',
      webhooks: {
        helper: sdk.WebhooksHelper,
        signatureKey: () => secret('SQUARE_WEBHOOK_SIGNATURE_KEY', config.webhooks?.squareSignatureKey),
        notificationUrl: () => secret('SQUARE_WEBHOOK_URL', config.webhooks?.squareNotificationUrl),
      },
      // Square's payments do not say; the environment the credentials belong to does.
      livemode: target.mode === 'provider' && target.environment === 'production',
    });
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
