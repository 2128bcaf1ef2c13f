import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { putIfAbsent, type PutIfAbsentOutcome } from './client.js';

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

/** One mapping per transactionId; the first write wins and later writes get it back. */
export class TransactionRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  putIfAbsent(mapping: TransactionMappingRecord): Promise<PutIfAbsentOutcome<TransactionMappingRecord>> {
    return putIfAbsent(this.doc, this.tableName, mapping, 'transactionId', () =>
      this.get(mapping.transactionId),
    );
  }

  async get(transactionId: string): Promise<TransactionMappingRecord | null> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { transactionId }, ConsistentRead: true }),
    );
    return (result.Item as TransactionMappingRecord | undefined) ?? null;
  }
}
