import { createHash } from 'node:crypto';
import { BatchGetCommand, GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { transactWrite } from './transact.js';

/** A token as stored: keyed by sha256(tokenId), never by the id itself. */
export interface AccessTokenRecord {
  userId: string;
  keyId: string;
  clientId: string;
  purpose: 'decrypt';
  grantedAt: string;
  expiresAt: string;
  sourceIp: string;
}

export type GrantOutcome = { granted: true } | { granted: false; retryAfterSeconds: number };

export const hashTokenId = (tokenId: string): string => createHash('sha256').update(tokenId).digest('hex');

const tokenPk = (tokenHash: string) => `TOKEN#${tokenHash}`;
const slotPk = (userId: string, slot: number) => `SLOT#${userId}#${slot}`;
const epoch = (iso: string) => Math.floor(Date.parse(iso) / 1000);

/**
 * At most `maxActive` live tokens per user, enforced with one slot item per allowed token: a grant
 * claims a slot whose holder is absent or expired, in the same transaction that writes the token.
 * A slot can only be claimed by one transaction, so the limit holds under any concurrency.
 */
export class AccessTokenRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly maxActive: number,
  ) {}

  async grant(tokenId: string, token: AccessTokenRecord, now: Date): Promise<GrantOutcome> {
    const tokenHash = hashTokenId(tokenId);
    const expiresAt = epoch(token.expiresAt);
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const start = Math.floor(Math.random() * this.maxActive);
    for (let offset = 0; offset < this.maxActive; offset += 1) {
      const slot = (start + offset) % this.maxActive;
      const outcome = await transactWrite(this.doc, {
        TransactItems: [
          {
            Put: {
              TableName: this.tableName,
              Item: { pk: slotPk(token.userId, slot), tokenHash, expiresAt, ttl: expiresAt },
              ConditionExpression: 'attribute_not_exists(pk) OR expiresAt <= :now',
              ExpressionAttributeValues: { ':now': nowSeconds },
            },
          },
          {
            Put: {
              TableName: this.tableName,
              Item: { pk: tokenPk(tokenHash), ...token, slot, ttl: expiresAt },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      });
      if (outcome.ok) return { granted: true };
    }
    return { granted: false, retryAfterSeconds: await this.secondsUntilASlotFrees(token.userId, nowSeconds) };
  }

  /** The stored token, or null. Expiry is the caller's to check: TTL deletion is lazy. */
  async find(tokenId: string): Promise<AccessTokenRecord | null> {
    const result = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: tokenPk(hashTokenId(tokenId)) },
        ConsistentRead: true,
      }),
    );
    if (!result.Item) return null;
    const { pk: _pk, slot: _slot, ttl: _ttl, ...token } = result.Item;
    return token as AccessTokenRecord;
  }

  private async secondsUntilASlotFrees(userId: string, nowSeconds: number): Promise<number> {
    const keys = Array.from({ length: this.maxActive }, (_, slot) => ({ pk: slotPk(userId, slot) }));
    const result = await this.doc.send(
      new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } } }),
    );
    const expiries = (result.Responses?.[this.tableName] ?? []).map((item) => Number(item.expiresAt));
    return expiries.length === 0 ? 1 : Math.max(1, Math.min(...expiries) - nowSeconds);
  }
}
