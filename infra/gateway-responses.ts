/**
 * What API Gateway answers by itself (bad key, throttling, unknown path...) rewritten into the
 * service's error envelope: `{"success":false,"error":{"code","message","timestamp","request_id"}}`
 * with the spec's lower-case platform codes, and the headers every response carries.
 *
 * Gateway response templates are not VTL: only variables are substituted, and API Gateway has no
 * variable holding an ISO 8601 time (`requestTime` is `22/Nov/2025:01:41:00 +0000`,
 * `requestTimeEpoch` milliseconds). The edge authorizer runs for every request (no result cache) and
 * puts the request's time, formatted, in its context: `$context.authorizer.timestamp`. The same
 * context carries the rate limit that binds for the caller (lib/api-keys/edge-authorizer.ts), which
 * the X-RateLimit-* headers map. `$context.error.messageString` arrives already quoted, so it is
 * placed without quotes.
 *
 * What API Gateway answers before the authorizer has run has no such context: a body over 10 MB
 * (REQUEST_TOO_LARGE), the authorizer itself failing (AUTHORIZER_FAILURE), a WAF rule (none is
 * attached) and the account-level throttle. Those responses carry an empty `timestamp` and empty
 * rate-limit headers; docs/API.md says so. Unknown paths and methods never reach a gateway response:
 * they are answered by mock methods behind the authorizer (infra/api-definition.ts).
 */
/**
 * API Gateway's response types (ResponseType in aws-cdk-lib): plain names here, so the local server
 * reads these declarations without loading the CDK.
 */
export type GatewayResponseType =
  | 'INVALID_API_KEY'
  | 'MISSING_AUTHENTICATION_TOKEN'
  | 'RESOURCE_NOT_FOUND'
  | 'THROTTLED'
  | 'QUOTA_EXCEEDED'
  | 'UNAUTHORIZED'
  | 'ACCESS_DENIED'
  | 'AUTHORIZER_FAILURE'
  | 'WAF_FILTERED'
  | 'REQUEST_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'BAD_REQUEST_PARAMETERS'
  | 'BAD_REQUEST_BODY'
  | 'INTEGRATION_FAILURE'
  | 'INTEGRATION_TIMEOUT'
  | 'DEFAULT_4XX'
  | 'DEFAULT_5XX';

export interface EdgeErrorResponse {
  type: GatewayResponseType;
  /** Omitted: keep the status API Gateway chose (the DEFAULT_* catch-alls cover several). */
  statusCode?: string;
  code: string;
  /** A fixed message, or API Gateway's own when omitted. */
  message?: string;
  /** A message made of `$context` variables, placed inside the JSON string as it is. */
  messageTemplate?: string;
  /** Extra headers as API Gateway mapping expressions (static values in single quotes). */
  headers?: Record<string, string>;
  /** The X-RateLimit-* headers describe the daily quota (QUOTA_EXCEEDED), else the binding limit. */
  rateLimit?: 'binding' | 'quota';
  /** API Gateway makes it before the authorizer runs: no context, so no timestamp and no rate limit. */
  beforeAuthorizer?: true;
}

/** Static header value in API Gateway's mapping syntax. */
export const staticHeader = (value: string): string => `'${value}'`;

/** The authorizer's context entry holding the request's ISO 8601 time. */
export const TIMESTAMP = '$context.authorizer.timestamp';

/** X-RateLimit-* as mapping expressions from the authorizer's context (EdgeContext). */
export function rateLimitHeaders(kind: 'binding' | 'quota' = 'binding'): Record<string, string> {
  return kind === 'quota'
    ? {
        'X-RateLimit-Limit': 'context.authorizer.quotaLimit',
        'X-RateLimit-Remaining': staticHeader('0'),
        'X-RateLimit-Reset': 'context.authorizer.quotaReset',
      }
    : {
        'X-RateLimit-Limit': 'context.authorizer.rateLimitLimit',
        'X-RateLimit-Remaining': 'context.authorizer.rateLimitRemaining',
        'X-RateLimit-Reset': 'context.authorizer.rateLimitReset',
      };
}

/**
 * The security headers the functions' answers carry (Middy's http-security-headers, lib/http/pipeline.ts),
 * so an answer API Gateway makes is no weaker than one a function makes.
 */
