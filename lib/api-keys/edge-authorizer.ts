import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import {
  INVALID_KEY_MESSAGE,
  missingKeyMessage,
  type ApiKeyAuthenticator,
  type Caller,
} from './authenticator.js';
import {
  bindingLimit,
  DAY_WINDOW_SECONDS,
  MINUTE_WINDOW_SECONDS,
  rateBuckets,
  uncountedWindow,
  type RateLimiter,
  type RateLimitState,
} from '../db/rate-limits.js';
import { UnauthorizedError } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import type { RateGroup, TierTable } from '../kernel/tiers.js';

/**
 * The API Gateway edge of a deployed stage. The REST API takes usage-plan keys from this authorizer
 * (API key source AUTHORIZER), not from the X-API-Key header: the authorizer checks the presented key
 * against its hash in the api-keys table, and answers with the client's usage identifier, which is
 * what the client's API Gateway key holds. That key's value is therefore never the client's secret,
 * and anyone allowed apigateway:GET reads identifiers that open nothing: API Gateway accepts a usage
 * identifier only from the authorizer, never from a caller.
 */

/** The header the identity source names; API Gateway answers 401 itself when it is missing. */
export const EDGE_API_KEY_HEADER = 'X-API-Key';

/**
 * API Gateway keeps no answer (result cache off, no identity source): the authorizer runs for every
 * request, so a missing X-API-Key reaches it too, and the context it hands the gateway responses
 * (the request's ISO 8601 time, the binding rate limit) belongs to that request alone. A gateway
 * response template can only substitute variables, never format a date: this is where its ISO
 * `timestamp` comes from (infra/gateway-responses.ts).
 */
export const EDGE_AUTHORIZER_CACHE_SECONDS = 0;

/**
 * The value of a client's API Gateway key: derived from the key id, which is no secret (it is part of
 * every presented key and of `api-keys list`). Being predictable gives nothing: only the authorizer
 * can name a usage identifier, and it names one only for a verified key. Derived rather than stored,
 * so records need no new field and the admin CLI can find the edge key a record should have.
 */
export const edgeUsageKey = (keyId: string): string => `receipt-service-usage-${keyId}`;

/**
 * What the authorizer reports of the rate limits, read (never counted: the functions count) from the
 * same counters as the functions' X-RateLimit-* headers.
 */
export interface EdgeRateDeps {
  limiter: Pick<RateLimiter, 'peek'>;
  tiers: TierTable;
  anonymousRequestsPerMinute: number;
  /**
   * The keyed methods, `METHOD /resource` → their budget group (EDGE_KEYED_ROUTES, set by the CDK
   * stack from the route table). Any other method the authorizer guards (public routes, the 404 and
   * 405 answers) is open: it is allowed, and reported against the source IP's budget.
   */
  keyedRoutes: ReadonlyMap<string, RateGroup>;
}

export interface EdgeAuthorizerDeps {
  authenticator: Pick<ApiKeyAuthenticator, 'authenticate'>;
  logger: Logger;
  rates?: EdgeRateDeps;
}

/** `METHOD /resource` as EDGE_KEYED_ROUTES lists it. */
export const edgeRouteKey = (method: string, resource: string): string => `${method} ${resource}`;

/** EDGE_KEYED_ROUTES: `METHOD /resource=group` entries, comma-separated (a Lambda environment holds 4 KB). */
export function parseKeyedRoutes(value: string | undefined): Map<string, RateGroup> {
  const routes = new Map<string, RateGroup>();
  for (const entry of (value ?? '').split(',').filter(Boolean)) {
    const [route = '', group = 'general'] = entry.split('=');
    routes.set(route, group as RateGroup);
  }
  return routes;
}

export const formatKeyedRoutes = (
  routes: readonly { method: string; path: string; group: RateGroup }[],
): string => routes.map((route) => `${edgeRouteKey(route.method, route.path)}=${route.group}`).join(',');

/**
 * The authorizer's context, which every gateway response reads (`$context.authorizer.<name>`): the
 * request's time, and the limit that binds with the daily quota beside it for QUOTA_EXCEEDED.
 * Values are strings: API Gateway substitutes them as they are.
 */
export interface EdgeContext {
  [name: string]: string;
  timestamp: string;
  rateLimitLimit: string;
  rateLimitRemaining: string;
  rateLimitReset: string;
  quotaLimit: string;
  quotaReset: string;
}

/** The refusal the gateway response shows when the key is unknown, revoked or malformed. */
export { INVALID_KEY_MESSAGE };

/**
 * The authorizer's answer is cached per key value and reused for every method of the stage, so the
 * policy names them all: a policy for one method alone would refuse the same key on the next route.
 */
function stageWildcard(methodArn: string): string {
  const [apiArn, stage] = methodArn.split('/');
  return `${apiArn}/${stage}/*/*`;
}

function headerValue(event: APIGatewayRequestAuthorizerEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  const entry = Object.entries(event.headers ?? {}).find(([key]) => key.toLowerCase() === wanted);
  return entry?.[1] ?? undefined;
}

