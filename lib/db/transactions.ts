import {
  BatchGetCommand,
  GetCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { BATCH_GET_MAX, sendInBatches } from './batch.js';
import { putIfAbsent, queryIndexAll, type PutIfAbsentOutcome } from './client.js';

export type PaymentGatewayName = 'gateway_a' | 'gateway_b' | 'other';

/** Spec: TransactionMapping, plus who may read it. */
export interface TransactionMappingRecord {
  mappingId: string;
  transactionId: string;
  receiptId: string;
  paymentGateway: PaymentGatewayName;
  gatewayMetadata: Record<string, unknown>;
  createdAt: string;
  merchantClientId: string;
  /** Set for payments created through the service: the gateway's payment id. */
  paymentId?: string;
  /**
   * Payment creation reserves the mapping before it charges: the hash of the request's idempotency
   * key, so a retry of that request carries on while any other create for the receipt is refused.
   */
  reservedBy?: string;
}

/** A transactionId is unique within its merchant client only (DECISIONS: merchant namespaces). */
export type TransactionKey = Pick<TransactionMappingRecord, 'merchantClientId' | 'transactionId'>;

const keyOf = ({ merchantClientId, transactionId }: TransactionKey): TransactionKey => ({
  merchantClientId,
  transactionId,
});

/**
 * Free-form gateway metadata is stored as a JSON string: DynamoDB's own types refuse much valid JSON
 * (empty keys, nesting past 32 levels, numbers beyond its precision), and that is not the caller's fault.
 */
type StoredMapping = Omit<TransactionMappingRecord, 'gatewayMetadata'> & { gatewayMetadataJson: string };

const toStored = ({ gatewayMetadata, ...rest }: TransactionMappingRecord): StoredMapping => ({
  ...rest,
  gatewayMetadataJson: JSON.stringify(gatewayMetadata),
});

const fromStored = ({ gatewayMetadataJson, ...rest }: StoredMapping): TransactionMappingRecord => ({
  ...rest,
  gatewayMetadata: JSON.parse(gatewayMetadataJson) as Record<string, unknown>,
});

/** BatchGetItem refuses a request that names one key twice. */
const dedupe = (keys: TransactionKey[]): TransactionKey[] => [
  ...new Map(keys.map((key) => [`${key.merchantClientId}\u0000${key.transactionId}`, key])).values(),
];

/** One mapping per (merchant client, transactionId); the first write wins and later writes get it back. */
export class TransactionRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async putIfAbsent(
    mapping: TransactionMappingRecord,
  ): Promise<PutIfAbsentOutcome<TransactionMappingRecord>> {
    const outcome = await putIfAbsent(this.doc, this.tableName, toStored(mapping), 'transactionId', () =>
      this.getStored(mapping),
    );
    return outcome.stored ? outcome : { stored: false, existing: fromStored(outcome.existing) };
  }

  /** Records the payment a reservation was made for; only the receipt that reserved it may complete it. */
  async complete(
    key: TransactionKey,
    receiptId: string,
    paymentId: string,
    gatewayMetadata: Record<string, unknown>,
  ): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: keyOf(key),
        UpdateExpression: 'SET paymentId = :paymentId, gatewayMetadataJson = :metadata',
        ConditionExpression: 'receiptId = :receiptId',
        ExpressionAttributeValues: {
          ':paymentId': paymentId,
          ':metadata': JSON.stringify(gatewayMetadata),
          ':receiptId': receiptId,
        },
      }),
    );
  }

  async get(key: TransactionKey): Promise<TransactionMappingRecord | null> {
    const stored = await this.getStored(key);
    return stored ? fromStored(stored) : null;
  }

  /**
   * The mappings of these keys that exist, in one BatchGetItem per 100 keys (a page of the inbox).
   * Strongly consistent like `get`; keys DynamoDB leaves unprocessed are asked again.
   */
  async getMany(keys: readonly TransactionKey[]): Promise<TransactionMappingRecord[]> {
    const wanted = keys.filter((key) => key.transactionId !== '' && key.merchantClientId !== '');
    const found: StoredMapping[] = [];
    await sendInBatches(
      dedupe(wanted.map(keyOf)),
      BATCH_GET_MAX,
      async (pending) => {
        const result = await this.doc.send(
          new BatchGetCommand({
            RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } },
          }),
        );
        found.push(...((result.Responses?.[this.tableName] as StoredMapping[] | undefined) ?? []));
        return (result.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as typeof pending;
      },
      'transaction mapping reads',
    );
    return found.map(fromStored);
  }

  /**
   * Every merchant client's mapping of this transactionId, for callers that must pick theirs by
   * something other than the owner (an issuer, by its user's receipt). Eventually consistent: the
   * index is written after the table.
   */
  async allWithTransactionId(transactionId: string): Promise<TransactionMappingRecord[]> {
    if (transactionId === '') return [];
    const stored = await queryIndexAll<StoredMapping>(this.doc, {
      table: this.tableName,
      index: 'by-transaction-id',
      attribute: 'transactionId',
      value: transactionId,
    });
    return stored.map(fromStored);
  }

  private async getStored(key: TransactionKey): Promise<StoredMapping | null> {
    // Ids can come straight from a caller's envelope; DynamoDB refuses an empty key rather than finding nothing.
    if (key.transactionId === '' || key.merchantClientId === '') return null;
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: keyOf(key), ConsistentRead: true }),
    );
    return (result.Item as StoredMapping | undefined) ?? null;
  }
}
