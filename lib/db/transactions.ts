import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from './client.js';

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
}

export type PutMappingOutcome = { stored: true } | { stored: false; existing: TransactionMappingRecord };

/** One mapping per transactionId; the first write wins and later writes get it back. */
export class TransactionRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async putIfAbsent(mapping: TransactionMappingRecord): Promise<PutMappingOutcome> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: mapping,
          ConditionExpression: 'attribute_not_exists(transactionId)',
        }),
      );
      return { stored: true };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const existing = await this.get(mapping.transactionId);
      if (!existing) throw error;
      return { stored: false, existing };
    }
  }

  async get(transactionId: string): Promise<TransactionMappingRecord | null> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { transactionId }, ConsistentRead: true }),
    );
    return (result.Item as TransactionMappingRecord | undefined) ?? null;
  }
}
