/**
 * Subscription tiers: read by the CDK usage plans (edge throttling and quota) and by the service's own
 * per-key limiter, so the two never disagree.
 */

/**
 * Endpoint groups with a per-minute budget of their own (the spec's limits vary by tier and endpoint).
 * Key generation spends ~40 ms of CPU per call and the payment endpoints spend the provider's own
 * rate limit, so a burst of either must not eat the budget a merchant's point of sale encrypts with.
 */
export const rateGroups = ['general', 'keyGeneration', 'payments'] as const;
export type RateGroup = (typeof rateGroups)[number];

export const tierNames = ['free', 'standard', 'enterprise'] as const;
export type TierName = (typeof tierNames)[number];

export interface Tier {
  /** Steady requests per second allowed at the edge (API Gateway usage plan). */
  ratePerSecond: number;
  /** Short burst allowed at the edge. */
  burst: number;
  /** Requests per UTC day (API Gateway usage plan quota). */
  dailyQuota: number;
  /**
   * The service's own fixed-window budgets, one per endpoint group and each counted apart, reported
   * in the X-RateLimit-* headers of that group's endpoints.
   */
  requestsPerMinute: Record<RateGroup, number>;
}

export type TierTable = Record<TierName, Tier>;

export const tiers: TierTable = {
  free: {
    ratePerSecond: 2,
    burst: 5,
    dailyQuota: 1_000,
    requestsPerMinute: { general: 60, keyGeneration: 10, payments: 30 },
  },
  standard: {
    ratePerSecond: 50,
    burst: 100,
    dailyQuota: 200_000,
    requestsPerMinute: { general: 3_000, keyGeneration: 300, payments: 1_500 },
  },
  enterprise: {
    ratePerSecond: 500,
    burst: 1_000,
    dailyQuota: 10_000_000,
    requestsPerMinute: { general: 30_000, keyGeneration: 3_000, payments: 15_000 },
  },
};

export const isTierName = (value: string): value is TierName =>
  (tierNames as readonly string[]).includes(value);

/** Where the CDK stack publishes each tier's usage plan id (infra/ writes it, the CLI reads it). */
export const usagePlanParameterName = (stage: string, tier: TierName): string =>
  `/${stage}/receipt-service/usage-plans/${tier}`;
