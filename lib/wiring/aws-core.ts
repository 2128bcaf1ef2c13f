import { systemClock } from '../clock.js';
import { loadConfig } from '../config.js';
import { createDynamoClients } from '../db/client.js';
import { createCoreDeps, type CoreDeps } from '../deps.js';
import { createLogger } from '../log.js';
import { tiers } from '../tiers.js';

let core: CoreDeps | undefined;

/**
 * Built once per Lambda cold start from the environment: configuration is validated here and a bad
 * value fails the first invocation with a message naming it.
 */
export function awsCoreDeps(): CoreDeps {
  if (!core) {
    const config = loadConfig();
    core = createCoreDeps({
      config,
      dynamo: createDynamoClients({ region: config.region, endpoint: config.dynamoDbEndpoint }),
      clock: systemClock,
      logger: createLogger({ level: config.logLevel }),
      tiers,
    });
  }
  return core;
}
