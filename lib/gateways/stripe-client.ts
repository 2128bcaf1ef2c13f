/**
 * The one place besides lib/gateways/stripe.ts that touches the Stripe SDK (an import boundary that
 * `npm run lint` enforces): loading it on first use, and building a client.
 */
import type Stripe from 'stripe';

export type StripeSdk = typeof import('stripe');

/** Dynamic, so cold starts that never take a payment never load the SDK. */
export const loadStripeSdk = (): Promise<StripeSdk> => import('stripe');

export interface StripeClientOptions {
  secretKey: string;
  /** A Stripe-compatible API at another address (a local test double); unset: api.stripe.com. */
  baseUrl?: string;
  maxNetworkRetries: number;
  /** The SDK's own timeout per attempt (`fetch` may end an attempt sooner). */
  timeoutMs: number;
  /** What the SDK sends its requests with (lib/gateways/timed-fetch.ts); unset: its own client. */
  fetch?: typeof fetch;
}

export function createStripeClient(sdk: StripeSdk, options: StripeClientOptions): Stripe {
  const common = {
    maxNetworkRetries: options.maxNetworkRetries,
    timeout: options.timeoutMs,
    ...(options.fetch ? { httpClient: sdk.default.createFetchHttpClient(options.fetch) } : {}),
  };
  if (options.baseUrl === undefined) return new sdk.default(options.secretKey, common);
  const url = new URL(options.baseUrl);
  const protocol = url.protocol === 'https:' ? 'https' : 'http';
  return new sdk.default(options.secretKey, {
    ...common,
    host: url.hostname,
    port: url.port || (protocol === 'https' ? 443 : 80),
    protocol,
  });
}
