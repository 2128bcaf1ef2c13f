/**
 * DynamoDB tables, declared once: the CDK stack creates them from this list and the local stack
 * creates the same tables in DynamoDB Local. All keys are strings.
 */
export interface TableIndex {
  name: string;
  partitionKey: string;
  sortKey?: string;
  /**
   * What the index holds besides its keys: ALL (the default) bills every write of the item again at
   * its full size; KEYS_ONLY bills 1 unit, and readers get the item by its key (issue 40).
   */
  projection?: 'ALL' | 'KEYS_ONLY';
}

export interface TableDefinition {
  /** Suffix of the physical name and (unless envName) of the TABLE_* environment variable. */
  name: string;
  /** The TABLE_* variable's suffix when it is not `name`: a table moved to a new one keeps its variable. */
  envName?: string;
  partitionKey: string;
  sortKey?: string;
  /** Attribute holding an epoch-seconds expiry that DynamoDB TTL deletes by. */
  ttlAttribute?: string;
  /** Durable business data: point-in-time recovery and RETAIN on stack deletion. */
  durable: boolean;
  indexes?: TableIndex[];
  /** A DynamoDB stream of item changes, with both images (the webhook dispatcher reads receipts'). */
  stream?: 'NEW_AND_OLD_IMAGES';
}

