import { ApiKeyAuthenticator } from '../api-keys/authenticator.js';
import { systemClock } from '../kernel/clock.js';
import { loadConfig, requireTable } from '../kernel/config.js';
import { ApiKeyRepository } from '../db/api-keys.js';
import { createDynamoClients } from '../db/client.js';
import type { EdgeAuthorizerDeps } from '../api-keys/edge-authorizer.js';
import { createLogger } from '../kernel/log.js';

/**
 * The authorizer's dependencies from its environment: the api-keys table and nothing else, so the
 * bundle carries no repository, limiter or escrow code it would never run. The authenticator's own
 * short cache (API_KEY_CACHE_TTL_SECONDS) sits behind API Gateway's result cache and saves a read
 * when one warm instance sees the same key again after API Gateway's entry expired.
 */
export function awsEdgeAuthorizerDeps(env: NodeJS.ProcessEnv = process.env): EdgeAuthorizerDeps {
  const config = loadConfig(env);
  const { doc } = createDynamoClients({ region: config.region, endpoint: config.dynamoDbEndpoint });
  return {
    authenticator: new ApiKeyAuthenticator(
      new ApiKeyRepository(doc, requireTable(config, 'apiKeys')),
      systemClock,
      config.apiKeyCacheTtlSeconds,
      config.apiKeyEnvironment,
    ),
    logger: createLogger({ level: config.logLevel }),
  };
}
