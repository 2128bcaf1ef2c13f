/**
 * Named errors thrown by handlers and lib/. lib/http/error-envelope.ts is the one place that turns
 * them into HTTP responses; nothing else builds an error body.
 */
export type ErrorDetails = Record<string, unknown>;

/**
 * Every status the service answers with an error, and the codes each can carry. `platform` codes
 * can come from any route (the pipeline, API Gateway itself); `endpoint` codes only from routes that
 * declare them. The OpenAPI document's status and code tables are derived from this table, and an
 * error class cannot name a code its status does not list (AppError's type parameters).
 */
export const errorCatalogue = {
  400: {
    platform: ['INVALID_REQUEST', 'invalid_request'],
    endpoint: ['INVALID_CURSOR', 'REFUND_EXCEEDS_PAYMENT', 'invalid_signature'],
  },
  401: { platform: ['unauthorized'], endpoint: ['invalid_signature'] },
  402: { platform: [], endpoint: ['PAYMENT_DECLINED'] },
  403: {
    platform: ['forbidden'],
    endpoint: ['GRANT_ERROR', 'DECRYPTION_ERROR', 'KEY_CHANGE_PROOF_REQUIRED'],
  },
  404: { platform: ['not_found'], endpoint: ['KEY_NOT_FOUND'] },
  405: { platform: ['method_not_allowed'], endpoint: [] },
  409: { platform: [], endpoint: ['CONFLICT', 'ALREADY_REGISTERED', 'WEBHOOK_LIMIT_REACHED'] },
  413: { platform: ['payload_too_large'], endpoint: [] },
  415: { platform: ['unsupported_media_type'], endpoint: [] },
  429: { platform: ['rate_limit_exceeded'], endpoint: ['GRANT_ERROR', 'CLAIM_LIMIT_EXCEEDED'] },
  500: { platform: ['internal_server_error'], endpoint: ['ENCRYPTION_ERROR', 'KEY_GENERATION_FAILED'] },
  502: { platform: [], endpoint: ['GATEWAY_ERROR'] },
  503: { platform: ['service_unavailable'], endpoint: [] },
} as const satisfies Record<number, { platform: readonly string[]; endpoint: readonly string[] }>;

export type ErrorStatus = keyof typeof errorCatalogue;
export const errorStatuses = (Object.keys(errorCatalogue).map(Number) as ErrorStatus[]).sort((a, b) => a - b);
export type PlatformCode<S extends ErrorStatus> = (typeof errorCatalogue)[S]['platform'][number];
export type EndpointCode<S extends ErrorStatus> = (typeof errorCatalogue)[S]['endpoint'][number];
export type ErrorCode<S extends ErrorStatus = ErrorStatus> = PlatformCode<S> | EndpointCode<S>;

export abstract class AppError<S extends ErrorStatus = ErrorStatus> extends Error {
  abstract readonly status: S;
  abstract readonly code: ErrorCode<S>;
  readonly details: ErrorDetails | undefined;
  /** Extra response headers (Retry-After and the like). */
  readonly headers: Record<string, string>;

  constructor(message: string, details?: ErrorDetails, headers: Record<string, string> = {}) {
    super(message);
    this.name = new.target.name;
    this.details = details;
    this.headers = headers;
  }
}

/** One problem with one field of a request: what every 400 names in `details.fields`. */
export interface FieldProblem {
  field: string;
  message: string;
}

export class InvalidRequestError extends AppError<400> {
  readonly status = 400 as const;
  readonly code = 'INVALID_REQUEST';
  constructor(message: string, fields: FieldProblem[], extra: ErrorDetails = {}) {
    super(message, { ...extra, fields });
  }
}

/** A paging cursor that this endpoint did not return for this resource. */
export class InvalidCursorError extends AppError<400> {
  readonly status = 400 as const;
  readonly code = 'INVALID_CURSOR';
  constructor(problem: string) {
    super(`The cursor is not valid: ${problem}`, { fields: [{ field: 'cursor', message: problem }] });
  }
}

export class UnauthorizedError extends AppError<401> {
  readonly status = 401 as const;
  readonly code = 'unauthorized';
  constructor(message = 'Missing or invalid API key') {
    super(message);
  }
}

