import { BatchGetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from './client.js';

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix epoch seconds at which the current window ends. */
  resetAt: number;
  allowed: boolean;
}

/** The service's per-minute budgets. */
export const MINUTE_WINDOW_SECONDS = 60;
/** The usage plan's quota counts requests per UTC day; epoch seconds align days on 00:00 UTC. */
export const DAY_WINDOW_SECONDS = 86_400;
/**
 * A daily quota's leases are capped at 0.1 % of it: a unit claimed by an instance that then goes idle
 * stays counted until 00:00 UTC, so a smaller share keeps `Remaining` near the truth.
 */
export const DAILY_LEASE_SHARE = 0.001;

/** The counter names, shared by the functions (which count) and the edge authorizer (which reads). */
export const rateBuckets = {
  key: (keyId: string, group: string) => `key#${keyId}#${group}`,
  day: (keyId: string) => `day#${keyId}`,
  ip: (sourceIp: string) => `ip#${sourceIp}`,
  /** A keyless route's own budget, per value of its parameter (lib/kernel/route.ts keylessBudget). */
  route: (routeName: string, value: string) => `route#${routeName}#${value}`,
  /** Requests to a keyless route that failed verification, per source address. */
  unverified: (routeName: string, sourceIp: string) => `unverified#${routeName}#${sourceIp}`,
};

/**
 * Of a key's per-minute budget and its daily quota, the one that binds: a window already refused, else
 * the one with fewer requests left (the minute on a tie, as it resets first). This is what the
 * X-RateLimit-* headers describe, so a client never sees room in its minute while its day is spent.
 */
export function bindingLimit(minute: RateLimitState, day: RateLimitState | undefined): RateLimitState {
  if (!day || !minute.allowed) return minute;
  return day.remaining < minute.remaining ? { ...day, allowed: minute.allowed } : minute;
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
export const maxLeaseFor = (limit: number, share = MAX_LEASE_SHARE): number =>
  Math.max(1, Math.floor(limit * share));

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

  async hit(
    bucket: string,
    limit: number,
    windowSeconds: number,
    now: Date,
    leaseShare = MAX_LEASE_SHARE,
  ): Promise<RateLimitState> {
    const { windowStart, resetAt } = windowOf(windowSeconds, now);
    const verdict = (position: number): RateLimitState => ({
      limit,
      remaining: Math.max(0, limit - position),
      resetAt,
      allowed: position <= limit,
    });
    const maxLease = maxLeaseFor(limit, leaseShare);
    if (maxLease === 1) return verdict(await this.claim(bucket, windowStart, resetAt, 1));

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
      const refill = this.refill(bucket, limit, maxLease, windowStart, resetAt, lease);
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
    maxLease: number,
    windowStart: number,
    resetAt: number,
    previous: Lease | undefined,
  ): Promise<void> {
    const wanted = previous?.windowStart === windowStart ? Math.min(previous.size * 2, maxLease) : 1;
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

  /**
   * The windows' shared counts as they stand, without counting anything: the edge authorizer reports
   * them in the responses API Gateway makes itself. Leased units count as spent, so `remaining` errs
   * low, never high. One BatchGetItem, eventually consistent: a header, not a decision.
   */
  async peek(
    windows: readonly { bucket: string; limit: number; windowSeconds: number }[],
    now: Date,
  ): Promise<RateLimitState[]> {
    const keyed = windows.map((window) => {
      const { windowStart, resetAt } = windowOf(window.windowSeconds, now);
      return { ...window, pk: `${window.bucket}#${windowStart}`, resetAt };
    });
    const result = await this.doc.send(
      new BatchGetCommand({
        RequestItems: {
          [this.tableName]: {
            Keys: [...new Set(keyed.map((window) => window.pk))].map((pk) => ({ pk })),
            ProjectionExpression: 'pk, #count',
            ExpressionAttributeNames: { '#count': 'count' },
          },
        },
      }),
    );
    const counts = new Map(
      (result.Responses?.[this.tableName] ?? []).map((item) => [String(item.pk), Number(item.count ?? 0)]),
    );
    return keyed.map((window) => {
      const count = counts.get(window.pk) ?? 0;
      return {
        limit: window.limit,
        remaining: Math.max(0, window.limit - count),
        resetAt: window.resetAt,
        allowed: count < window.limit,
      };
    });
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
