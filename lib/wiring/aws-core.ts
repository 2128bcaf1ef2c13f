import { systemClock } from '../kernel/clock.js';
import { loadConfig } from '../kernel/config.js';
import { createDynamoClients } from '../db/client.js';
import { createCoreDeps, type CoreDeps } from '../app/deps.js';
import { createLogger } from '../kernel/log.js';
import { awsObservability } from './aws-observability.js';
import { LogTelemetry } from '../kernel/telemetry.js';
import { tiers } from '../kernel/tiers.js';
import { awsCardTagKeys } from './aws-card-tags.js';
import { awsCursorKey } from './aws-cursor-key.js';

let core: Promise<CoreDeps> | undefined;

/**
 * Built once per Lambda cold start from the environment: configuration is validated here and a bad
 * value fails the first invocation with a message naming it.
 */
export function awsCoreDeps(): Promise<CoreDeps> {
  // A failed build is not kept: the next invocation tries again, and names the bad value again.
  core ??= build().catch((error: unknown) => {
    core = undefined;
    throw error;
  });
  return core;
}

async function build(): Promise<CoreDeps> {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel });
  const { telemetry: emf, tracer } = await awsObservability(logger);
  // A handler run against DynamoDB Local has no CloudWatch to read EMF: its counts go to the log,
  // at the log's level, like the local stack's.
  const telemetry = config.dynamoDbEndpoint ? new LogTelemetry(logger) : emf;
  return createCoreDeps({
    config,
    dynamo: createDynamoClients({
      region: config.region,
      endpoint: config.dynamoDbEndpoint,
      ...(tracer ? { instrument: (client) => tracer.captureAWSv3Client(client) } : {}),
    }),
    clock: systemClock,
    logger,
    tiers,
    telemetry,
    ...(tracer ? { tracer } : {}),
    cardTagKeys: awsCardTagKeys(),
    cursorKey: awsCursorKey(),
  });
}
