import type { GatewayKind } from './gateway-kind.js';
import type { Logger } from './log.js';
import type { RateGroup } from './tiers.js';

/**
 * The counters an operator watches, and the dimensions each is split by. Use cases count through the
 * Telemetry port; lib/wiring/aws-observability.ts publishes them as CloudWatch metrics (EMF), the local stack
 * writes them to its log. Dimension values come from closed lists, never from a request, so a metric
 * cannot carry an id, a key or a card hash, nor grow without bound.
 */
export interface MetricDimensions {
  /** A receipt sealed for a registered user's key and stored. */
  ReceiptsEncrypted: Record<string, never>;
  /** A receipt sealed for the escrow key and stored. */
  ReceiptsEscrowed: Record<string, never>;
  /** A decryption refused with the uniform 403; the reason is here and in the audit, never in the response. */
  DecryptRefusals: { reason: DecryptRefusal };
  /** A grant refused because the user already holds the maximum number of live tokens. */
  GrantLimitRefusals: Record<string, never>;
  /** An error answer with the code DECRYPTION_ERROR, from any endpoint (lib/http/error-envelope.ts; alarmed). */
  DecryptionErrorAnswers: Record<string, never>;
  /** An error answer with the code GRANT_ERROR, its 403 or its 429 (lib/http/error-envelope.ts; alarmed). */
  GrantErrorAnswers: Record<string, never>;
  /** A payment the gateway declined or failed to make. */
  PaymentFailures: { gateway: GatewayKind; outcome: PaymentFailure };
  /** A registration answered 409: the card (or key) is already registered, maybe by another issuer. */
  RegisterConflicts: Record<string, never>;
  /** An escrowed receipt released to a user by a claim with its card transaction. */
  ReceiptsClaimed: Record<string, never>;
  /** A claim or a match refused because the card's daily allowance of transactions with the client is spent. */
  ClaimLimitRefusals: Record<string, never>;
  /** A request refused at the per-minute rate limit: per endpoint group, or per source IP without a key. */
  RateLimitRefusals: { group: RateGroup | 'anonymous' };
  /** A webhook delivery given up: its back-off schedule ran out, or its URL was refused at delivery. */
  WebhookDeliveriesFailed: Record<string, never>;
  /** A refund recorded: asked of the service, or made at the provider (its dashboard) and told by its event. */
  RefundsRecorded: { gateway: GatewayKind; source: 'api' | 'gateway' };
  /** A gateway event refused: its signature missing or wrong, or dated too old or ahead (a forgery, a flood, or a misconfigured secret). Never audited. */
  GatewayEventsRefused: { gateway: GatewayKind };
  /** A receipt escrowed because its registered recipient's stored key could not be sealed to. */
  RecipientSealFailures: Record<string, never>;
  /** A provider's refund event refused: its currency is not its payment's (alarmed: infra/monitoring.ts). */
  RefundCurrencyMismatches: Record<string, never>;
  /** A card registered again by the client that erased its user within 30 days (claim allowance grind). */
  ReRegistrations: Record<string, never>;
  /** A payment's network references left out of its receipt: a claim or key change came between charge and seal. */
  CardReferencesNotSealed: Record<string, never>;
}

export type MetricName = keyof MetricDimensions;

/** The CloudWatch namespace, unless POWERTOOLS_METRICS_NAMESPACE says otherwise. */
export const METRIC_NAMESPACE = 'ReceiptService';

/** Why a decryption was refused, as a metric dimension: a closed list, unlike the audit's free text. */
export type DecryptRefusal =
  | 'token_unknown'
  | 'token_expired'
  | 'token_purpose'
  | 'token_other_client'
  | 'user_other_client'
  | 'token_other_key'
  | 'envelope_escrowed'
  | 'envelope_other_key'
  | 'private_key_invalid'
  | 'private_key_mismatch'
  | 'envelope_unopenable'
  | 'content_not_receipt';

/** Declined by the card's issuer, refused by the provider as a request (4xx), or the provider failing. */
export type PaymentFailure = 'declined' | 'refused' | 'error';

/** A metric without dimensions takes none; one with dimensions must be given all of them. */
export type DimensionsArgument<M extends MetricName> =
  MetricDimensions[M] extends Record<string, never> ? [] : [dimensions: MetricDimensions[M]];

export interface Telemetry {
  /** Adds one to a counter. Never throws: telemetry must not fail a request. */
  count<M extends MetricName>(metric: M, ...dimensions: DimensionsArgument<M>): void;
  /** Publishes what this invocation counted; the pipeline calls it once per invocation, error or not. */
  flush(): void;
}

/** One counted event as the local implementation keeps it. */
export interface CountedMetric {
  metric: MetricName;
  dimensions: Record<string, string>;
  value: number;
}

/**
 * Locally the metrics go to the log, one line per count at the logger's level (so LOG_LEVEL=SILENT
 * silences them with everything else), and are kept in memory, summed per metric and dimensions, for
 * whoever runs the stack to read. Distinct dimension sets are few (closed lists), so the map is small.
 */
export class LogTelemetry implements Telemetry {
  private readonly totals = new Map<string, CountedMetric>();

  constructor(private readonly logger: Logger) {}

  count<M extends MetricName>(metric: M, ...dimensions: DimensionsArgument<M>): void {
    const split: Record<string, string> = { ...dimensions[0] };
    const key = JSON.stringify([metric, Object.entries(split).sort()]);
    const entry = this.totals.get(key) ?? { metric, dimensions: split, value: 0 };
    entry.value += 1;
    this.totals.set(key, entry);
    this.logger.info('metric', { metric, ...split, count: 1 });
  }

  flush(): void {
    // Each count was logged as it happened; there is nothing batched to publish.
  }

  /** The sum of one metric over every dimension set that includes `where`. */
  total<M extends MetricName>(metric: M, where: Partial<MetricDimensions[M]> = {}): number {
    let sum = 0;
    for (const entry of this.totals.values()) {
      if (entry.metric !== metric) continue;
      if (Object.entries(where).every(([name, value]) => entry.dimensions[name] === value))
        sum += entry.value;
    }
    return sum;
  }

  snapshot(): CountedMetric[] {
    return [...this.totals.values()].map((entry) => ({ ...entry, dimensions: { ...entry.dimensions } }));
  }
}
