import type { PlatformDeps } from '../app/deps.js';
import { ForeignApiKeyError } from '../api-keys/authenticator.js';
import { uncountedWindow } from '../db/rate-limits.js';
import {
  ForbiddenError,
  isDependencyOutage,
  RateLimitExceededError,
  ServiceUnavailableError,
  UnauthorizedError,
} from '../kernel/errors.js';
import { rateGroupOf, type RouteDeclaration } from '../kernel/route.js';
import { metaOf, type Middleware } from './context.js';
import { correlate } from './correlation.js';

const RATE_WINDOW_SECONDS = 60;

/** API key, role and rate limit: per key and endpoint group, or per source IP for keyless calls. */
export function authorise(deps: PlatformDeps, route: RouteDeclaration): Middleware {
  return {
    before: async (request) => {
      const meta = metaOf(request.context);
      const now = deps.clock.now();
      // While DynamoDB is unreachable, keys cannot be checked nor requests counted: keyed routes answer
      // 503, and the public ones carry on uncounted so that health can still report the outage.
      let outage = false;
      const unlessOutage =
        <T>(fallback: T) =>
        (error: unknown): T => {
          if (!isDependencyOutage(error)) throw error;
          outage = true;
          return fallback;
        };
      const headers = request.event.headers ?? {};
      // A key of another environment is counted by source IP like any bad key, then refused by name
      // on a keyed route; a public route ignores it, as it ignores any key.
      let foreignKey: ForeignApiKeyError | undefined;
      const caller = await deps.authenticator.authenticate(headers['x-api-key']).catch((error: unknown) => {
        if (!(error instanceof ForeignApiKeyError)) return unlessOutage(null)(error);
        foreignKey = error;
        return null;
      });
      // Known from here on, also when the rate limit or the role refuses the call.
      if (caller) correlate(deps, { clientId: caller.clientId });
      const group = rateGroupOf(route);
      // A keyless route with its own budget counts by its parameter, whoever sends a key with it.
      const [bucket, limit] =
        route.keylessBudget && !route.apiKeyRequired
          ? [keylessBucket(route, request.event.pathParameters), route.keylessBudget.requestsPerMinute]
          : caller
            ? [`key#${caller.keyId}#${group}`, deps.tiers[caller.tier].requestsPerMinute[group]]
            : [`ip#${meta.sourceIp}`, deps.config.anonymousRequestsPerMinute];
      meta.rateLimit = await deps.rateLimiter
        .hit(bucket, limit, RATE_WINDOW_SECONDS, now)
        .catch(unlessOutage(uncountedWindow(limit, RATE_WINDOW_SECONDS, now)));
      if (!meta.rateLimit.allowed) {
        deps.telemetry.count('RateLimitRefusals', { group: caller ? group : 'anonymous' });
        throw new RateLimitExceededError(meta.rateLimit.resetAt - now.getTime() / 1000);
      }
      if (!route.apiKeyRequired) return;
      if (outage)
        throw new ServiceUnavailableError('The service cannot verify API keys right now; retry shortly');
      if (!caller) throw foreignKey ?? new UnauthorizedError(unauthorizedMessage(headers));
      if (!route.roles.some((role) => caller.roles.includes(role))) {
        throw new ForbiddenError(
          `This operation needs an API key with the role ${route.roles.map((role) => `"${role}"`).join(' or ')}; ` +
            `this key has ${caller.roles.length ? caller.roles.map((role) => `"${role}"`).join(' and ') : 'no role'}`,
        );
      }
      meta.caller = caller;
    },
  };
}

/**
 * The bucket of a route with a keyless budget: one per value of its parameter, read as the route
 * validates it (`stripe` counts as `gateway_a`); a value the route would refuse shares one bucket,
 * so made-up values cannot open fresh budgets.
 */
function keylessBucket(
  route: RouteDeclaration,
  parameters: Record<string, string | undefined> | null,
): string {
  const { byParam } = route.keylessBudget!;
  const schema = route.request.params?.shape[byParam] as
    { safeParse(value: unknown): { success: boolean; data?: unknown } } | undefined;
  const parsed = schema?.safeParse(parameters?.[byParam]);
  const value = parsed?.success ? String(parsed.data) : '(invalid)';
  return `route#${route.name}#${value}`;
}

/** Says what to fix: the usual mistake is a key sent as a bearer token. */
function unauthorizedMessage(headers: Record<string, string | undefined>): string {
  if (headers['x-api-key']) return 'The API key in X-API-Key is not valid';
  if (headers.authorization)
    return 'Send the API key in the X-API-Key header; the Authorization header is not read';
  return 'Missing API key: send it in the X-API-Key header';
}
