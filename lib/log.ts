import { Logger } from '@aws-lambda-powertools/logger';

/**
 * Keys whose values never reach a log line, at any depth: private keys, API keys, token ids, card
 * hashes and receipt content. Matching is on the key name, case-insensitive.
 */
const SECRET_KEYS =
  /^(private_?key|x-api-key|api_?key|authorization|access_?token_?id|token_?id|token|hashed_?pan|recipient_?hashed_?pan|secret.*|plaintext|receipt|items|body|envelope|ciphertext|encrypted_?aes_?key|value)$/i;
/** Our API keys have a recognisable shape; redact them even under an innocent key name. */
const API_KEY_SHAPE = /rk_[0-9a-f]{32}_[A-Za-z0-9_-]{20,}/g;
const PEM_SHAPE = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g;

export const REDACTED = '[REDACTED]';

export function redactingReplacer(key: string, value: unknown): unknown {
  if (key !== '' && SECRET_KEYS.test(key)) return REDACTED;
  if (typeof value === 'string') return value.replace(API_KEY_SHAPE, REDACTED).replace(PEM_SHAPE, REDACTED);
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