/**
 * A gateway event whose signature is missing, wrong or too old (lib/gateways verifies it with the
 * provider's SDK). The message is the same whatever failed: a forger learns nothing from it.
 */
export class InvalidSignatureError extends AppError<401> {
  readonly status = 401 as const;
  readonly code = 'invalid_signature';
  constructor() {
    super('The event signature is missing, not valid, or too old');
  }
}

/**
 * A merchant's Receipt-Signature that does not stand (lib/merchants/receipt-signature.ts), or a
 * missing one where the merchant requires signatures: refused before anything is charged or stored.
 * Unlike a forged gateway event, the caller is an authenticated merchant checking its own till's
 * work, so the message names what failed.
 */
export class ReceiptSignatureRefusedError extends AppError<400> {
  readonly status = 400 as const;
  readonly code = 'invalid_signature';
  constructor(message: string, reason: string, extra: ErrorDetails = {}) {
    super(message, { reason, ...extra, fields: [{ field: 'Receipt-Signature', message }] });
  }
}

/**
 * A merchant's receiptCredential that does not stand (lib/merchants/receipt-credential.ts): a bad
 * signature, a key that is not the caller's active one, or claims that are not this receipt's. The
 * signature family's code, naming the body field; refused before anything is charged or stored.
 */
export class ReceiptCredentialRefusedError extends AppError<400> {
  readonly status = 400 as const;
  readonly code = 'invalid_signature';
  constructor(message: string, reason: string, extra: ErrorDetails = {}) {
    super(message, { reason, ...extra, fields: [{ field: 'receiptCredential', message }] });
  }
}

/** A refund larger than what is left of the payment; refused before the gateway is called. */
export class RefundExceedsPaymentError extends AppError<400> {
  readonly status = 400 as const;
  readonly code = 'REFUND_EXCEEDS_PAYMENT';
  constructor(requested: number, refundable: number, paymentStatus: string) {
    super(`The refund (${requested}) is more than the payment's refundable remainder (${refundable})`, {
      requested,
      refundable,
      paymentStatus,
      fields: [{ field: 'amount', message: `must be at most the refundable remainder (${refundable})` }],
    });
  }
}

export class ForbiddenError extends AppError<403> {
  readonly status = 403 as const;
  readonly code = 'forbidden';
  constructor(message = 'This API key may not call this operation') {
    super(message);
  }
}

/**
 * A change to a merchant's signing keys or policy without a valid Key-Change-Proof, once the merchant
 * has an active key: its API key alone no longer changes them.
 */
export class KeyChangeProofRequiredError extends AppError<403> {
  readonly status = 403 as const;
  readonly code = 'KEY_CHANGE_PROOF_REQUIRED';
  constructor(message: string, reason: string) {
    super(message, { reason, fields: [{ field: 'Key-Change-Proof', message }] });
  }
}

export class NotFoundError extends AppError<404> {
  readonly status = 404 as const;
  readonly code = 'not_found';
}

export class KeyNotFoundError extends AppError<404> {
  readonly status = 404 as const;
  readonly code = 'KEY_NOT_FOUND';
  constructor(message = 'No generated key pair has this keyId') {
    super(message);
  }
}

export class MethodNotAllowedError extends AppError<405> {
  readonly status = 405 as const;
  readonly code = 'method_not_allowed';
  constructor(allowed: string[]) {
    super('This method is not allowed on this resource', { allowed }, { Allow: allowed.join(', ') });
  }
}

export class AlreadyRegisteredError extends AppError<409> {
  readonly status = 409 as const;
  readonly code = 'ALREADY_REGISTERED';
}

/** A client already has as many webhooks as it may register. */
export class WebhookLimitError extends AppError<409> {
  readonly status = 409 as const;
  readonly code = 'WEBHOOK_LIMIT_REACHED';
  constructor(limit: number) {
    super(`A client may register at most ${limit} webhooks: delete one first`, { limit });
  }
}

export class ConflictError extends AppError<409> {
  readonly status = 409 as const;
  readonly code = 'CONFLICT';
}

export class PayloadTooLargeError extends AppError<413> {
  readonly status = 413 as const;
  readonly code = 'payload_too_large';
  constructor(limitBytes: number) {
    super(`Request body is larger than ${limitBytes} bytes`, { limitBytes });
  }
}

