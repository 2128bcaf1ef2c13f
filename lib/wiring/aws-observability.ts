import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Tracer } from '@aws-lambda-powertools/tracer';
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
  /** Only where tracing is on (tracingActive): elsewhere the X-Ray SDK is never loaded. */
  tracer: Tracer | undefined;
}

/**
 * Lambda with active tracing (the stack sets it: AWS_XRAY_DAEMON_ADDRESS is there only then), unless
 * POWERTOOLS_TRACE_ENABLED=false. The Tracer would be inert anywhere else, but loading it still costs:
 * the X-Ray SDK's import, and its async hooks on every promise of the process.
 */
export const tracingActive = (env: NodeJS.ProcessEnv = process.env): boolean =>
  Boolean(env.AWS_LAMBDA_FUNCTION_NAME && env.AWS_XRAY_DAEMON_ADDRESS) &&
  env.POWERTOOLS_TRACE_ENABLED !== 'false';

let observability: Promise<AwsObservability> | undefined;

/**
 * One Tracer and one Metrics per cold start, as Powertools expects. The Tracer, and with it the X-Ray
 * SDK, is loaded only where tracing is on (tracingActive).
 */
export function awsObservability(logger: Logger, serviceName?: string): Promise<AwsObservability> {
  observability ??= (async () => {
    const service = serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? 'receipt-service';
    const metrics = new Metrics({
      namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? METRIC_NAMESPACE,
      serviceName: service,
      // Powertools' own warnings go through our logger, so they are redacted and levelled like the rest.
      logger,
    });
    const tracer = tracingActive()
      ? new (await import('@aws-lambda-powertools/tracer')).Tracer({ serviceName: service })
      : undefined;
    return { telemetry: new PowertoolsTelemetry(metrics, logger), tracer };
  })();
  return observability;
}
