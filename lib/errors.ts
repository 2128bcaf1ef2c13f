/**
 * Named errors thrown by handlers and lib/. lib/http/error-envelope.ts is the one place that turns
 * them into HTTP responses; nothing else builds an error body.
 */
export type ErrorDetails = Record<string, unknown>;

export abstract class AppError extends Error {
  abstract readonly status: number;
  abstract readonly code: string;
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

export class InvalidRequestError extends AppError {
  readonly status = 400;
  readonly code = 'INVALID_REQUEST';
}

export class UnauthorizedError extends AppError {
  readonly status = 401;
  readonly code = 'unauthorized';
  constructor(message = 'Missing or invalid API key') {
    super(message);
  }
}

export class ForbiddenError extends AppError {
  readonly status = 403;
  readonly code = 'forbidden';
  constructor(message = 'This API key may not call this operation') {
    super(message);
  }
}

export class NotFoundError extends AppError {
  readonly status = 404;
  readonly code = 'not_found';
}

export class KeyNotFoundError extends AppError {
  readonly status = 404;
  readonly code = 'KEY_NOT_FOUND';
  constructor(message = 'No generated key pair has this keyId') {
    super(message);
  }
}

export class MethodNotAllowedError extends AppError {
  readonly status = 405;
  readonly code = 'method_not_allowed';
  constructor(allowed: string[]) {
    super('This method is not allowed on this resource', { allowed }, { Allow: allowed.join(', ') });
  }
}

export class AlreadyRegisteredError extends AppError {
  readonly status = 409;
  readonly code = 'ALREADY_REGISTERED';
}

export class ConflictError extends AppError {
  readonly status = 409;
  readonly code = 'CONFLICT';
}

export class PayloadTooLargeError extends AppError {
  readonly status = 413;
  readonly code = 'payload_too_large';
  constructor(limitBytes: number) {
    super(`Request body is larger than ${limitBytes} bytes`, { limitBytes });
  }
}

export class UnsupportedMediaTypeError extends AppError {
  readonly status = 415;
  readonly code = 'unsupported_media_type';
  constructor() {
    super('Request body must be sent with Content-Type: application/json');
  }
}

export class RateLimitExceededError extends AppError {
  readonly status = 429;
  readonly code = 'rate_limit_exceeded';
  constructor(retryAfterSeconds: number) {
    super('Too many requests; retry after the rate-limit window resets', undefined, {
      'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    });
  }
}

/** Grant refused because the user or key is not the caller's, or the pair does not match. */
export class GrantForbiddenError extends AppError {
  readonly status = 403;
  readonly code = 'GRANT_ERROR';
  constructor() {
    super('Failed to grant access: the user and key are not a registered pair of this client');
  }
}

/** A user already holds the maximum number of live tokens. */
export class GrantLimitError extends AppError {
  readonly status = 429;
  readonly code = 'GRANT_ERROR';
  constructor(retryAfterSeconds: number, maxActive: number) {
    super(`Failed to grant access: at most ${maxActive} access tokens may be active per user`, undefined, {
      'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    });
  }
}

/**
 * Every decryption failure looks the same on the wire. `reason` goes to the audit log only and is
 * never serialised into a response.
 */
export class DecryptionError extends AppError {
  readonly status = 403;
  readonly code = 'DECRYPTION_ERROR';
  readonly reason: string;
  constructor(reason: string) {
    super('Failed to decrypt receipt: the access token, private key or envelope is not valid');
    this.reason = reason;
  }
}

export class EncryptionError extends AppError {
  readonly status = 500;
  readonly code = 'ENCRYPTION_ERROR';
  constructor() {
    super('Failed to encrypt receipt');
  }
}

export class KeyGenerationError extends AppError {
  readonly status = 500;
  readonly code = 'KEY_GENERATION_FAILED';
  constructor() {
    super('Failed to generate key pair');
  }
}

export class PaymentDeclinedError extends AppError {
  readonly status = 402;
  readonly code = 'PAYMENT_DECLINED';
}

export class GatewayError extends AppError {
  readonly status = 502;
  readonly code = 'GATEWAY_ERROR';
}

export class ServiceUnavailableError extends AppError {
  readonly status = 503;
  readonly code = 'service_unavailable';
}