/** Gateway responses place the message inside a JSON string without escaping it. */
const templateSafe = (message: string): string => message.replace(/["\\\r\n]/g, ' ');

const policy = (
  effect: 'Allow' | 'Deny',
  methodArn: string,
): APIGatewayAuthorizerResult['policyDocument'] => ({
  Version: '2012-10-17',
  Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: stageWildcard(methodArn) }],
});

/** The request's time as API Gateway received it, in the ISO 8601 form the functions write. */
function requestTime(event: APIGatewayRequestAuthorizerEvent): Date {
  const epoch = (event.requestContext as { requestTimeEpoch?: number } | undefined)?.requestTimeEpoch;
  return new Date(typeof epoch === 'number' && Number.isFinite(epoch) ? epoch : Date.now());
}

const sourceIpOf = (event: APIGatewayRequestAuthorizerEvent): string =>
  event.requestContext?.identity?.sourceIp || 'unknown';

/**
 * The limit that binds for this request: the key's per-minute budget for the route's group or its
 * daily quota, whichever has fewer requests left; the source IP's budget without a key. When the
 * counters cannot be read, the limits with nothing counted: a header must not fail a request.
 */
async function rateContext(
  event: APIGatewayRequestAuthorizerEvent,
  rates: EdgeRateDeps | undefined,
  caller: Caller | null,
  now: Date,
): Promise<Omit<EdgeContext, 'timestamp'>> {
  const strings = (state: RateLimitState, quota: RateLimitState) => ({
    rateLimitLimit: String(state.limit),
    rateLimitRemaining: String(state.remaining),
    rateLimitReset: String(state.resetAt),
    quotaLimit: String(quota.limit),
    quotaReset: String(quota.resetAt),
  });
  if (!rates) {
    const none = uncountedWindow(0, MINUTE_WINDOW_SECONDS, now);
    return strings(none, none);
  }
  const group = rates.keyedRoutes.get(edgeRouteKey(event.httpMethod, event.resource)) ?? 'general';
  const windows = caller
    ? [
        {
          bucket: rateBuckets.key(caller.keyId, group),
          limit: rates.tiers[caller.tier].requestsPerMinute[group],
          windowSeconds: MINUTE_WINDOW_SECONDS,
        },
        {
          bucket: rateBuckets.day(caller.keyId),
          limit: rates.tiers[caller.tier].dailyQuota,
          windowSeconds: DAY_WINDOW_SECONDS,
        },
      ]
    : [
        {
          bucket: rateBuckets.ip(sourceIpOf(event)),
          limit: rates.anonymousRequestsPerMinute,
          windowSeconds: MINUTE_WINDOW_SECONDS,
        },
      ];
  const states = await rates.limiter
    .peek(windows, now)
    .catch(() => windows.map((window) => uncountedWindow(window.limit, window.windowSeconds, now)));
  const [minute, day] = states as [RateLimitState, RateLimitState | undefined];
  return strings(bindingLimit(minute, day), day ?? minute);
}

/**
 * Allow with the client's usage identifier, or Deny with the reason as context.message (the
 * ACCESS_DENIED gateway response turns it into 401 `unauthorized`). A method that needs no key (a
 * public route, the 404 and 405 answers) is allowed for anyone. Every answer carries the request's
 * ISO 8601 time and its rate-limit state for the gateway responses. Anything else, such as the key
 * table being unreachable, is thrown: API Gateway answers it as AUTHORIZER_FAILURE.
 */
export async function authorizeEdge(
  event: APIGatewayRequestAuthorizerEvent,
  deps: EdgeAuthorizerDeps,
): Promise<APIGatewayAuthorizerResult> {
  const now = requestTime(event);
  const context = async (caller: Caller | null) => ({
    timestamp: now.toISOString(),
    ...(await rateContext(event, deps.rates, caller, now)),
  });
  const deny = async (reason: string, message: string): Promise<APIGatewayAuthorizerResult> => {
    // API Gateway's request id: the X-Request-Id of the 401 the client sees, and of the request's other lines.
    deps.logger.info('edge key refused', { reason, requestId: event.requestContext?.requestId });
    return {
      principalId: 'anonymous',
      policyDocument: policy('Deny', event.methodArn),
      context: { message: templateSafe(message), ...(await context(null)) },
    };
  };

  const keyed = !deps.rates || deps.rates.keyedRoutes.has(edgeRouteKey(event.httpMethod, event.resource));
  if (!keyed)
    return {
      principalId: 'anonymous',
      policyDocument: policy('Allow', event.methodArn),
      context: await context(null),
    };

  const presented = headerValue(event, EDGE_API_KEY_HEADER);
  let caller;
  try {
    caller = await deps.authenticator.authenticate(presented);
  } catch (error) {
    // A key of another environment: 401 that names whose key it is.
    if (error instanceof UnauthorizedError) return deny('foreign_environment', error.message);
    throw error;
  }
  if (!caller)
    return presented
      ? deny('invalid_key', INVALID_KEY_MESSAGE)
      : deny('missing_key', missingKeyMessage(headerValue(event, 'Authorization') !== undefined));
  return {
    principalId: caller.clientId,
    policyDocument: policy('Allow', event.methodArn),
    usageIdentifierKey: edgeUsageKey(caller.keyId),
    context: {
      clientId: caller.clientId,
      keyId: caller.keyId,
      tier: caller.tier,
      ...(await context(caller)),
    },
  };
}
