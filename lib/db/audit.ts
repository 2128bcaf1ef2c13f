import { randomBytes, randomInt } from 'node:crypto';
import { PutCommand, QueryCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../kernel/clock.js';

export type AuditAction =
  | 'key.generate'
  | 'key.import'
  | 'user.register'
  | 'access.grant'
  | 'receipt.encrypt'
  | 'receipt.decrypt'
  | 'escrow.wrap'
  | 'escrow.claim'
  | 'escrow.claim-request'
  | 'user.register-conflict'
  | 'user.unbind'
  | 'card-key.rotate'
  | 'transaction.store'
  | 'payment.create'
  | 'payment.decrypt'
  | 'user.rekey'
  | 'user.erase'
  | 'access.revoke'
  | 'webhook.create'
  | 'webhook.delete'
  | 'webhook.rotate-secret'
  | 'payment.status'
  | 'payment.refund'
  | 'gateway.event'
  | 'user.re-register'
  | 'evidence.backfill'
  | 'receipts.migrate'
  | 'receipts.match'
  | 'signing-key.register'
  | 'signing-key.revoke'
  | 'signing-policy.set'
  | 'signing-key.take-over'
  | 'signing-key.reset'
  | 'receipt.signature';

/**
 * One audited operation. Never a key, a token id, any part of a hashedPan or receipt content: only
 * identifiers, outcomes and at most a short prefix of a card tag.
 */
export interface AuditEvent {
  action: AuditAction;
  outcome: 'success' | 'failure';
  requestId: string;
  clientId: string;
  reason?: string;
  userId?: string;
  keyId?: string;
  receiptId?: string;
  transactionId?: string;
  sourceIp?: string;
  escrowKeyId?: string;
  webhookId?: string;
  /** `v<n>.` and 6 characters of a card tag (lib/crypto/card-tag.ts): correlates, identifies nothing. */
  cardTagPrefix?: string;
  /** Counts an operation worked through (a claim's transactions, released receipts, re-tagged items). */
  counts?: Record<string, number>;
}

export interface AuditRecord extends AuditEvent {
  pk: string;
  sk: string;
  at: string;
  ttl: number;
}

/**
 * A client's audit records are spread over this many partition keys. Under one key, a merchant's
 * records all land on one partition, and with a time-ordered sort key DynamoDB cannot split it for
 * heat: 1,000 write units a second is that key's ceiling, which an enterprise merchant reaches at its
 * allowed rates (500 encrypts and 250 payments a second, three records each: docs/SCALE.md). Sixteen
 * shards raise the ceiling to 16,000 a second; reading a trail queries them all.
 */
export const AUDIT_SHARDS = 16;

/** The partition key of a client's audit records in one shard (`CLIENT#<clientId>` before shards). */
export const auditPartition = (clientId: string, shard: number): string => `CLIENT#${clientId}#${shard}`;

export class AuditLog {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    /** Resolved on first use: the public health function writes no audit and has no audit table. */
    private readonly tableName: () => string,
    private readonly clock: Clock,
    private readonly retentionDays: number,
  ) {}

  async record(event: AuditEvent): Promise<void> {
    const now = this.clock.now();
    const item: AuditRecord = {
      ...event,
      pk: auditPartition(event.clientId, randomInt(AUDIT_SHARDS)),
      sk: `${now.toISOString()}#${event.requestId}#${randomBytes(4).toString('hex')}`,
      at: now.toISOString(),
      ttl: Math.floor(now.getTime() / 1000) + this.retentionDays * 86_400,
    };
    await this.doc.send(new PutCommand({ TableName: this.tableName(), Item: item }));
  }

  /**
   * A client's audit trail, newest first (used by tests and operators): the newest `limit` of every
   * shard, and of the unsharded key records written before shards, merged by time.
   */
  async forClient(clientId: string, limit = 100): Promise<AuditRecord[]> {
    const partitions = [
      `CLIENT#${clientId}`,
      ...Array.from({ length: AUDIT_SHARDS }, (_, shard) => auditPartition(clientId, shard)),
    ];
    const pages = await Promise.all(
      partitions.map((pk) =>
        this.doc.send(
          new QueryCommand({
            TableName: this.tableName(),
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': pk },
            ScanIndexForward: false,
            Limit: limit,
          }),
        ),
      ),
    );
    return pages
      .flatMap((page) => (page.Items as AuditRecord[] | undefined) ?? [])
      .sort((a, b) => (a.sk < b.sk ? 1 : a.sk > b.sk ? -1 : 0))
      .slice(0, limit);
  }
}
