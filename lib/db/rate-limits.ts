import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from './client.js';

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
 * Units of one bucket's window this instance has claimed from the shared counter: `next` to `last`
 * (1-based positions in the window's count) are still unspent.
 */
interface Lease {
  windowStart: number;
  next: number;
  last: number;
  size: number;
}

/** At most this share of a limit is claimed at once, so little is stranded in an idle instance. */
const MAX_LEASE_SHARE = 0.01;
/** Leases kept in memory: past windows' go first, then the oldest (their unspent units stay counted). */
const MAX_TRACKED_BUCKETS = 1_000;

/** How many units a limit allows claiming at once; 1 means every request is counted on its own. */
export const maxLeaseFor = (limit: number): number => Math.max(1, Math.floor(limit * MAX_LEASE_SHARE));

/**
 * Fixed-window counters in DynamoDB shared by every Lambda instance; counters expire through TTL
 * shortly after their window.
 *
 * Large budgets are claimed in leases: one atomic ADD takes n units of the window's count, and this
 * instance spends them without another call. A unit's position in the count decides the request, so
 * no more than `limit` requests are ever let through across all instances, and the remaining count
 * each reports is that of its own position. A lease starts at 1 in each window and doubles only when
 * spent within it, and is capped at 1 % of the limit; a lease of several units is only taken while it
 * fits under the limit, so near the limit instances go back to one unit at a time. A busy key thus
 * makes a handful of counter writes a minute instead of one per request (its counter item is not a
 * hot key), and the units stranded in idle instances when the window ends are at most 1 % of the limit
 * each. Budgets under 200 a minute (the free tier, the per-IP budget) are counted one request at a
 * time, exactly as a plain counter.
 */
export class RateLimiter {
  private readonly leases = new Map<string, Lease>();
  private readonly refills = new Map<string, Promise<void>>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async hit(bucket: string, limit: number, windowSeconds: number, now: Date): Promise<RateLimitState> {
    const { windowStart, resetAt } = windowOf(windowSeconds, now);
    const verdict = (position: number): RateLimitState => ({
      limit,
      remaining: Math.max(0, limit - position),
      resetAt,
      allowed: position <= limit,
    });
    if (maxLeaseFor(limit) === 1) return verdict(await this.claim(bucket, windowStart, resetAt, 1));

    // Every pass either spends a unit or waits for a refill that adds at least one, so this ends.
    for (;;) {
      const lease = this.leases.get(bucket);
      if (lease && lease.windowStart === windowStart) {
        if (lease.next <= lease.last) return verdict(lease.next++);
        // The window's count already passed the limit: nothing left to claim until it ends.
        if (lease.last >= limit) return verdict(lease.last + 1);
      }
      const pending = this.refills.get(bucket);
      if (pending) {
        await pending;
        continue;
      }
      const refill = this.refill(bucket, limit, windowStart, resetAt, lease);
      this.refills.set(bucket, refill);
      try {
        await refill;
      } finally {
        this.refills.delete(bucket);
      }
    }
  }

  private async refill(
    bucket: string,
    limit: number,
    windowStart: number,
    resetAt: number,
    previous: Lease | undefined,
  ): Promise<void> {
    const wanted =
      previous?.windowStart === windowStart ? Math.min(previous.size * 2, maxLeaseFor(limit)) : 1;
    let size = wanted;
    let last: number;
    try {
      last = await this.claim(bucket, windowStart, resetAt, size, wanted > 1 ? limit : undefined);
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      size = 1;
      last = await this.claim(bucket, windowStart, resetAt, size);
    }
    if (this.leases.size >= MAX_TRACKED_BUCKETS) this.makeRoom(windowStart);
    this.leases.set(bucket, { windowStart, next: last - size + 1, last, size });
  }

  /**
   * Adds `units` to the window's shared count and answers the count after it; with `fitUnder`, only
   * if the count stays within it (a ConditionalCheckFailedException otherwise).
   */
  private async claim(
    bucket: string,
    windowStart: number,
    resetAt: number,
    units: number,
    fitUnder?: number,
  ): Promise<number> {
    const result = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: `${bucket}#${windowStart}` },
        UpdateExpression: 'ADD #count :units SET #ttl = if_not_exists(#ttl, :ttl)',
        ...(fitUnder === undefined
          ? {}
          : { ConditionExpression: 'attribute_not_exists(#count) OR #count <= :room' }),
        ExpressionAttributeNames: { '#count': 'count', '#ttl': 'ttl' },
        ExpressionAttributeValues: {
          ':units': units,
          ':ttl': resetAt + 3600,
          ...(fitUnder === undefined ? {} : { ':room': fitUnder - units }),
        },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(result.Attributes?.count ?? units);
  }

  /** Drops past windows' leases, then, with many busy buckets in one window, the oldest ones. */
  private makeRoom(currentWindowStart: number): void {
    for (const [bucket, lease] of this.leases)
      if (lease.windowStart !== currentWindowStart) this.leases.delete(bucket);
    for (const bucket of this.leases.keys()) {
      if (this.leases.size < MAX_TRACKED_BUCKETS) break;
      this.leases.delete(bucket);
    }
  }
}