export class UnsupportedMediaTypeError extends AppError<415> {
  readonly status = 415 as const;
  readonly code = 'unsupported_media_type';
  constructor() {
    super('Request body must be sent with Content-Type: application/json');
  }
}

export class RateLimitExceededError extends AppError<429> {
  readonly status = 429 as const;
  readonly code = 'rate_limit_exceeded';
  constructor(retryAfterSeconds: number) {
    super('Too many requests; retry after the rate-limit window resets', undefined, {
      'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    });
  }
}

/** Grant refused because the user or key is not the caller's, or the pair does not match. */
export class GrantForbiddenError extends AppError<403> {
  readonly status = 403 as const;
  readonly code = 'GRANT_ERROR';
  constructor() {
    super('Failed to grant access: the user and key are not a registered pair of this client');
  }
}

/** A user already holds the maximum number of live tokens. */
export class GrantLimitError extends AppError<429> {
  readonly status = 429 as const;
  readonly code = 'GRANT_ERROR';
  constructor(retryAfterSeconds: number, maxActive: number) {
    super(`Failed to grant access: at most ${maxActive} access tokens may be active per user`, undefined, {
      'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    });
  }
}

/** A user's claims have named the day's allowance of transactions. */
export class ClaimLimitError extends AppError<429> {
  readonly status = 429 as const;
  readonly code = 'CLAIM_LIMIT_EXCEEDED';
  constructor(retryAfterSeconds: number, dailyLimit: number) {
    super(`At most ${dailyLimit} transactions may be claimed or matched per card per day`, undefined, {
      'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    });
  }
}

/**
 * Every decryption failure looks the same on the wire. `reason` goes to the audit log only and is
 * never serialised into a response.
 */
export class DecryptionError extends AppError<403> {
  readonly status = 403 as const;
  readonly code = 'DECRYPTION_ERROR';
  readonly reason: string;
  constructor(reason: string) {
    super('Failed to decrypt receipt: the access token, private key or envelope is not valid');
    this.reason = reason;
  }
}

export class EncryptionError extends AppError<500> {
  readonly status = 500 as const;
  readonly code = 'ENCRYPTION_ERROR';
  constructor() {
    super('Failed to encrypt receipt');
  }
}

export class KeyGenerationError extends AppError<500> {
  readonly status = 500 as const;
  readonly code = 'KEY_GENERATION_FAILED';
  constructor() {
    super('Failed to generate key pair');
  }
}

export class PaymentDeclinedError extends AppError<402> {
  readonly status = 402 as const;
  readonly code = 'PAYMENT_DECLINED';
}

export class GatewayError extends AppError<502> {
  readonly status = 502 as const;
  readonly code = 'GATEWAY_ERROR';
}

export class ServiceUnavailableError extends AppError<503> {
  readonly status = 503 as const;
  readonly code = 'service_unavailable';
  constructor(message: string, details?: ErrorDetails) {
    super(message, details, { 'Retry-After': '1' });
  }
}

const OUTAGE_NAMES = new Set([
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'InternalServerError',
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'TimeoutError',
]);
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
]);

/**
 * An AWS dependency that is down, throttling or unreachable, as opposed to a bug: such failures are
 * 503 service_unavailable (retry), not 500.
 */
export function isDependencyOutage(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const candidate = error as { name?: unknown; code?: unknown; $fault?: unknown; errors?: unknown };
  if (candidate.$fault === 'server') return true;
  if (typeof candidate.name === 'string' && OUTAGE_NAMES.has(candidate.name)) return true;
  if (typeof candidate.code === 'string' && NETWORK_CODES.has(candidate.code)) return true;
  // The SDK's retry layer can re-wrap a socket error as a plain Error whose message alone names it.
  const message = (error as { message?: unknown }).message;
  if (
    typeof message === 'string' &&
    [...NETWORK_CODES].some((networkCode) => message.includes(networkCode))
  ) {
    return true;
  }
  // Node reports a refused dual-stack connection as an AggregateError of per-address errors.
  return Array.isArray(candidate.errors) && candidate.errors.some((inner) => isDependencyOutage(inner));
}
