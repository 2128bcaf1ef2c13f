import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Clock } from '../../lib/kernel/clock.js';
import type { EventOutbox } from './events.js';
import type { SandboxOperation, SandboxStats } from './faults.js';
import type { SandboxJournal, Store } from './journal.js';

/** What the server hands a provider route: the parsed request plus whether a decline fault is armed. */
export interface ApiRequest {
  headers: IncomingHttpHeaders;
  body: string;
  params: string[];
  query: URLSearchParams;
  decline: boolean;
}

export interface ApiResponse {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface ApiRoute {
  method: 'GET' | 'POST';
  pattern: RegExp;
  operation: SandboxOperation;
  handle(request: ApiRequest): ApiResponse;
}

/** One provider's wire dialect: its routes and how it words failures that happen before a route runs. */
export interface ProviderApi {
  prefix: string;
  routes: ApiRoute[];
  unauthorised(headers: IncomingHttpHeaders): ApiResponse | null;
  failure(status: number): ApiResponse;
  notFound(): ApiResponse;
}

export interface SandboxContext {
  clock: Clock;
  stats: SandboxStats;
  journal: SandboxJournal;
  /** The providers' webhooks to the service, signed as they sign them. */
  events: EventOutbox;
}

/** A refund made in the provider's dashboard: the sandbox's admin call, on each provider. */
export interface DashboardRefunds {
  refund(paymentId: string, amount: number | undefined): ApiResponse;
}

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function randomId(length: number): string {
  return Array.from(randomBytes(length), (byte) => alphabet[byte % alphabet.length]).join('');
}

/** `length` random decimal digits: a network transaction id, an acquirer reference number. */
export function randomDigits(length: number): string {
  return Array.from(randomBytes(length), (byte) => String(byte % 10)).join('');
}

/** An issuer's authorization code as the networks give them: six upper-case letters and digits. */
export const randomAuthorizationCode = (): string => randomId(6).toUpperCase();

export function bearerToken(headers: IncomingHttpHeaders): string | null {
  const match = /^Bearer (\S+)$/.exec(headers.authorization ?? '');
  return match?.[1] ?? null;
}

/**
 * Stored results per idempotency key. A key replays its first result only for the same request; reuse
 * with different parameters is the caller's bug, reported by `mismatch`.
 */
export class IdempotencyStore {
  /** Kept with the payments, so a retry after a restart still finds the payment it made. */
  constructor(private readonly entries: Store<{ fingerprint: string; response: ApiResponse }>) {}

  run(
    key: string,
    fingerprint: string,
    mismatch: () => ApiResponse,
    execute: () => ApiResponse,
  ): ApiResponse {
    const stored = this.entries.get(key);
    if (stored) return stored.fingerprint === fingerprint ? stored.response : mismatch();
    const response = execute();
    // Validation failures are not remembered (as with both providers), so a corrected retry can succeed.
    if (response.status < 400 || response.status === 402 || isDecline(response)) {
      this.entries.set(key, { fingerprint, response });
    }
    return response;
  }
}

function isDecline(response: ApiResponse): boolean {
  const body = response.body as { errors?: { category?: string }[] } | null;
  return (
    Array.isArray(body?.errors) && body.errors.some((error) => error.category === 'PAYMENT_METHOD_ERROR')
  );
}

/** Order-insensitive JSON, so that the same parameters in another order count as the same request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
