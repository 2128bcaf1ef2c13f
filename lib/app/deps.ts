import type { Tracer } from '@aws-lambda-powertools/tracer';
import { ApiKeyAuthenticator } from '../api-keys/authenticator.js';
import type { Clock } from '../kernel/clock.js';
import { ConfigError, requireTable, type ServiceConfig } from '../kernel/config.js';
import { CardTags, type CardTagKeySource } from '../crypto/card-tag.js';
import { CursorCodec, type CursorKeySource } from '../crypto/cursor.js';
import type { EscrowKey } from '../crypto/escrow.js';
import { AccessTokenRepository } from '../db/access-tokens.js';
import { ApiKeyRepository } from '../db/api-keys.js';
import { AuditLog } from '../db/audit.js';
import { ClaimQuota } from '../db/claim-quota.js';
import { EvidenceRepository } from '../db/evidence.js';
import type { DynamoClients } from '../db/client.js';
import { KeyLogRepository } from '../db/key-log.js';
import { KeyPairRepository } from '../db/key-pairs.js';
import { MerchantRepository } from '../db/merchants.js';
import { MerchantKeyRepository } from '../db/merchant-keys.js';
import { PaymentRepository } from '../db/payments.js';
import { RateLimiter } from '../db/rate-limits.js';
import { ReceiptRepository } from '../db/receipts.js';
import { TransactionRepository } from '../db/transactions.js';
import { UserRepository } from '../db/users.js';
import { WebhookDeliveryRepository } from '../db/webhook-deliveries.js';
import { WebhookRepository } from '../db/webhooks.js';
import type { GatewayRegistry } from '../gateways/port.js';
import type { LogSigningKey } from '../crypto/log-signing-key.js';
import type { Logger } from '../kernel/log.js';
import type { Telemetry } from '../kernel/telemetry.js';
import type { TableKey } from '../kernel/tables.js';
import type { TierTable } from '../kernel/tiers.js';
import { systemResolver, type HostResolver, type WebhookUrlGuard } from '../kernel/dns.js';

export interface Repositories {
  apiKeys: ApiKeyRepository;
  keyPairs: KeyPairRepository;
  users: UserRepository;
  accessTokens: AccessTokenRepository;
  receipts: ReceiptRepository;
  transactions: TransactionRepository;
  /** Transactions claimed per user per day, counted in the rate-limit table. */
  claimQuota: ClaimQuota;
  merchants: MerchantRepository;
  webhooks: WebhookRepository;
  webhookDeliveries: WebhookDeliveryRepository;
  /** Payments made through the service, their refunds, and the gateway events applied. */
  payments: PaymentRepository;
  /** The keyed evidence index (lib/receipts/evidence.ts). */
  evidence: EvidenceRepository;
  /** Merchant signing keys and each merchant client's signing policy. */
  merchantKeys: MerchantKeyRepository;
  /** The transparency log of merchant key events (lib/key-log). */
  keyLog: KeyLogRepository;
}

/** What every endpoint's middleware needs, whatever the endpoint does. */
export interface PlatformDeps {
  config: ServiceConfig;
  clock: Clock;
  logger: Logger;
  authenticator: ApiKeyAuthenticator;
  rateLimiter: RateLimiter;
  tiers: TierTable;
  telemetry: Telemetry;
  tracer?: Tracer;
}

/** Everything built from configuration and DynamoDB alone. */
export interface CoreDeps extends PlatformDeps {
  dynamo: DynamoClients;
  repos: Repositories;
  audit: AuditLog;
  /** The card-tag keyring (lib/crypto/card-tag.ts), read from its source on first use. */
  cardTags: CardTags;
  /** Seals and opens paging cursors (lib/crypto/cursor.ts) under the cursor key, read on first use. */
  cursors: CursorCodec;
  /** DNS for webhook URLs; a test maps names to private addresses with it (no DNS runs there). */
  resolveHost: HostResolver;
  /**
   * A webhook URL guard other than the service's strict one: only the local stack's wiring passes one
   * (plain http to its loopback receivers). Never set in AWS, whatever the stage.
   */
  webhookUrlGuard?: WebhookUrlGuard;
}

