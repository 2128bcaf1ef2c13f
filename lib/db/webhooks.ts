import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure, queryIndexAll } from './client.js';
import { transactWrite } from './transact.js';

export const webhookEvents = [
  'receipt.available',
  'receipt.escrowed',
  'receipt.updated',
  'merchant.keys.changed',
] as const;
export type WebhookEvent = (typeof webhookEvents)[number];

export interface WebhookRecord {
  /** 'wh_' + 26 random base32 characters. */
  webhookId: string;
  /** The API client (its key's clientId) that registered it: the only one that sees or changes it. */
  clientId: string;
  url: string;
  events: WebhookEvent[];
  /** 'whsec_' + base64 of 32 random bytes (Standard Webhooks). */
  secret: string;
  /** After rotate-secret: the secret it replaced, which keeps signing until previousSecretExpiresAt. */
  previousSecret?: string;
  /** ISO 8601; the rotation's time + 24 h. */
  previousSecretExpiresAt?: string;
  createdAt: string;
}

/** How long a rotated-out secret keeps signing beside the new one, so receivers can switch over. */
export const secretOverlapMs = 24 * 60 * 60 * 1000;

/** A client already has its allowance of webhooks. */
export class WebhookLimitReached extends Error {
  constructor(readonly limit: number) {
    super(`A client may register at most ${limit} webhooks`);
  }
}

/**
 * One item per webhook, plus one counter item per client (`COUNT#<clientId>`, with no clientId
 * attribute, so the by-client index never holds it): creating and deleting move the counter in the
 * same transaction, so concurrent creates cannot pass the per-client limit.
 */
const counterKey = (clientId: string) => ({ webhookId: `COUNT#${clientId}` });

export class WebhookRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Stores a new webhook; throws WebhookLimitReached when its client already has `maxPerClient`. */
  async create(record: WebhookRecord, maxPerClient = Number.MAX_SAFE_INTEGER): Promise<void> {
    const outcome = await transactWrite(this.doc, {
      TransactItems: [
        {
          Update: {
            TableName: this.tableName,
            Key: counterKey(record.clientId),
            UpdateExpression: 'ADD #count :one',
            ConditionExpression: 'attribute_not_exists(#count) OR #count < :max',
            ExpressionAttributeNames: { '#count': 'count' },
            ExpressionAttributeValues: { ':one': 1, ':max': maxPerClient },
          },
        },
        {
          Put: {
            TableName: this.tableName,
            Item: record as unknown as Record<string, unknown>,
            ConditionExpression: 'attribute_not_exists(webhookId)',
          },
        },
      ],
    });
    if (outcome.ok) return;
    if (outcome.reasons[0] === 'ConditionalCheckFailed') throw new WebhookLimitReached(maxPerClient);
    throw new Error(`webhook not stored: ${outcome.reasons.join(', ')}`);
  }

  async get(webhookId: string): Promise<WebhookRecord | null> {
    // Only real webhook ids: a counter item is never handed out as a webhook.
    if (!webhookId.startsWith('wh_')) return null;
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { webhookId }, ConsistentRead: true }),
    );
    return (result.Item as WebhookRecord | undefined) ?? null;
  }

  /** The client's webhooks, oldest first. The index is eventually consistent in AWS. */
  listForClient(clientId: string): Promise<WebhookRecord[]> {
    return queryIndexAll(this.doc, {
      table: this.tableName,
      index: 'by-client',
      attribute: 'clientId',
      value: clientId,
    });
  }

  /** Deletes the webhook if it is this client's; false when there is no such webhook of the client. */
  async delete(webhookId: string, clientId: string): Promise<boolean> {
    if (!webhookId.startsWith('wh_')) return false;
    const outcome = await transactWrite(this.doc, {
      TransactItems: [
        {
          Delete: {
            TableName: this.tableName,
            Key: { webhookId },
            ConditionExpression: 'clientId = :client',
            ExpressionAttributeValues: { ':client': clientId },
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: counterKey(clientId),
            UpdateExpression: 'ADD #count :minusOne',
            ExpressionAttributeNames: { '#count': 'count' },
            ExpressionAttributeValues: { ':minusOne': -1 },
          },
        },
      ],
    });
    if (outcome.ok) return true;
    if (outcome.reasons[0] === 'ConditionalCheckFailed') return false;
    throw new Error(`webhook not deleted: ${outcome.reasons.join(', ')}`);
  }

  /**
   * Makes `secret` the signing secret; the one it replaces keeps signing for 24 hours. Null when there
   * is no such webhook of this client. A second rotation within the overlap ends the first one's old
   * secret at once: only the secret being replaced is kept.
   */
  async rotateSecret(
    webhookId: string,
    clientId: string,
    secret: string,
    now: Date,
  ): Promise<WebhookRecord | null> {
    if (!webhookId.startsWith('wh_')) return null;
    try {
      const result = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { webhookId },
          // Update expressions read the item as it was, so previousSecret gets the old secret.
          UpdateExpression:
            'SET previousSecret = secret, secret = :secret, previousSecretExpiresAt = :expires',
          ConditionExpression: 'clientId = :client',
          ExpressionAttributeValues: {
            ':secret': secret,
            ':expires': new Date(now.getTime() + secretOverlapMs).toISOString(),
            ':client': clientId,
          },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return (result.Attributes as WebhookRecord | undefined) ?? null;
    } catch (error) {
      if (isConditionFailure(error)) return null;
      throw error;
    }
  }
}

/** The secrets that sign at `now`: the current one, and the previous one during its 24 h overlap. */
export function signingSecrets(record: WebhookRecord, now: Date): string[] {
  const previousLive =
    record.previousSecret !== undefined &&
    record.previousSecretExpiresAt !== undefined &&
    Date.parse(record.previousSecretExpiresAt) > now.getTime();
  return previousLive ? [record.secret, record.previousSecret!] : [record.secret];
}
