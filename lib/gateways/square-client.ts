/**
 * The one place besides lib/gateways/square.ts that touches the Square SDK (an import boundary that
 * `npm run lint` enforces): loading it on first use (about 0.5 s), and building a client.
 */
import type { SquareClient } from 'square';

export type SquareSdk = typeof import('square');

/** Dynamic, so cold starts that never take a payment never load the SDK. */
export const loadSquareSdk = (): Promise<SquareSdk> => import('square');

export interface SquareClientOptions {
  accessToken: string;
  /** A Square-compatible API at another address (a local test double); wins over `environment`. */
  baseUrl?: string;
  environment: 'sandbox' | 'production';
  maxRetries: number;
  /** The SDK's own timeout per attempt (`fetch` may end an attempt sooner). */
  timeoutMs: number;
  /** What the SDK sends its requests with (lib/gateways/timed-fetch.ts); unset: the global fetch. */
  fetch?: typeof fetch;
}

export function createSquareClient(sdk: SquareSdk, options: SquareClientOptions): SquareClient {
  const common = {
    token: options.accessToken,
    maxRetries: options.maxRetries,
    timeoutInSeconds: options.timeoutMs / 1000,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  if (options.baseUrl !== undefined) return new sdk.SquareClient({ ...common, baseUrl: options.baseUrl });
  const environment =
    options.environment === 'production' ? sdk.SquareEnvironment.Production : sdk.SquareEnvironment.Sandbox;
  return new sdk.SquareClient({ ...common, environment });
}
