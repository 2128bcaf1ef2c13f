import type { Tracer } from '@aws-lambda-powertools/tracer';
import { KMSClient } from '@aws-sdk/client-kms';
import { ConfigError, type ServiceConfig } from '../kernel/config.js';
import type { LogSigningKey } from '../key-log/tree-head.js';
import { KmsLogSigningKey } from './kms-log-key.js';

let logKey: LogSigningKey | undefined;

/** The key log's KMS signing key, one client per cold start; only the routes that declare `logKey` import this. */
export function awsLogKey(config: ServiceConfig, tracer?: Tracer): LogSigningKey {
  if (!config.logKmsKeyId)
    throw new ConfigError('LOG_KMS_KEY_ID is not set for a function that uses the log signing key');
  const client = new KMSClient({ region: config.region, maxAttempts: 3 });
  logKey ??= new KmsLogSigningKey(tracer ? tracer.captureAWSv3Client(client) : client, config.logKmsKeyId);
  return logKey;
}
