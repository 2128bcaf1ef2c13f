import type { PlatformDeps } from '../app/deps.js';
import { ForeignApiKeyError, INVALID_KEY_MESSAGE, missingKeyMessage } from '../api-keys/authenticator.js';
import {
  bindingLimit,
  DAILY_LEASE_SHARE,
  DAY_WINDOW_SECONDS,
  MINUTE_WINDOW_SECONDS,
  rateBuckets,
  uncountedWindow,
} from '../db/rate-limits.js';
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
      // A keyless route with its own budget is counted by its endpoint once the request is verified
      // (lib/payments/gateway-events.ts), which replaces this window with the one it counted in; a
      // request refused before that (too large, malformed) has spent nothing.
      if (route.keylessBudget && !route.apiKeyRequired) {
        meta.rateLimit = uncountedWindow(route.keylessBudget.requestsPerMinute, MINUTE_WINDOW_SECONDS, now);
        return;
      }
      const group = rateGroupOf(route);
      const [bucket, limit] = caller
        ? [rateBuckets.key(caller.keyId, group), deps.tiers[caller.tier].requestsPerMinute[group]]
        : [rateBuckets.ip(meta.sourceIp), deps.config.anonymousRequestsPerMinute];
      const count = (countBucket: string, countLimit: number, windowSeconds: number, share?: number) =>
        deps.rateLimiter
          .hit(countBucket, countLimit, windowSeconds, now, share)
          .catch(unlessOutage(uncountedWindow(countLimit, windowSeconds, now)));
      // A key's requests also count against its tier's daily quota, which API Gateway's usage plan
      // enforces: counted here (not enforced twice) so the headers can say when the day binds.
      const [minute, day] = await Promise.all([
        count(bucket, limit, MINUTE_WINDOW_SECONDS),
        caller
          ? count(
              rateBuckets.day(caller.keyId),
              deps.tiers[caller.tier].dailyQuota,
              DAY_WINDOW_SECONDS,
              DAILY_LEASE_SHARE,
            )
          : undefined,
      ]);
      meta.rateLimit = bindingLimit(minute, day);
      if (!minute.allowed) {
        deps.telemetry.count('RateLimitRefusals', { group: caller ? group : 'anonymous' });
        throw new RateLimitExceededError(minute.resetAt - now.getTime() / 1000);
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

/** Says what to fix: the usual mistake is a key sent as a bearer token. */
function unauthorizedMessage(headers: Record<string, string | undefined>): string {
  if (headers['x-api-key']) return INVALID_KEY_MESSAGE;
  return missingKeyMessage(headers.authorization !== undefined);
}
