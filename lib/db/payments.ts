import {
  GetCommand,
  PutCommand,
  QueryCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { GatewayKind, PaymentState, RefundState } from '../gateways/port.js';
import { isConditionFailure, putIfAbsent } from './client.js';
import { transactWrite } from './transact.js';
import type { RefundedLine } from '@receipt-service/receipt-core';

/**
 * The payments table: one partition per payment made through the service, holding the payment, its
 * refunds (by the provider's refund id) and the merchants' refund requests (by refundId). Every change
 * to a partition raises the payment's `version` in the same transaction, so a writer that read the
 * partition at version v writes only if nothing changed since: the sale's status and the refundable
 * remainder are always computed from one consistent state. Gateway events applied are kept beside
 * them, each in a partition of its own, for a week.
 */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A sale line as a refund needs it: what was sold, at what price, and its share of the tax. */
/**
 * A sale line with its share of the tax, and one line of a refund: the SDK's types, since the
 * refund rules that make them are receipt-core's (packages/receipt-core/src/refund-receipt.ts).
 */
export type { BasisLine, RefundedLine } from '@receipt-service/receipt-core';

export interface PaymentRecord {
  pk: string;
  sk: 'PAYMENT';
  gateway: GatewayKind;
  paymentId: string;
  merchantClientId: string;
  /** The sale receipt. */
  receiptId: string;
  transactionId: string;
  merchantId: string;
  amount: number;
  currency: string;
  /** The payment itself, as its provider last said: refunds are counted apart. */
  state: PaymentState;
  /** What a refund receipt is built from, sealed (lib/payments/refund-basis.ts): never in clear. */
  basis: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  /** Epoch seconds: kept as long as the sale receipt (RECEIPT_RETENTION_DAYS), then removed by TTL. */
  ttl: number;
}

export interface RefundRecord {
  pk: string;
  sk: string;
  providerRefundId: string;
  /** The merchant's refundId; for a refund made elsewhere (the provider's dashboard), one derived from its id. */
  refundId: string;
  amount: number;
  currency: string;
  state: RefundState;
  /** The refund receipt; null when there was nobody to seal it for (the sale's user was erased). */
  receiptId: string | null;
  lines: RefundedLine[];
  subtotal: number;
  tax: number;
  /** Who started it: a merchant through the service, or someone at the provider. */
  source: 'api' | 'gateway';
  /** The payment's version that recorded it: refunds listed in the order they were recorded. */
  sequence: number;
  createdAt: string;
  updatedAt: string;
  /** The payment's: the partition goes together. */
  ttl: number;
}

/** A signed refund request's refund receipt: its id, its time and the merchant's checked signature. */
export interface SignedRefund {
  receiptId: string;
  receiptDate: string;
  merchantSignature: { kid: string; jws: string };
}

export interface RefundRequestRecord {
  pk: string;
  sk: string;
  refundId: string;
  /** sha256 of the validated request: a repeat with another body is refused. */
  requestDigest: string;
  amount: number;
  lines: RefundedLine[];
  subtotal: number;
  tax: number;
  /** The refund's reason, sealed (lib/payments/refund-basis.ts sealReason): receipt text, never in clear. */
  sealedReason?: string;
  /** Requests stored before reasons were sealed kept it in clear; read, never written any more. */
  reason?: string;
  /** A signed request: the refund receipt it makes is this one (lib/payments/refunds.ts). */
  signed?: SignedRefund;
  /** Set once the provider has made the refund. */
  providerRefundId?: string;
  createdAt: string;
  ttl: number;
}

export interface PaymentPartition {
  payment: PaymentRecord;
  refunds: RefundRecord[];
  requests: RefundRequestRecord[];
}

export const paymentPk = (gateway: GatewayKind, paymentId: string) => `PAY#${gateway}#${paymentId}`;
export const refundSk = (providerRefundId: string) => `REFUND#${providerRefundId}`;
export const requestSk = (refundId: string) => `REQUEST#${refundId}`;
const eventPk = (gateway: GatewayKind, eventId: string) => `EVENT#${gateway}#${eventId}`;

/** A partition changed between its read and the write: read it again and retry. */
export class StalePartition extends Error {
  constructor() {
    super('the payment changed while it was being updated');
  }
}

export class PaymentRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  /** Stores a new payment; false when it is there already (a retried create). */
  async putPayment(record: PaymentRecord, alongside: TransactItem[] = []): Promise<boolean> {
    // Alone, a conditional put: a transaction of one item would bill it twice.
    if (alongside.length === 0) {
      const outcome = await putIfAbsent(this.doc, this.tableName, record, 'pk', () =>
        this.getPayment(record.gateway, record.paymentId),
      );
      return outcome.stored;
    }
    const outcome = await transactWrite(this.doc, {
      TransactItems: [
        {
          Put: {
            TableName: this.tableName,
            Item: record,
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        ...alongside,
      ],
    });
    if (outcome.ok) return true;
    if (outcome.reasons[0] === 'ConditionalCheckFailed') return false;
    throw new StalePartition();
  }

  async getPayment(gateway: GatewayKind, paymentId: string): Promise<PaymentRecord | null> {
    const result = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: paymentPk(gateway, paymentId), sk: 'PAYMENT' },
        ConsistentRead: true,
      }),
    );
    return (result.Item as PaymentRecord | undefined) ?? null;
  }

  /** The payment with its refunds and requests, read consistently; null for a payment the service did not make. */
  async partition(gateway: GatewayKind, paymentId: string): Promise<PaymentPartition | null> {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': paymentPk(gateway, paymentId) },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    const payment = items.find((item) => item.sk === 'PAYMENT') as PaymentRecord | undefined;
    if (!payment) return null;
    const kind = (prefix: string) => items.filter((item) => String(item.sk).startsWith(prefix));
    return {
      payment,
      refunds: kind('REFUND#') as unknown as RefundRecord[],
      requests: kind('REQUEST#') as unknown as RefundRequestRecord[],
    };
  }

  /**
   * Writes `items` (of this table or another) only if the payment is still at `version`, and raises
   * it: StalePartition when it is not, or when another condition of the transaction failed.
   */
  async commit(
    payment: Pick<PaymentRecord, 'pk' | 'version'>,
    now: Date,
    items: TransactItem[],
    changes: Partial<Pick<PaymentRecord, 'state'>> = {},
  ): Promise<void> {
    const sets = ['version = :next', 'updatedAt = :now'];
    const values: Record<string, unknown> = {
      ':expected': payment.version,
      ':next': payment.version + 1,
      ':now': now.toISOString(),
    };
    if (changes.state) {
      sets.push('#state = :state');
      values[':state'] = changes.state;
    }
    const outcome = await transactWrite(this.doc, {
      TransactItems: [
        {
          Update: {
            TableName: this.tableName,
            Key: { pk: payment.pk, sk: 'PAYMENT' },
            UpdateExpression: `SET ${sets.join(', ')}`,
            ConditionExpression: 'version = :expected',
            ...(changes.state ? { ExpressionAttributeNames: { '#state': 'state' } } : {}),
            ExpressionAttributeValues: values,
          },
        },
        ...items,
      ],
    });
    if (!outcome.ok) throw new StalePartition();
  }

  putItem(item: RefundRecord | RefundRequestRecord): TransactItem {
    return {
      Put: { TableName: this.tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' },
    };
  }

  replaceItem(item: RefundRecord | RefundRequestRecord): TransactItem {
    return { Put: { TableName: this.tableName, Item: item } };
  }

  deleteItem(item: Pick<RefundRequestRecord, 'pk' | 'sk'>): TransactItem {
    return { Delete: { TableName: this.tableName, Key: { pk: item.pk, sk: item.sk } } };
  }

  /**
   * Records that a provider event was applied, for `ttlSeconds`: false when it was already (a
   * replay, or the provider delivering it again).
   */
  async recordEvent(gateway: GatewayKind, eventId: string, now: Date, ttlSeconds: number): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            pk: eventPk(gateway, eventId),
            sk: 'EVENT',
            appliedAt: now.toISOString(),
            ttl: Math.floor(now.getTime() / 1000) + ttlSeconds,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  /** Whether an event was applied (and its record not yet expired). */
  async hasEvent(gateway: GatewayKind, eventId: string, now: Date): Promise<boolean> {
    const result = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: eventPk(gateway, eventId), sk: 'EVENT' },
        ConsistentRead: true,
      }),
    );
    const ttl = (result.Item as { ttl?: number } | undefined)?.ttl;
    return ttl !== undefined && ttl > Math.floor(now.getTime() / 1000);
  }
}
