/**
 * Named errors thrown by handlers and lib/. lib/http/error-envelope.ts is the one place that turns
 * them into HTTP responses; nothing else builds an error body.
 */
export type ErrorDetails = Record<string, unknown>;

/**
 * Every status the service answers with an error, and the platform codes each can carry: those can
 * come from any route (the pipeline, API Gateway itself). The OpenAPI document's status and code
 * tables are derived from this table. A status with no platform code is answered only with the
 * endpoint codes of the errors registered in ErrorRegistry.
 */
export const errorCatalogue = {
  400: { platform: ['INVALID_REQUEST', 'invalid_request'] },
  401: { platform: ['unauthorized'] },
  402: { platform: [] },
  403: { platform: ['forbidden'] },
  404: { platform: ['not_found'] },
  405: { platform: ['method_not_allowed'] },
  409: { platform: [] },
  413: { platform: ['payload_too_large'] },
  415: { platform: ['unsupported_media_type'] },
  429: { platform: ['rate_limit_exceeded'] },
  500: { platform: ['internal_server_error'] },
  502: { platform: [] },
  503: { platform: ['service_unavailable'] },
} as const satisfies Record<number, { platform: readonly string[] }>;

/**
 * The endpoint errors, one entry a class, keyed by its name. The kernel lists only the ones its own
 * mapping makes (lib/http/error-envelope.ts gives lib/crypto's failures these faces) and the shared
 * CONFLICT; a feature registers its own from its folder (lib/<feature>/vocabulary.ts) by declaration
 * merging, `declare module '../kernel/errors.js' { interface ErrorRegistry { … } }`. The codes a route
 * may document under a status (EndpointCode) are read off the registered classes' `status` and
 * `code`, so a feature's new error is documented without an edit here.
 */
export interface ErrorRegistry {
  InvalidCursorError: InvalidCursorError;
  ConflictError: ConflictError;
  DecryptionError: DecryptionError;
  KeyGenerationError: KeyGenerationError;
}

export type ErrorStatus = keyof typeof errorCatalogue;
export const errorStatuses = (Object.keys(errorCatalogue).map(Number) as ErrorStatus[]).sort((a, b) => a - b);
export type PlatformCode<S extends ErrorStatus> = (typeof errorCatalogue)[S]['platform'][number];
type RegisteredError = ErrorRegistry[keyof ErrorRegistry];
export type EndpointCode<S extends ErrorStatus> = S extends ErrorStatus
  ? Extract<RegisteredError, { readonly status: S }>['code']
  : never;
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

export class ForbiddenError extends AppError<403> {
  readonly status = 403 as const;
  readonly code = 'forbidden';
  constructor(message = 'This API key may not call this operation') {
    super(message);
  }
}

export class NotFoundError extends AppError<404> {
  readonly status = 404 as const;
  readonly code = 'not_found';
}

export class MethodNotAllowedError extends AppError<405> {
  readonly status = 405 as const;
  readonly code = 'method_not_allowed';
  constructor(allowed: string[]) {
    super('This method is not allowed on this resource', { allowed }, { Allow: allowed.join(', ') });
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

export class KeyGenerationError extends AppError<500> {
  readonly status = 500 as const;
  readonly code = 'KEY_GENERATION_FAILED';
  constructor() {
    super('Failed to generate key pair');
  }
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
