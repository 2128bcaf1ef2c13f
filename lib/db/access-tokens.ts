import { createHash } from 'node:crypto';
import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { BATCH_GET_MAX, sendInBatches } from './batch.js';
import { isConditionFailure } from './client.js';
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
 * claims a slot whose holder is absent or expired (a conditional put), and only then writes the token.
 * A slot can only be claimed by one grant, and no token exists without its slot, so the limit holds
 * under any concurrency. Two plain puts, not a transaction, which bills each item twice (issue 40): a
 * grant that stops between them leaves a slot without a token, which holds until the token would have
 * expired (a refusal of a further token meanwhile, never one token too many).
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
      const slotKey = { pk: slotPk(token.userId, slot) };
      try {
        await this.doc.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { ...slotKey, tokenHash, expiresAt, ttl: expiresAt },
            ConditionExpression: 'attribute_not_exists(pk) OR expiresAt <= :now',
            ExpressionAttributeValues: { ':now': nowSeconds },
          }),
        );
      } catch (error) {
        if (isConditionFailure(error)) continue;
        throw error;
      }
      try {
        await this.doc.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { pk: tokenPk(tokenHash), ...token, slot, ttl: expiresAt },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
      } catch (error) {
        await this.doc
          .send(
            new DeleteCommand({
              TableName: this.tableName,
              Key: slotKey,
              ConditionExpression: 'tokenHash = :tokenHash',
              ExpressionAttributeValues: { ':tokenHash': tokenHash },
            }),
          )
          .catch(() => undefined);
        throw error;
      }
      return { granted: true };
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
    // Every slot, unprocessed ones asked again: a slot missed would make Retry-After too late.
    const expiries = (await this.batchGet(keys)).map((item) => Number(item.expiresAt));
    return expiries.length === 0 ? 1 : Math.max(1, Math.min(...expiries) - nowSeconds);
  }

  /**
   * Deletes a token of this client and frees its slot, in one transaction so the slot is never freed
   * while the token still works. The stored token, or null when there is none of this client's.
   */
  async revoke(tokenId: string, clientId: string): Promise<AccessTokenRecord | null> {
    const tokenHash = hashTokenId(tokenId);
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: tokenPk(tokenHash) }, ConsistentRead: true }),
    );
    const item = result.Item;
    if (!item || item.clientId !== clientId) return null;
    const { pk: _pk, slot, ttl: _ttl, ...token } = item;
    const deleted = await this.deleteToken(tokenHash, Number(slot), String(token.userId));
    return deleted ? (token as AccessTokenRecord) : null;
  }

  /**
   * Deletes the user's tokens that still hold a slot (every live one) and frees those slots; `keep`
   * spares tokens that should survive (a key rotation keeps the new key's). Tokens whose slot was
   * already reclaimed have expired and go with the table's TTL.
   */
  async revokeAllFor(
    userId: string,
    keep: (token: AccessTokenRecord) => boolean = () => false,
  ): Promise<number> {
    const slots = await this.batchGet(
      Array.from({ length: this.maxActive }, (_, slot) => ({ pk: slotPk(userId, slot) })),
    );
    const holders = slots.flatMap((item) => {
      const slot = /^SLOT#.+#(\d+)$/.exec(String(item.pk))?.[1];
      return typeof item.tokenHash === 'string' && slot !== undefined
        ? [{ tokenHash: item.tokenHash, slot: Number(slot) }]
        : [];
    });
    if (holders.length === 0) return 0;
    const tokens = new Map(
      (await this.batchGet(holders.map((holder) => ({ pk: tokenPk(holder.tokenHash) })))).map((item) => [
        String(item.pk),
        item,
      ]),
    );
    let revoked = 0;
    for (const holder of holders) {
      const token = tokens.get(tokenPk(holder.tokenHash));
      if (token && keep(token as unknown as AccessTokenRecord)) continue;
      if (await this.deleteToken(holder.tokenHash, holder.slot, userId)) revoked += 1;
    }
    return revoked;
  }

  /** The token and, when it still holds it, its slot. False when the token was already gone. */
  private async deleteToken(tokenHash: string, slot: number, userId: string): Promise<boolean> {
    const outcome = await transactWrite(this.doc, {
      TransactItems: [
        {
          Delete: {
            TableName: this.tableName,
            Key: { pk: tokenPk(tokenHash) },
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
        {
          Delete: {
            TableName: this.tableName,
            Key: { pk: slotPk(userId, slot) },
            ConditionExpression: 'tokenHash = :tokenHash',
            ExpressionAttributeValues: { ':tokenHash': tokenHash },
          },
        },
      ],
    });
    if (outcome.ok) return true;
    if (outcome.reasons[0] === 'ConditionalCheckFailed') return false;
    // The slot went to a later token after this one expired: only the token itself is left to delete.
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: tokenPk(tokenHash) },
          ConditionExpression: 'attribute_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  /** Every found item: keys DynamoDB leaves unprocessed are asked for again, or a live token could be missed. */
  private async batchGet(keys: { pk: string }[]): Promise<Record<string, unknown>[]> {
    const found: Record<string, unknown>[] = [];
    await sendInBatches(
      keys,
      BATCH_GET_MAX,
      async (pending) => {
        const result = await this.doc.send(
          new BatchGetCommand({
            RequestItems: { [this.tableName]: { Keys: pending, ConsistentRead: true } },
          }),
        );
        found.push(...(result.Responses?.[this.tableName] ?? []));
        return (result.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as typeof pending;
      },
      'access-token reads',
    );
    return found;
  }
}
