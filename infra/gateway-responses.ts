import { ResponseType } from 'aws-cdk-lib/aws-apigateway';

/**
 * What API Gateway answers by itself (bad key, throttling, unknown path...) rewritten into the
 * service's error envelope: `{"success":false,"error":{"code","message","timestamp","request_id"}}`
 * with the spec's lower-case platform codes.
 *
 * Gateway response templates are not VTL: only `$context` variables are substituted, so the
 * timestamp is API Gateway's `requestTime` (e.g. `22/Nov/2025:01:41:00 +0000`) rather than the ISO
 * form the functions write; no template can reformat it. `$context.error.messageString` arrives
 * already quoted, so it is placed without quotes.
 */
export interface EdgeErrorResponse {
  type: ResponseType;
  /** Omitted: keep the status API Gateway chose (the DEFAULT_* catch-alls cover several). */
  statusCode?: string;
  code: string;
  /** A fixed message, or API Gateway's own when omitted. */
  message?: string;
  /** A message made of `$context` variables, placed inside the JSON string as it is. */
  messageTemplate?: string;
  /** Extra headers as API Gateway mapping expressions (static values in single quotes). */
  headers?: Record<string, string>;
}

export const REQUEST_ID_HEADER = 'X-Request-Id';

/**
 * The reason the edge authorizer gives with a Deny (lib/api-keys/edge-authorizer.ts), which keeps it free of
 * quotes and backslashes since nothing here escapes it.
 */
export const AUTHORIZER_MESSAGE = '$context.authorizer.message';

export function envelopeTemplate(code: string, message?: string, messageTemplate?: string): string {
  const messageValue =
    messageTemplate !== undefined
      ? `"${messageTemplate}"`
      : message === undefined
        ? '$context.error.messageString'
        : JSON.stringify(message);
  return (
    `{"success":false,"error":{"code":${JSON.stringify(code)},"message":${messageValue},` +
    `"timestamp":"$context.requestTime","request_id":"$context.requestId"}}`
  );
}

/** Static header value in API Gateway's mapping syntax. */
export const staticHeader = (value: string): string => `'${value}'`;

export const edgeErrorResponses: readonly EdgeErrorResponse[] = [
  // Missing and wrong keys both arrive as INVALID_API_KEY (403 "Forbidden" by default).
  {
    type: ResponseType.INVALID_API_KEY,
    statusCode: '401',
    code: 'unauthorized',
    message: 'Missing or invalid API key',
  },
  // REST APIs answer a path with no resource (and, without the ANY fallbacks, a missing method)
  // with 403 "Missing Authentication Token".
  {
    type: ResponseType.MISSING_AUTHENTICATION_TOKEN,
    statusCode: '404',
    code: 'not_found',
    message: 'No resource at this path',
  },
  {
    type: ResponseType.RESOURCE_NOT_FOUND,
    statusCode: '404',
    code: 'not_found',
    message: 'No resource at this path',
  },
  {
    type: ResponseType.THROTTLED,
    statusCode: '429',
    code: 'rate_limit_exceeded',
    message: "Too many requests for this API key's tier; retry after a short pause",
    headers: { 'Retry-After': staticHeader('1') },
  },
  {
    // The quota resets at 00:00 UTC; a static header cannot say how far away that is.
    type: ResponseType.QUOTA_EXCEEDED,
    statusCode: '429',
    code: 'rate_limit_exceeded',
    message: "This API key's daily request quota is used up; it resets at 00:00 UTC",
    headers: { 'Retry-After': staticHeader('3600') },
  },
  // The edge authorizer answers without a header (API Gateway itself, before invoking it) with
  // UNAUTHORIZED, and refuses a key with a Deny, which arrives as ACCESS_DENIED carrying its reason in
  // the authorizer's context: both are a bad key, 401. Nothing else in this API denies (no resource
  // policy, no IAM authorization), and roles are checked by the functions (403 forbidden).
  {
    type: ResponseType.UNAUTHORIZED,
    statusCode: '401',
    code: 'unauthorized',
    message: 'Missing or invalid API key',
  },
  {
    type: ResponseType.ACCESS_DENIED,
    statusCode: '401',
    code: 'unauthorized',
    messageTemplate: AUTHORIZER_MESSAGE,
  },
  {
    // The authorizer failed or timed out (its table unreachable): not cached, so a retry may pass.
    type: ResponseType.AUTHORIZER_FAILURE,
    statusCode: '503',
    code: 'service_unavailable',
    message: 'The service is temporarily unavailable; retry later',
  },
  { type: ResponseType.WAF_FILTERED, statusCode: '403', code: 'forbidden', message: 'Access denied' },
  {
    // API Gateway's own ceiling is 10 MB; the functions refuse bodies over 128 KiB themselves.
    type: ResponseType.REQUEST_TOO_LARGE,
    statusCode: '413',
    code: 'payload_too_large',
    message: 'Request body is too large',
  },
  {
    type: ResponseType.UNSUPPORTED_MEDIA_TYPE,
    statusCode: '415',
    code: 'unsupported_media_type',
    message: 'Request body must be sent with Content-Type: application/json',
  },
  { type: ResponseType.BAD_REQUEST_PARAMETERS, statusCode: '400', code: 'invalid_request' },
  { type: ResponseType.BAD_REQUEST_BODY, statusCode: '400', code: 'invalid_request' },
  {
    type: ResponseType.INTEGRATION_FAILURE,
    statusCode: '503',
    code: 'service_unavailable',
    message: 'The service is temporarily unavailable; retry later',
  },
  {
    // API Gateway gives up after 29 s; payment creation is idempotent, so a retry is safe.
    type: ResponseType.INTEGRATION_TIMEOUT,
    statusCode: '503',
    code: 'service_unavailable',
    message: 'The service did not answer in time; retry later',
  },
  { type: ResponseType.DEFAULT_4XX, code: 'invalid_request' },
  { type: ResponseType.DEFAULT_5XX, code: 'internal_server_error', message: 'Internal server error' },
];
