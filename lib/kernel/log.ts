import { Logger } from '@aws-lambda-powertools/logger';
import { LruCache } from './lru.js';

/**
 * Keys whose values never reach a log line, at any depth: private keys, API keys, token ids, card
 * hashes and receipt content. Matching is on the key name, case-insensitive.
 */
const SECRET_KEYS =
  /^(private_?key|x-api-key|api_?key|authorization|access_?token_?id|token_?id|token|hashed_?pan|recipient_?hashed_?pan|secret.*|plaintext|receipt|items|body|envelope|ciphertext|encrypted_?aes_?key|value)$/i;

/*
 * Secrets by shape, wherever they appear: under a field name nobody thought of, inside a message or an
 * error's text. Ids the service must go on logging (UUIDs, 32-hex key ids, request ids) have none of
 * these shapes.
 */
const PEM_SHAPE = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g;
/** API keys: `rk_<keyId>_<secret>`, and the per-environment `rk_live_…`, `rk_test_…`, `rk_local_…`. */
const API_KEY_SHAPE = /(?<![A-Za-z0-9])rk_[A-Za-z0-9_-]{16,}/g;
/**
 * DER keys in base64 or base64url, line-wrapped or not: every RSA and EC key, public or private,
 * begins with an ASN.1 SEQUENCE header, which base64 spells MI…, MH… or MF….
 */
const DER_KEY_SHAPE = /(?<![A-Za-z0-9+/_-])M[IHF](?:[A-Za-z0-9+/_-]|\r?\n){60,}={0,2}/g;
/**
 * Any other long base64 run with the mix of cases and digits random bytes have: a slice of a key, a
 * wrapped key, ciphertext. A path or a word has no digits or no capitals and is left alone.
 */
const LONG_BASE64_SHAPE = /[A-Za-z0-9+/_-]{100,}={0,2}/g;
/** 64 hex digits or more: a hashedPan, or any other SHA-256 of something secret. */
const LONG_HEX_SHAPE = /(?<![0-9A-Fa-f])[0-9A-Fa-f]{64,}(?![0-9A-Fa-f])/g;
const UUID_SHAPE = /[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}/g;
/** The shortest secret shape (an API key) is 19 characters; anything shorter is returned as it is. */
const SHORTEST_SECRET = 19;

export const REDACTED = '[REDACTED]';

const looksRandom = (run: string): boolean => /[0-9]/.test(run) && /[A-Z]/.test(run) && /[a-z]/.test(run);

/**
 * Token ids are UUIDs, like every id the service must go on logging, so no shape tells them apart.
 * The service names each token id it issues or honours, and from then on that value is redacted
 * wherever it appears. Tokens live three minutes; the newest 10,000 cover far more than one
 * container sees in that time.
 */
const secretIds = new LruCache<string, true>(10_000);

export function redactEverywhere(id: string): void {
  secretIds.set(id.toLowerCase(), true);
}

export function redactSecrets(text: string): string {
  if (text.length < SHORTEST_SECRET) return text;
  return text
    .replace(PEM_SHAPE, REDACTED)
    .replace(API_KEY_SHAPE, REDACTED)
    .replace(DER_KEY_SHAPE, REDACTED)
    .replace(LONG_BASE64_SHAPE, (run) => (looksRandom(run) ? REDACTED : run))
    .replace(LONG_HEX_SHAPE, REDACTED)
    .replace(UUID_SHAPE, (id) => (secretIds.get(id.toLowerCase()) ? REDACTED : id));
}

export function redactingReplacer(key: string, value: unknown): unknown {
  if (key !== '' && SECRET_KEYS.test(key)) return REDACTED;
  if (typeof value === 'string') return redactSecrets(value);
  return value;
}

export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';

export function createLogger(options: { level: LogLevel; serviceName?: string }): Logger {
  return new Logger({
    serviceName: options.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? 'receipt-service',
    logLevel: options.level,
    jsonReplacerFn: redactingReplacer,
  });
}

export type { Logger };