const securityHeaders: Record<string, string> = {
  'X-Content-Type-Options': staticHeader('nosniff'),
  'X-Frame-Options': staticHeader('DENY'),
  'Strict-Transport-Security': staticHeader('max-age=15552000; includeSubDomains'),
  'Content-Security-Policy': staticHeader("default-src 'none'; frame-ancestors 'none'"),
  'Referrer-Policy': staticHeader('no-referrer'),
};

/** What every answer API Gateway makes carries: its request id, no-store, the security headers. */
const commonHeaders = (): Record<string, string> => ({
  [REQUEST_ID_HEADER]: 'context.requestId',
  // As on the functions' answers: an error about a key must never sit in a shared cache.
  'Cache-Control': staticHeader('no-store'),
  ...securityHeaders,
});

/** Every header of one gateway response, as API Gateway mapping expressions. */
export function gatewayResponseHeaders(response: EdgeErrorResponse): Record<string, string> {
  return { ...commonHeaders(), ...rateLimitHeaders(response.rateLimit), ...response.headers };
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
    `"timestamp":"${TIMESTAMP}","request_id":"$context.requestId"}}`
  );
}

export const edgeErrorResponses: readonly EdgeErrorResponse[] = [
  // Missing and wrong keys both arrive as INVALID_API_KEY (403 "Forbidden" by default).
  {
    type: 'INVALID_API_KEY',
    statusCode: '401',
    code: 'unauthorized',
    message: 'Missing or invalid API key',
  },
  // REST APIs answer a path with no resource (and, without the ANY fallbacks, a missing method)
  // with 403 "Missing Authentication Token".
  {
    type: 'MISSING_AUTHENTICATION_TOKEN',
    statusCode: '404',
    code: 'not_found',
    message: 'No resource at this path',
  },
  {
    type: 'RESOURCE_NOT_FOUND',
    statusCode: '404',
    code: 'not_found',
    message: 'No resource at this path',
  },
  {
    type: 'THROTTLED',
    statusCode: '429',
    code: 'rate_limit_exceeded',
    message: "Too many requests for this API key's tier; retry after a short pause",
    headers: { 'Retry-After': staticHeader('1') },
  },
  {
    // The quota resets at 00:00 UTC; a static header cannot say how far away that is.
    type: 'QUOTA_EXCEEDED',
    statusCode: '429',
    code: 'rate_limit_exceeded',
    message: "This API key's daily request quota is used up; it resets at 00:00 UTC",
    headers: { 'Retry-After': staticHeader('3600') },
    rateLimit: 'quota',
  },
  // The edge authorizer has no identity source, so a request without X-API-Key reaches it too: it
  // refuses a missing or bad key with a Deny, which arrives as ACCESS_DENIED carrying its reason in
  // the authorizer's context, 401. UNAUTHORIZED (API Gateway's own answer when an identity source is
  // missing) stays declared for safety. Nothing else in this API denies (no resource policy, no IAM
  // authorization), and roles are checked by the functions (403 forbidden).
  {
    type: 'UNAUTHORIZED',
    statusCode: '401',
    code: 'unauthorized',
    message: 'Missing or invalid API key',
  },
  {
    type: 'ACCESS_DENIED',
    statusCode: '401',
    code: 'unauthorized',
    messageTemplate: AUTHORIZER_MESSAGE,
  },
  {
    // The authorizer failed or timed out (its table unreachable): not cached, so a retry may pass.
    type: 'AUTHORIZER_FAILURE',
    statusCode: '503',
    code: 'service_unavailable',
    message: 'The service is temporarily unavailable; retry later',
    beforeAuthorizer: true,
  },
  {
    type: 'WAF_FILTERED',
    statusCode: '403',
    code: 'forbidden',
    message: 'Access denied',
    beforeAuthorizer: true,
  },
  {
    // API Gateway's own ceiling is 10 MB; the functions refuse bodies over 128 KiB themselves.
    type: 'REQUEST_TOO_LARGE',
    statusCode: '413',
    code: 'payload_too_large',
    message: 'Request body is too large',
    beforeAuthorizer: true,
  },
  {
    type: 'UNSUPPORTED_MEDIA_TYPE',
    statusCode: '415',
    code: 'unsupported_media_type',
    message: 'Request body must be sent with Content-Type: application/json',
  },
  { type: 'BAD_REQUEST_PARAMETERS', statusCode: '400', code: 'invalid_request' },
  { type: 'BAD_REQUEST_BODY', statusCode: '400', code: 'invalid_request' },
  {
    type: 'INTEGRATION_FAILURE',
    statusCode: '503',
    code: 'service_unavailable',
    message: 'The service is temporarily unavailable; retry later',
  },
  {
    // API Gateway gives up after 29 s; payment creation is idempotent, so a retry is safe.
    type: 'INTEGRATION_TIMEOUT',
    statusCode: '503',
    code: 'service_unavailable',
    message: 'The service did not answer in time; retry later',
  },
  { type: 'DEFAULT_4XX', code: 'invalid_request' },
  { type: 'DEFAULT_5XX', code: 'internal_server_error', message: 'Internal server error' },
];

