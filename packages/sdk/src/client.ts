/**
 * The typed API client: openapi-fetch over types that openapi-typescript generates from the
 * service's OpenAPI document (generated/api.ts, rewritten by `npm run openapi`). Paths, parameters,
 * bodies and responses are all checked against the document; nothing here is written by hand.
 */
import createFetchClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/api.js';

export interface ClientOptions {
  /** The service's origin, e.g. https://receipts.example.com; the paths already begin with /api/v1. */
  baseUrl: string;
  /** Sent as X-API-Key. Keep issuer keys on your backend: a device should call your backend instead. */
  apiKey?: string;
  /** A fetch implementation (tests, React Native polyfills); globalThis.fetch by default. */
  fetch?: (request: Request) => Promise<Response>;
  /** Extra headers sent with every request. */
  headers?: Record<string, string>;
}

export type ReceiptServiceClient = Client<paths>;

export function createClient(options: ClientOptions): ReceiptServiceClient {
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey !== undefined) headers['X-API-Key'] = options.apiKey;
  return createFetchClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
}