/** The whole service: the local server hands this to every handler; a Lambda builds only its part. */
export interface AppDeps extends CoreDeps {
  escrow: EscrowKey;
  /**
   * The key log's signing key (lib/key-log/tree-head.ts): the local stack always has one; in AWS only
   * the routes that declare `logKey` are given it (lib/wiring/aws.ts, DepsFor).
   */
  logKey?: LogSigningKey;

  gateways: GatewayRegistry;
}

export function createCoreDeps(input: {
  config: ServiceConfig;
  dynamo: DynamoClients;
  clock: Clock;
  logger: Logger;
  tiers: TierTable;
  telemetry: Telemetry;
  tracer?: Tracer;
  /** Where the card-tag key versions are kept (Secrets Manager, or the local key file). */
  cardTagKeys?: CardTagKeySource;
  /** How long a read keyring is used before the source is read again (a rotation lands then). */
  cardTagKeysMaxAgeMs?: number;
  /** Where the paging cursors' key is kept (Secrets Manager, the local key file, or a test's). */
  cursorKey?: CursorKeySource;
  resolveHost?: HostResolver;
  webhookUrlGuard?: WebhookUrlGuard;
}): CoreDeps {
  const { config, dynamo, clock } = input;
  const { doc } = dynamo;
  const table = (key: TableKey) => requireTable(config, key);
  // Each function is given only its own tables, so a repository is built on first use: a function
  // that reaches for a table it was not granted fails with a message naming the missing variable.
  const repos = lazily<Repositories>({
    apiKeys: () => new ApiKeyRepository(doc, table('apiKeys')),
    keyPairs: () => new KeyPairRepository(doc, table('keyPairs')),
    users: () => new UserRepository(doc, table('users'), config.tables.keyPairs),
    accessTokens: () => new AccessTokenRepository(doc, table('accessTokens'), config.maxActiveTokens),
    receipts: () => new ReceiptRepository(doc, table('receipts'), config.tables.evidence),
    transactions: () => new TransactionRepository(doc, table('transactions')),
    claimQuota: () => new ClaimQuota(doc, table('rateLimits')),
    merchants: () => new MerchantRepository(doc, table('merchants')),
    webhooks: () => new WebhookRepository(doc, table('webhooks')),
    webhookDeliveries: () => new WebhookDeliveryRepository(doc, table('webhookDeliveries')),
    payments: () => new PaymentRepository(doc, table('payments')),
    evidence: () => new EvidenceRepository(doc, table('evidence')),
    merchantKeys: () => new MerchantKeyRepository(doc, table('merchantKeys')),
    keyLog: () => new KeyLogRepository(doc, table('keyLog')),
  });
  const { cardTagKeys, cardTagKeysMaxAgeMs, cursorKey, resolveHost, ...rest } = input;
  return {
    ...rest,
    repos,
    resolveHost: resolveHost ?? systemResolver,
    cardTags: new CardTags(cardTagKeys ?? noCardTagKeys, clock, cardTagKeysMaxAgeMs ?? 300_000),
    cursors: new CursorCodec(cursorKey ?? noCursorKey),
    // Every route that authenticates is granted the key and rate-limit tables.
    authenticator: new ApiKeyAuthenticator(
      repos.apiKeys,
      clock,
      config.apiKeyCacheTtlSeconds,
      config.apiKeyEnvironment,
    ),
    rateLimiter: new RateLimiter(doc, table('rateLimits')),
    audit: new AuditLog(doc, () => table('audit'), clock, config.auditRetentionDays),
  };
}

/** For deps built without a key source: tagging a card then fails, naming what is missing. */
const noCardTagKeys: CardTagKeySource = {
  load: () => Promise.reject(new ConfigError('No card-tag key source was given to this process')),
};

/** For deps built without a cursor key: paging on from a cursor then fails, naming what is missing. */
const noCursorKey: CursorKeySource = {
  load: () => Promise.reject(new ConfigError('No cursor key source was given to this process')),
};

/** An object whose properties are built on first read and then kept (spreading it would build them all). */
function lazily<T extends object>(factories: { [K in keyof T]: () => T[K] }): T {
  const target = {} as T;
  for (const key of Object.keys(factories) as (keyof T)[]) {
    Object.defineProperty(target, key, {
      enumerable: true,
      configurable: true,
      get() {
        const value = factories[key]();
        Object.defineProperty(target, key, { value, enumerable: true, writable: false });
        return value;
      },
    });
  }
  return target;
}
