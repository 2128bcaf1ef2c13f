import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import type { Logger } from '../kernel/log.js';
import {
  METRIC_NAMESPACE,
  type DimensionsArgument,
  type MetricName,
  type Telemetry,
} from '../kernel/telemetry.js';

/**
 * Counters as CloudWatch metrics in the embedded metric format: Powertools writes one JSON line to
 * stdout and CloudWatch Logs extracts the metric, with no API call on the request path. A count
 * without dimensions waits for the end of the invocation, so a request costs at most one line; a count
 * with dimensions is a single metric of its own, because Powertools clears an invocation's dimensions
 * when it publishes and one invocation may count under several.
 */
export class PowertoolsTelemetry implements Telemetry {
  constructor(
    private readonly metrics: Metrics,
    private readonly logger: Logger,
  ) {}

  count<M extends MetricName>(metric: M, ...dimensions: DimensionsArgument<M>): void {
    try {
      const split = dimensions[0];
      if (split) {
        // Two dimension sets: the service alone, for the total an alarm watches, and split.
        this.metrics
          .singleMetric()
          .addDimensions({})
          .addDimensions({ ...split })
          .addMetric(metric, MetricUnit.Count, 1);
      } else {
        this.metrics.addMetric(metric, MetricUnit.Count, 1);
      }
    } catch (error) {
      this.logger.warn('metric not recorded', {
        metric,
        error: error instanceof Error ? error.name : 'unknown',
      });
    }
  }

  flush(): void {
    // Publishing nothing makes Powertools warn on every request that counted nothing.
    if (!this.metrics.hasStoredMetrics()) return;
    try {
      this.metrics.publishStoredMetrics();
    } catch (error) {
      this.logger.warn('metrics not published', { error: error instanceof Error ? error.name : 'unknown' });
    }
  }
}

export interface AwsObservability {
  telemetry: Telemetry;
  tracer: Tracer;
}

let observability: AwsObservability | undefined;

/**
 * One Tracer and one Metrics per cold start, as Powertools expects. Tracing is on only inside Lambda
 * (Powertools checks), so the same wiring is inert anywhere else; POWERTOOLS_TRACE_ENABLED=false turns
 * it off there too.
 */
export function awsObservability(logger: Logger, serviceName?: string): AwsObservability {
  if (!observability) {
    const service = serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? 'receipt-service';
    const metrics = new Metrics({
      namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRIC_NAMESPACE,
      serviceName: service,
      // Powertools' own warnings go through our logger, so they are redacted and levelled like the rest.
      logger,
    });
    observability = {
      telemetry: new PowertoolsTelemetry(metrics, logger),
      tracer: new Tracer({ serviceName: service }),
    };
  }
  return observability;
}
