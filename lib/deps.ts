import { ApiKeyAuthenticator } from './api-key-auth.js';
import type { Clock } from './clock.js';
import type { ServiceConfig } from './config.js';
import type { EscrowKey } from './crypto/escrow.js';
import { AccessTokenRepository } from './db/access-tokens.js';
import { ApiKeyRepository } from './db/api-keys.js';
import { AuditLog } from './db/audit.js';
import type { DynamoClients } from './db/client.js';
import { KeyPairRepository } from './db/key-pairs.js';
import { RateLimiter } from './db/rate-limits.js';
import { ReceiptRepository } from './db/receipts.js';
import { TransactionRepository } from './db/transactions.js';
import { UserRepository } from './db/users.js';
import type { GatewayRegistry } from './gateways/port.js';
import type { PlatformDeps } from './http/pipeline.js';
import type { Logger } from './log.js';
import type { TierTable } from './tiers.js';

export interface Repositories {
  apiKeys: ApiKeyRepository;
  keyPairs: KeyPairRepository;
  users: UserRepository;
  accessTokens: AccessTokenRepository;
  receipts: ReceiptRepository;
  transactions: TransactionRepository;
}

/** Everything built from configuration and DynamoDB alone. */
export interface CoreDeps extends PlatformDeps {
  dynamo: DynamoClients;
  repos: Repositories;
  audit: AuditLog;
}

/** The whole service: the local server hands this to every handler; a Lambda builds only its part. */
export interface AppDeps extends CoreDeps {
  escrow: EscrowKey;
  gateways: GatewayRegistry;
}

export function createCoreDeps(input: {
  config: ServiceConfig;
  dynamo: DynamoClients;
  clock: Clock;
  logger: Logger;
  tiers: TierTable;
}): CoreDeps {
  const { config, dynamo, clock } = input;
  const { doc } = dynamo;
  const tables = config.tables;
  const apiKeys = new ApiKeyRepository(doc, tables.apiKeys);
  return {
    ...input,
    authenticator: new ApiKeyAuthenticator(apiKeys, clock, config.apiKeyCacheTtlSeconds),
    rateLimiter: new RateLimiter(doc, tables.rateLimits),
    repos: {
      apiKeys,
      keyPairs: new KeyPairRepository(doc, tables.keyPairs),
      users: new UserRepository(doc, tables.users, tables.keyPairs),
      accessTokens: new AccessTokenRepository(doc, tables.accessTokens, config.maxActiveTokens),
      receipts: new ReceiptRepository(doc, tables.receipts),
      transactions: new TransactionRepository(doc, tables.transactions),
    },
    audit: new AuditLog(doc, tables.audit, clock, config.auditRetentionDays),
  };
}
