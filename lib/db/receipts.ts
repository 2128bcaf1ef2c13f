import {
  DeleteCommand,
  GetCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { SealedEnvelope } from '../crypto/envelope.js';
import { isConditionFailure, putIfAbsent, type PutIfAbsentOutcome } from './client.js';
import { tableDefinitions } from '../tables.js';

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
  /** Escrowed receipts addressed to a hashed PAN wait here for that PAN's registration. */
  pendingRecipient?: string;
  recipientIdentifierHash?: string;
  /** sha256 of the validated request, so an identical retry returns the first envelope. */
  requestDigest: string;
  createdAt: string;
  ttl: number;
}

export class ReceiptRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  putIfAbsent(receipt: StoredReceipt): Promise<PutIfAbsentOutcome<StoredReceipt>> {
    return putIfAbsent(this.doc, this.tableName, receipt, 'receiptId', () => this.get(receipt.receiptId));
  }

  async get(receiptId: string): Promise<StoredReceipt | null> {
    // Ids can come straight from a caller's envelope; DynamoDB refuses an empty key rather than finding nothing.
    if (receiptId === '') return null;
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { receiptId }, ConsistentRead: true }),
    );
    return (result.Item as StoredReceipt | undefined) ?? null;
  }

  async pendingFor(hashedPan: string): Promise<StoredReceipt[]> {
    const receipts: StoredReceipt[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: 'by-pending-recipient',
          KeyConditionExpression: 'pendingRecipient = :pan',
          ExpressionAttributeValues: { ':pan': hashedPan },
          ExclusiveStartKey: startKey,
        }),
      );
      receipts.push(...((page.Items as StoredReceipt[] | undefined) ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return receipts;
  }

  /** Replaces an escrowed envelope with one wrapped for its now-registered recipient, once. */
  async claim(
    receiptId: string,
    envelope: ReceiptEnvelope,
    recipientUserId: string,
    ttl: number,
  ): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { receiptId },
          UpdateExpression:
            'SET envelope = :envelope, recipientUserId = :user, #ttl = :ttl REMOVE pendingRecipient',
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

  /** Deletes a receipt if it is still wrapped for this user; false when it is not (or is gone). */
  async deleteForRecipient(key: Record<string, unknown>, userId: string): Promise<boolean> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: key,
          ConditionExpression: 'recipientUserId = :user',
          ExpressionAttributeValues: { ':user': userId },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }
}
