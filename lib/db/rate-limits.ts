import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix epoch seconds at which the current window ends. */
  resetAt: number;
  allowed: boolean;
}

const windowOf = (windowSeconds: number, now: Date) => {
  const nowSeconds = Math.floor(now.getTime() / 1000);
  const windowStart = nowSeconds - (nowSeconds % windowSeconds);
  return { windowStart, resetAt: windowStart + windowSeconds };
};

/** The window's headers when the counter store cannot be reached: the request is not counted. */
export function uncountedWindow(limit: number, windowSeconds: number, now: Date): RateLimitState {
  return { limit, remaining: limit, resetAt: windowOf(windowSeconds, now).resetAt, allowed: true };
}

/**
 * Fixed-window counters in DynamoDB: one atomic ADD per request, so every Lambda instance shares the
 * count. Counters expire through TTL shortly after their window.
 */
export class RateLimiter {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async hit(bucket: string, limit: number, windowSeconds: number, now: Date): Promise<RateLimitState> {
    const { windowStart, resetAt } = windowOf(windowSeconds, now);
    const result = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: `${bucket}#${windowStart}` },
        UpdateExpression: 'ADD #count :one SET #ttl = if_not_exists(#ttl, :ttl)',
        ExpressionAttributeNames: { '#count': 'count', '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':one': 1, ':ttl': resetAt + 3600 },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    const count = Number(result.Attributes?.count ?? 1);
    return { limit, remaining: Math.max(0, limit - count), resetAt, allowed: count <= limit };
  }
}
