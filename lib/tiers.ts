/**
 * Subscription tiers: read by the CDK usage plans (edge throttling and quota) and by the service's own
 * per-key limiter, so the two never disagree.
 */
export const tierNames = ['free', 'standard', 'enterprise'] as const;
export type TierName = (typeof tierNames)[number];

export interface Tier {
  /** Steady requests per second allowed at the edge (API Gateway usage plan). */
  ratePerSecond: number;
  /** Short burst allowed at the edge. */
  burst: number;
  /** Requests per UTC day (API Gateway usage plan quota). */
  dailyQuota: number;
  /** The service's own fixed-window budget, reported in the X-RateLimit-* headers. */
  requestsPerMinute: number;
}

export type TierTable = Record<TierName, Tier>;

export const tiers: TierTable = {
  free: { ratePerSecond: 2, burst: 5, dailyQuota: 1_000, requestsPerMinute: 60 },
  standard: { ratePerSecond: 50, burst: 100, dailyQuota: 200_000, requestsPerMinute: 3_000 },
  enterprise: { ratePerSecond: 500, burst: 1_000, dailyQuota: 10_000_000, requestsPerMinute: 30_000 },
};

export const isTierName = (value: string): value is TierName =>
  (tierNames as readonly string[]).includes(value);
