import type { Logger } from './log.js';
import type { RateGroup } from './tiers.js';

/**
 * The counters an operator watches, and the dimensions each is split by. Use cases count through the
 * Telemetry port; lib/wiring/aws-observability.ts publishes them as CloudWatch metrics (EMF), the local stack
 * writes them to its log. Dimension values come from closed lists, never from a request, so a metric
 * cannot carry an id, a key or a card hash, nor grow without bound. The kernel names only the
 * pipeline's own; a feature declares its counters in its folder (lib/<feature>/vocabulary.ts) by
 * declaration merging, `declare module '../kernel/telemetry.js' { interface MetricDimensions { … } }`,
 * and they are type-checked here like these.
 */
export interface MetricDimensions {
  /** An error answer with the code DECRYPTION_ERROR, from any endpoint (lib/http/error-envelope.ts; alarmed). */
  DecryptionErrorAnswers: Record<string, never>;
  /** An error answer with the code GRANT_ERROR, its 403 or its 429 (lib/http/error-envelope.ts; alarmed). */
  GrantErrorAnswers: Record<string, never>;
  /** A request refused at the per-minute rate limit: per endpoint group, or per source IP without a key. */
  RateLimitRefusals: { group: RateGroup | 'anonymous' };
}

export type MetricName = keyof MetricDimensions;

/** The CloudWatch namespace, unless POWERTOOLS_METRICS_NAMESPACE says otherwise. */
export const METRIC_NAMESPACE = 'ReceiptService';

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
