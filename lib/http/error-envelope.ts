import * as cryptoErrors from '../crypto/errors.js';
import {
  AppError,
  DecryptionError,
  InvalidCursorError,
  InvalidRequestError,
  isDependencyOutage,
  KeyGenerationError,
  ServiceUnavailableError,
} from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import type { Telemetry } from '../kernel/telemetry.js';

/** The one place an error becomes an HTTP response. 5xx details never leave the service. */
export interface ErrorBody {
  success: false;
  error: {
    code: string;
    message: string;
    details?: Record<string, unknown>;
    timestamp: string;
    request_id: string;
  };
}

export interface HttpResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

interface MiddyHttpError {
  statusCode: number;
  message: string;
}

const isMiddyHttpError = (error: unknown): error is MiddyHttpError =>
  typeof error === 'object' &&
  error !== null &&
  typeof (error as { statusCode?: unknown }).statusCode === 'number' &&
  typeof (error as { message?: unknown }).message === 'string';

/** Middy's own middlewares throw http-errors; translate the ones they raise into our codes. */
function fromMiddy(error: MiddyHttpError): {
  status: number;
  code: string;
  message: string;
  details?: Record<string, unknown>;
} {
  switch (error.statusCode) {
    case 415:
      return {
        status: 415,
        code: 'unsupported_media_type',
        message: 'Request body must be sent with Content-Type: application/json',
      };
    case 413:
      return { status: 413, code: 'payload_too_large', message: 'Request body is too large' };
    case 400:
    case 422:
      // Malformed JSON, or JSON with a forbidden key such as __proto__.
      return {
        status: 400,
        code: 'INVALID_REQUEST',
        message: 'Invalid request body: not well-formed JSON',
        details: { fields: [{ field: '(body)', message: 'is not well-formed JSON' }] },
      };
    default:
      return error.statusCode < 500
        ? { status: error.statusCode, code: 'invalid_request', message: error.message }
        : { status: 500, code: 'internal_server_error', message: 'Internal server error' };
  }
}

/** The crypto module throws its own errors and knows nothing of HTTP; this is their HTTP face. */
function fromCrypto(error: cryptoErrors.CryptoError): AppError | undefined {
  if (error instanceof cryptoErrors.DecryptionError) return new DecryptionError(error.reason);
  if (error instanceof cryptoErrors.CursorRefusedError)
    return new InvalidCursorError(cryptoErrors.CursorRefusedError.problem);
  if (error instanceof cryptoErrors.InvalidPublicKeyError) {
    return new InvalidRequestError(error.message, [
      {
        field: error.field,
        message: `${error.problem}; expected base64 DER SubjectPublicKeyInfo, PEM or a public JWK, RSA 2048 to 4096 bits or EC P-256`,
      },
    ]);
  }
  if (error instanceof cryptoErrors.KeyGenerationError)
    return Object.assign(new KeyGenerationError(), { cause: error });
  if (error instanceof cryptoErrors.KeyUnavailableError) {
    return Object.assign(new ServiceUnavailableError(error.message, error.details), { cause: error });
  }
  return undefined;
}

/**
 * Answers counted by their code, whichever endpoint gives them: the operator's alarms on probing
 * (DECRYPTION_ERROR) and on token hoarding or user enumeration (GRANT_ERROR) read these metrics.
 */
const countedCodes = new Map<string, 'DecryptionErrorAnswers' | 'GrantErrorAnswers'>([
  ['DECRYPTION_ERROR', 'DecryptionErrorAnswers'],
  ['GRANT_ERROR', 'GrantErrorAnswers'],
]);

export function errorResponse(
  error: unknown,
  requestId: string,
  now: Date,
  logger?: Logger,
  telemetry?: Pick<Telemetry, 'count'>,
): HttpResponse {
  const translated = error instanceof cryptoErrors.CryptoError ? fromCrypto(error) : undefined;
  if (translated) return errorResponse(translated, requestId, now, logger, telemetry);
  let status: number;
  let code: string;
  let message: string;
  let details: Record<string, unknown> | undefined;
  let headers: Record<string, string> = {};
  if (error instanceof AppError) {
    ({ status, code, message, details } = error);
    headers = error.headers;
  } else if (isDependencyOutage(error)) {
    status = 503;
    code = 'service_unavailable';
    message = 'A service dependency is temporarily unavailable; retry shortly';
    headers = { 'Retry-After': '1' };
  } else if (isMiddyHttpError(error)) {
    ({ status, code, message, details } = fromMiddy(error));
  } else {
    status = 500;
    code = 'internal_server_error';
    message = 'Internal server error';
  }
  if (status >= 500) {
    logger?.error('request failed', { error: error instanceof Error ? error : String(error), status, code });
    // A 500 keeps only its code and fixed message; 502/503 details are written by us (which
    // dependency is down) and never carry the cause.
    if (status === 500) details = undefined;
  }
  // One line per refusal carrying its code, for whoever reads the log; the alarms read the counts.
  if (status < 500) logger?.info('request refused', { status, code });
  const counted = countedCodes.get(code);
  if (counted) telemetry?.count(counted);
  const body: ErrorBody = {
    success: false,
    error: {
      code,
      message,
      ...(details ? { details } : {}),
      timestamp: now.toISOString(),
      request_id: requestId,
    },
  };
  return {
    statusCode: status,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}
