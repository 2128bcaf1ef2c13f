import { ApiKeyAuthenticator } from '../api-keys/authenticator.js';
import { systemClock } from '../kernel/clock.js';
import { ConfigError, loadConfig, requireTable } from '../kernel/config.js';
import { ApiKeyRepository } from '../db/api-keys.js';
import { createDynamoClients } from '../db/client.js';
import { parseKeyedRoutes, type EdgeAuthorizerDeps } from '../api-keys/edge-authorizer.js';
import { RateLimiter } from '../db/rate-limits.js';
import { createLogger } from '../kernel/log.js';
import { tiers } from '../kernel/tiers.js';

/**
 * The authorizer's dependencies from its environment: the api-keys table and the rate counters it
 * reports, and nothing else, so the bundle carries no repository or escrow code it would never run. The authenticator's own
 * short cache (API_KEY_CACHE_TTL_SECONDS) sits behind API Gateway's result cache and saves a read
 * when one warm instance sees the same key again after API Gateway's entry expired.
 */
export function awsEdgeAuthorizerDeps(env: NodeJS.ProcessEnv = process.env): EdgeAuthorizerDeps {
  const config = loadConfig(env);
  // Without the list every method would look open: the authorizer refuses to start instead.
  const keyedRoutes = parseKeyedRoutes(env.EDGE_KEYED_ROUTES);
  if (keyedRoutes.size === 0)
    throw new ConfigError(
      'EDGE_KEYED_ROUTES is not set: the edge authorizer cannot tell keyed methods from open ones',
    );
  const { doc } = createDynamoClients({ region: config.region, endpoint: config.dynamoDbEndpoint });
  return {
    authenticator: new ApiKeyAuthenticator(
      new ApiKeyRepository(doc, requireTable(config, 'apiKeys')),
      systemClock,
      config.apiKeyCacheTtlSeconds,
      config.apiKeyEnvironment,
    ),
    logger: createLogger({ level: config.logLevel }),
    rates: {
      limiter: new RateLimiter(doc, requireTable(config, 'rateLimits')),
      tiers,
      anonymousRequestsPerMinute: config.anonymousRequestsPerMinute,
      keyedRoutes,
    },
  };
}
