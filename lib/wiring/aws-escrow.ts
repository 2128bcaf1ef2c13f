import type { Tracer } from '@aws-lambda-powertools/tracer';
import { KMSClient } from '@aws-sdk/client-kms';
import type { ServiceConfig } from '../kernel/config.js';
import { ConfigError } from '../kernel/config.js';
import type { EscrowKey } from '../crypto/escrow.js';
import { KmsEscrowKey } from './kms-escrow.js';

let escrow: EscrowKey | undefined;

/** The KMS escrow key, one client per cold start; only functions that touch escrow import this. */
export function awsEscrowKey(config: ServiceConfig, tracer?: Tracer): EscrowKey {
  if (!config.escrowKmsKeyId)
    throw new ConfigError('ESCROW_KMS_KEY_ID is not set for a function that uses the escrow key');
  const client = new KMSClient({ region: config.region, maxAttempts: 3 });
  escrow ??= new KmsEscrowKey(tracer ? tracer.captureAWSv3Client(client) : client, config.escrowKmsKeyId);
  return escrow;
}
