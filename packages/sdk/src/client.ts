/**
 * The typed API client: openapi-fetch over types that openapi-typescript generates from the
 * service's OpenAPI document (generated/api.ts, rewritten by `npm run openapi`). Paths, parameters,
 * bodies and responses are all checked against the document; nothing here is written by hand.
 * Every request goes through the specification's retry policy (retry.ts) unless it is turned off.
 */
import createFetchClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/api.js';
import {
  DEFAULT_TIMEOUT_MS,
  retryingFetch,
  systemClock,
  type RetryClock,
  type RetryOptions,
} from './retry.js';

export interface ClientOptions {
  /** The service's origin, e.g. https://receipts.example.com; the paths already begin with /api/v1. */
  baseUrl: string;
  /** Sent as X-API-Key. Keep issuer keys on your backend: a device should call your backend instead. */
  apiKey?: string;
  /** A fetch implementation (tests, React Native polyfills); globalThis.fetch by default. */
  fetch?: (request: Request) => Promise<Response>;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
  /**
   * Retries on 429, 500, 502, 503, 504 and network failures: at most 3 attempts, 2 s then 4 s apart
   * (or Retry-After when longer); GET and DELETE always, POST only with an `Idempotency-Key` header.
   * `false` sends every request once.
   */
  retry?: RetryOptions | false;
  /** Each attempt's timeout in ms, the whole answer included (30 000); `false` for none. */
  timeoutMs?: number | false;
  /** The clock the waits and timeouts run on; tests inject one. */
  clock?: RetryClock;
}

export type ReceiptServiceClient = Client<paths>;

export function createClient(options: ClientOptions): ReceiptServiceClient {
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey !== undefined) headers['X-API-Key'] = options.apiKey;
  // Looked up per request, so a fetch installed after the client was made (a polyfill) is used.
  const send = (request: Request) => (options.fetch ?? globalThis.fetch)(request);
  return createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers,
    fetch: retryingFetch(send, {
      retry: options.retry ?? {},
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      clock: options.clock ?? systemClock,
    }),
  });
}