/** The status API Gateway gives a catch-all response when the declaration keeps its own. */
const defaultStatus: Partial<Record<GatewayResponseType, string>> = {
  DEFAULT_4XX: '400',
  DEFAULT_5XX: '500',
};

/** A gateway response or mock answer as declared: status, body template, header mapping expressions. */
export interface EdgeAnswer {
  statusCode: string;
  template: string;
  headers: Record<string, string>;
}

export const gatewayAnswer = (response: EdgeErrorResponse): EdgeAnswer => ({
  statusCode: response.statusCode ?? defaultStatus[response.type] ?? '400',
  template: envelopeTemplate(response.code, response.message, response.messageTemplate),
  headers: gatewayResponseHeaders(response),
});

export const edgeResponse = (type: GatewayResponseType): EdgeErrorResponse => {
  const response = edgeErrorResponses.find((candidate) => candidate.type === type);
  if (!response) throw new Error(`No gateway response declared for ${type}`);
  return response;
};

/** The answers of the mock methods (infra/api-definition.ts): behind the authorizer, so they have its context. */
const mockHeaders = (extra: Record<string, string> = {}): Record<string, string> => ({
  ...commonHeaders(),
  ...rateLimitHeaders(),
  ...extra,
});

export const notFoundAnswer: EdgeAnswer = {
  statusCode: '404',
  template:
    `{"success":false,"error":{"code":"not_found","message":"No resource at this path",` +
    `"timestamp":"${TIMESTAMP}","request_id":"$context.requestId"}}`,
  headers: mockHeaders(),
};

export const methodNotAllowedAnswer = (methods: readonly string[]): EdgeAnswer => ({
  statusCode: '405',
  template:
    `{"success":false,"error":{"code":"method_not_allowed","message":"This method is not allowed on this resource",` +
    `"details":{"allowed":${JSON.stringify(methods)}},"timestamp":"${TIMESTAMP}","request_id":"$context.requestId"}}`,
  headers: mockHeaders({ Allow: staticHeader(methods.join(', ')) }),
});

/** What API Gateway knows of a request when it answers it: its id, the authorizer's context, its error. */
export interface EdgeRequestContext {
  requestId: string;
  /** The authorizer's context; absent when API Gateway answered before the authorizer ran. */
  authorizer?: Readonly<Record<string, string>>;
  /** `$context.error.message` (API Gateway's own text for the error). */
  errorMessage?: string;
}

/** One `$context` variable as API Gateway substitutes it: an unknown or absent one is empty. */
function contextValue(name: string, context: EdgeRequestContext): string {
  if (name === 'requestId') return context.requestId;
  if (name === 'error.message') return context.errorMessage ?? '';
  // Already a JSON string, quotes and escapes included.
  if (name === 'error.messageString') return JSON.stringify(context.errorMessage ?? '');
  if (name.startsWith('authorizer.')) return context.authorizer?.[name.slice('authorizer.'.length)] ?? '';
  return '';
}

/**
 * Renders an answer as API Gateway does: `$context.<name>` substituted in the body template, and each
 * header's mapping expression resolved (`'static'`, `context.<name>`). The local server answers with
 * this, and the infra tests check every declaration through it.
 */
export function renderEdgeAnswer(
  answer: EdgeAnswer,
  context: EdgeRequestContext,
): { statusCode: number; headers: Record<string, string>; body: string } {
  const body = answer.template.replace(/\$context\.([A-Za-z0-9_.]+)/g, (_, name: string) =>
    contextValue(name, context),
  );
  const headers = Object.fromEntries(
    Object.entries(answer.headers).map(([name, expression]) => [
      name,
      expression.startsWith("'")
        ? expression.slice(1, -1)
        : expression.startsWith('context.')
          ? contextValue(expression.slice('context.'.length), context)
          : '',
    ]),
  );
  return { statusCode: Number(answer.statusCode), headers, body };
}
