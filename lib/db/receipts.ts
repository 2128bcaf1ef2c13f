import {
  BatchWriteCommand,
  GetCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { SealedEnvelope } from '../crypto/envelope.js';
import { BATCH_WRITE_MAX, sendInBatches } from './batch.js';
import { isConditionFailure, putIfAbsent, queryIndexAll, type PutIfAbsentOutcome } from './client.js';
import { tableDefinitions } from '../kernel/tables.js';

/**
 * The envelope as stored and returned to merchants (spec: EncryptedReceiptEnvelope): what the crypto
 * module sealed, plus its lifetime and escrow state.
 */
export type ReceiptEnvelope = SealedEnvelope & {
  createdAt: string;
  expiresAt: string;
  isEscrowed: boolean;
  escrowKeyId: string | null;
};

export interface StoredReceipt {
  receiptId: string;
  envelope: ReceiptEnvelope;
  /** The merchant client that encrypted it. */
  merchantClientId: string;
  /** Registered recipient, when there was one at encryption time or after a claim. */
  recipientUserId?: string;
  /**
   * An escrowed receipt addressed to a card: the card's tag (never its hashedPan), until a claim with
   * the card's transaction releases it.
   */
  pendingRecipient?: string;
  /** The card transaction's time (ISO 8601, UTC), beside the tag: claims look up a window of it. */
  claimAt?: string;
  /** What a claim must match (amounts, currency, last four), sealed under the card-tag key. */
  claimFacts?: string;
  /** sha256 of the validated request, so an identical retry returns the first envelope. */
  requestDigest: string;
  createdAt: string;
  ttl: number;
}

/** A receiptId is unique within its merchant client only (DECISIONS: merchant namespaces). */
export type ReceiptKey = Pick<StoredReceipt, 'merchantClientId' | 'receiptId'>;

const keyOf = ({ merchantClientId, receiptId }: ReceiptKey): ReceiptKey => ({ merchantClientId, receiptId });

export class ReceiptRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  putIfAbsent(receipt: StoredReceipt): Promise<PutIfAbsentOutcome<StoredReceipt>> {
    return putIfAbsent(this.doc, this.tableName, receipt, 'receiptId', () => this.get(receipt));
  }

  async get(key: ReceiptKey): Promise<StoredReceipt | null> {
    // Ids can come straight from a caller's envelope; DynamoDB refuses an empty key rather than finding nothing.
    if (key.receiptId === '' || key.merchantClientId === '') return null;
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: keyOf(key), ConsistentRead: true }),
    );
    return (result.Item as StoredReceipt | undefined) ?? null;
  }

  pendingFor(hashedPan: string): Promise<StoredReceipt[]> {
    return queryIndexAll(this.doc, {
      table: this.tableName,
      index: 'by-pending-recipient',
      attribute: 'pendingRecipient',
      value: hashedPan,
    });
  }

  /**
   * Escrowed receipts of one card whose transaction time lies in [from, to], oldest first, at most
   * `limit`: the work of one claimed transaction is bounded whatever the card has pending.
   */
  async pendingForCardBetween(
    cardTag: string,
    from: string,
    to: string,
    limit: number,
  ): Promise<StoredReceipt[]> {
    const page = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'by-card-and-time',
        KeyConditionExpression: 'pendingRecipient = :tag AND claimAt BETWEEN :from AND :to',
        ExpressionAttributeValues: { ':tag': cardTag, ':from': from, ':to': to },
        Limit: limit,
      }),
    );
    return (page.Items as StoredReceipt[] | undefined) ?? [];
  }

  /** Replaces an escrowed envelope with one wrapped for its now-registered recipient, once. */
  async claim(
    key: ReceiptKey,
    envelope: ReceiptEnvelope,
    recipientUserId: string,
    ttl: number,
  ): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: keyOf(key),
          UpdateExpression:
            'SET envelope = :envelope, recipientUserId = :user, #ttl = :ttl REMOVE pendingRecipient, claimAt, claimFacts',
          ConditionExpression: 'attribute_exists(pendingRecipient)',
          ExpressionAttributeNames: { '#ttl': 'ttl' },
          ExpressionAttributeValues: { ':envelope': envelope, ':user': recipientUserId, ':ttl': ttl },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  /**
   * Up to `limit` table keys of the receipts wrapped for a user (the sparse by-recipient-user index),
   * and whether more may remain. The index is eventually consistent in AWS: a receipt stored a moment
   * ago can be missing from it, which is why an erasure can be repeated.
   */
  async keysForRecipient(
    userId: string,
    limit: number,
  ): Promise<{ keys: Record<string, unknown>[]; more: boolean }> {
    const { partitionKey, sortKey } = tableDefinitions.receipts as { partitionKey: string; sortKey?: string };
    const keyNames = [partitionKey, ...(sortKey ? [sortKey] : [])];
    const keys: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: 'by-recipient-user',
          KeyConditionExpression: 'recipientUserId = :user',
          ExpressionAttributeValues: { ':user': userId },
          ProjectionExpression: keyNames.map((_, index) => `#k${index}`).join(', '),
          ExpressionAttributeNames: Object.fromEntries(keyNames.map((name, index) => [`#k${index}`, name])),
          Limit: limit - keys.length,
          ExclusiveStartKey: startKey,
        }),
      );
      keys.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey && keys.length < limit);
    return { keys, more: startKey !== undefined };
  }

  /**
   * One page of the receipts wrapped for a user, newest first (the by-recipient-user index), from
   * after `startKey` (a LastEvaluatedKey of an earlier page). Receipts stored later sort before any
   * page already read, so paging on never repeats or skips one that was there when paging began.
   */
  async pageForRecipient(
    userId: string,
    limit: number,
    startKey: Record<string, string> | undefined,
  ): Promise<{ receipts: StoredReceipt[]; lastKey: Record<string, string> | undefined }> {
    const page = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'by-recipient-user',
        KeyConditionExpression: 'recipientUserId = :user',
        ExpressionAttributeValues: { ':user': userId },
        ScanIndexForward: false,
        Limit: limit,
        ExclusiveStartKey: startKey,
      }),
    );
    return {
      receipts: (page.Items as StoredReceipt[] | undefined) ?? [],
      lastKey: page.LastEvaluatedKey as Record<string, string> | undefined,
    };
  }

  /**
   * Every merchant client's receipt with this receiptId (the by-receipt-id index), for callers that
   * pick theirs by recipient. Eventually consistent: the index is written after the table.
   */
  async allWithReceiptId(receiptId: string): Promise<StoredReceipt[]> {
    if (receiptId === '') return [];
    return queryIndexAll(this.doc, {
      table: this.tableName,
      index: 'by-receipt-id',
      attribute: 'receiptId',
      value: receiptId,
    });
  }

  /**
   * Deletes receipts by their table keys, 25 to a call. Unconditional, which is safe for keys read
   * from the by-recipient-user index: a receipt's recipient, once set, never changes.
   */
  async deleteAll(keys: readonly Record<string, unknown>[]): Promise<void> {
    await sendInBatches(
      keys.map((Key) => ({ DeleteRequest: { Key } })),
      BATCH_WRITE_MAX,
      async (pending) => {
        const result = await this.doc.send(
          new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } }),
        );
        return (result.UnprocessedItems?.[this.tableName] ?? []) as typeof pending;
      },
      'receipt deletions',
    );
  }
}
