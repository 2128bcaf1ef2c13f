import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from './client.js';

const DAY_SECONDS = 86_400;

export type QuotaOutcome = { spent: true; used: number } | { spent: false; retryAfterSeconds: number };

/**
 * How many transactions claims have named today (UTC) for one subject, in the rate-limit table. The
 * subject is a card and an issuer client (lib/receipts/claim.ts), not a user: erasing the user and
 * registering the card again starts no new count. One conditional ADD takes the whole request's share
 * or nothing, so concurrent claims never pass the limit between them; the counter expires through TTL
 * the day after.
 */
export class ClaimQuota {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async spend(subject: string, count: number, limit: number, now: Date): Promise<QuotaOutcome> {
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const dayStart = nowSeconds - (nowSeconds % DAY_SECONDS);
    const day = new Date(dayStart * 1000).toISOString().slice(0, 10);
    // With no counter yet the condition holds whatever the count: a request larger than a day's
    // allowance is refused here.
    if (count > limit) return { spent: false, retryAfterSeconds: dayStart + DAY_SECONDS - nowSeconds };
    try {
      const result = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: `CLAIMS#${subject}#${day}` },
          UpdateExpression: 'ADD #used :count SET #ttl = :ttl',
          ConditionExpression: 'attribute_not_exists(#used) OR #used <= :room',
          ExpressionAttributeNames: { '#used': 'used', '#ttl': 'ttl' },
          ExpressionAttributeValues: {
            ':count': count,
            ':room': limit - count,
            ':ttl': dayStart + 2 * DAY_SECONDS,
          },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      return {
        spent: true,
        used: Number((result.Attributes as { used?: number } | undefined)?.used ?? count),
      };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return { spent: false, retryAfterSeconds: dayStart + DAY_SECONDS - nowSeconds };
    }
  }
}