export const tableDefinitions = {
  apiKeys: { name: 'api-keys', partitionKey: 'keyId', durable: true },
  keyPairs: { name: 'key-pairs', partitionKey: 'keyId', durable: true },
  // Holds USER#<userId> records and CARD#<cardTag> uniqueness guards, written in one transaction;
  // ERASED-CARD#<cardTag>#<clientId> records expire (`ttl`) 30 days after an erasure.
  users: { name: 'users', partitionKey: 'pk', ttlAttribute: 'ttl', durable: true },
  // TOKEN#<sha256(tokenId)> records and SLOT#<userId>#<n> active-token slots.
  accessTokens: { name: 'access-tokens', partitionKey: 'pk', ttlAttribute: 'ttl', durable: false },
  // Receipt and transaction ids are the merchant client's own: keyed under it, another client's
  // ids never collide with them, block them or show that they exist. A client's receipts are spread
  // over RECEIPT_SHARDS partitions by a hash of the receiptId (`pk` = `<merchantClientId>#<shard>`,
  // lib/db/receipts.ts), so one merchant is not one hot partition (docs/SCALE.md); a GetItem computes
  // its key. It replaces the `receipts` table (keyed by merchantClientId alone, with indexes that
  // projected whole receipts): `npm run admin -- receipts migrate` copies it (docs/DEPLOY.md).
  receipts: {
    name: 'receipts-sharded',
    envName: 'receipts',
    partitionKey: 'pk',
    sortKey: 'receiptId',
    ttlAttribute: 'ttl',
    durable: true,
    // Webhook events are raised from the stream, so a stored receipt's event survives any crash.
    stream: 'NEW_AND_OLD_IMAGES',
    // Keys only: an index write costs 1 unit instead of the receipt's size again; readers get the
    // receipt by its key (strongly consistent, which the index never was).
    indexes: [
      // Sparse: only receipts wrapped for a registered user carry `recipientUserId` (an erasure and the inbox find them there).
      {
        name: 'by-recipient-user',
        partitionKey: 'recipientUserId',
        sortKey: 'createdAt',
        projection: 'KEYS_ONLY',
      },
      // An issuer fetches a receipt by id alone, across merchant namespaces (GET /receipts/{receiptId}).
      { name: 'by-receipt-id', partitionKey: 'receiptId', projection: 'KEYS_ONLY' },
    ],
  },
  transactions: {
    name: 'transactions',
    partitionKey: 'merchantClientId',
    sortKey: 'transactionId',
    durable: true,
    // Issuers ask by transactionId alone and read only the mapping whose receipt is for their user.
    indexes: [{ name: 'by-transaction-id', partitionKey: 'transactionId' }],
  },
  // The keyed evidence index (lib/crypto/evidence.ts): entries written with their receipt, read by
  // their opaque id. No index: the receipt item names its entries' ids (StoredReceipt.evidenceIds),
  // which is how a release or an erasure finds them; a `by-receipt` index cost each entry a second
  // write unit (issue 40; DEPLOY.md gives the upgrade).
  evidence: {
    name: 'evidence',
    partitionKey: 'evidenceId',
    sortKey: 'receiptRef',
    ttlAttribute: 'ttl',
    durable: true,
  },
  // One item per merchantId: the merchant client that named it first, which alone may name it again.
  merchants: { name: 'merchants', partitionKey: 'merchantId', durable: true },
  rateLimits: { name: 'rate-limits', partitionKey: 'pk', ttlAttribute: 'ttl', durable: false },
  audit: { name: 'audit', partitionKey: 'pk', sortKey: 'sk', ttlAttribute: 'ttl', durable: true },
  // One delivery per webhook and event; only pending ones carry `dueBucket`, which the sweeper reads.
  webhookDeliveries: {
    name: 'webhook-deliveries',
    partitionKey: 'webhookId',
    sortKey: 'deliveryId',
    ttlAttribute: 'ttl',
    durable: false,
    // The deliveryId is a hash, not a time: a webhook's deliveries are listed newest first by-webhook.
    indexes: [
      { name: 'by-due', partitionKey: 'dueBucket', sortKey: 'nextAttemptAt' },
      { name: 'by-webhook', partitionKey: 'webhookId', sortKey: 'createdAt' },
    ],
  },
  // A client's webhook endpoints; `COUNT#<clientId>` items (no clientId, so not in by-client) bound them.
  webhooks: {
    name: 'webhooks',
    partitionKey: 'webhookId',
    durable: true,
    indexes: [{ name: 'by-client', partitionKey: 'clientId', sortKey: 'createdAt' }],
  },
  // Powertools idempotency layout: `id` key and `expiration` TTL.
  idempotency: { name: 'idempotency', partitionKey: 'id', ttlAttribute: 'expiration', durable: false },
  // The life of each payment made through the service, one partition per payment (`PAY#<gateway>#<id>`):
  // the payment (`PAYMENT`), its refunds by the provider's id (`REFUND#…`) and the merchants' refund
  // requests by refundId (`REQUEST#…`); and the gateway events applied (`EVENT#…`). Everything expires
  // by `ttl`: a payment's items with its receipt's retention, an event's record after a week.
  payments: { name: 'payments', partitionKey: 'pk', sortKey: 'sk', ttlAttribute: 'ttl', durable: true },
  // Merchant signing keys (`KEY#<kid>`, the kid being the key's RFC 7638 thumbprint, so a public key
  // belongs to one merchant client) and each client's signing policy (`POLICY#<clientId>`, with no
  // clientId attribute, so by-client lists keys only). Revoked keys stay: old receipts name them.
  // Key-change challenges (`CHALLENGE#<nonce>`, single use) expire by `ttl`.
  merchantKeys: {
    name: 'merchant-keys',
    partitionKey: 'pk',
    ttlAttribute: 'ttl',
    durable: true,
    indexes: [{ name: 'by-client', partitionKey: 'clientId', sortKey: 'createdAt' }],
  },
  // The transparency log of merchant key events (lib/key-log): `LEAF#<index>` (claimed by a conditional
  // put), `NODE#<level>#<index>` (complete subtrees' hashes, for O(log n) proofs) and `HEAD`. Never deleted.
  keyLog: { name: 'key-log', partitionKey: 'pk', durable: true },
} as const satisfies Record<string, TableDefinition>;

export type TableKey = keyof typeof tableDefinitions;
export type TableNames = Record<TableKey, string>;

export const tableKeys = Object.keys(tableDefinitions) as TableKey[];

/**
 * The receipts table before issue 40 (keyed by merchantClientId and receiptId, its indexes projecting
 * whole receipts): no function uses it; the migration reads it (lib/receipts/migrate-sharded.ts).
 */
export const legacyReceiptsTableName = 'receipts';

/** Environment variable that carries a table's physical name into a function. */
export const tableEnvVar = (key: TableKey): string => {
  const definition: TableDefinition = tableDefinitions[key];
  return `TABLE_${(definition.envName ?? definition.name).toUpperCase().replace(/-/g, '_')}`;
};

export const prefixedTableNames = (prefix: string): TableNames =>
  Object.fromEntries(tableKeys.map((key) => [key, `${prefix}${tableDefinitions[key].name}`])) as TableNames;
