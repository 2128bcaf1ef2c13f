import { Duration } from 'aws-cdk-lib';
import type { Stage } from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  MathExpression,
  Metric,
  TextWidget,
  TreatMissingData,
  type IMetric,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { FilterPattern, MetricFilter, type ILogGroup } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import type { MetricName } from '../lib/kernel/telemetry.js';

export interface MonitoredFunction {
  name: string;
  fn: IFunction;
  timeoutSeconds: number;
}

/** Counts in five minutes at which each security alarm fires (infra/settings.ts). */
export interface SecurityThresholds {
  unauthorized: number;
  forbidden: number;
  decryptionErrors: number;
  grantErrors: number;
  registerConflicts: number;
  /** Cards registered again by the client that erased their user within 30 days. */
  reRegistrations: number;
}

export interface MonitoringProps {
  resourcePrefix: string;
  /** Where the stage's functions publish their counts (POWERTOOLS_METRICS_NAMESPACE, infra/settings.ts). */
  metricNamespace: string;
  stage: Stage;
  accessLogGroup: ILogGroup;
  functions: readonly MonitoredFunction[];
  tables: Readonly<Record<string, ITable>>;
  alarmEmail?: string;
  dashboard: boolean;
  security: SecurityThresholds;
  /** Webhook delivery (infra/webhook-delivery.ts): its stream's and its delivery queue's dead-letter queues. */
  webhooks?: { deadLetterQueue: IQueue; deliveryDeadLetterQueue?: IQueue };
}

/** Where the counts taken from the API's access log go (the functions' own counts: MonitoringProps). */
export const METRIC_NAMESPACE = 'ReceiptService';

const FIVE_MINUTES = Duration.minutes(5);

/** CloudWatch's limit on the metrics one metric-math alarm reads (a hard limit). */
export const METRICS_PER_ALARM = 10;

/** `items` in runs of at most `size`, in order. */
const chunks = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, index) =>
    items.slice(index * size, (index + 1) * size),
  );

/** Thresholds, with the reasoning each one encodes. */
export const thresholds = {
  /** Percent of requests answered 5xx; only judged once there are enough requests to mean anything. */
  serverErrorRatePercent: 1,
  serverErrorMinRequests: 20,
  /** 429s (edge usage plans plus the service's own limiter) in five minutes: clients outgrowing tiers, or abuse. */
  rateLimitedPerFiveMinutes: 100,
  /** Any unhandled Lambda error is a crash or a timeout: handlers turn expected failures into responses. */
  lambdaErrors: 1,
  /** p99 duration as a share of the timeout: close to it, requests are about to start timing out. */
  durationShareOfTimeout: 0.8,
  /** On-demand tables throttle only past their previous peak's double or a hot partition. */
  dynamoThrottleEvents: 1,
  /** A receipt escrowed because its recipient's stored key could not be sealed to: a key to fix. */
  recipientSealFailures: 1,
  /** A provider's refund event in another currency than its payment: refused, someone must look. */
  refundCurrencyMismatches: 1,
} as const;

/**
 * Alarms on what would hurt callers first, an SNS topic when an address is given, and a dashboard.
 * Without `alarmEmail` the alarms still show in the console and can be wired to anything later.
 */
export class Monitoring extends Construct {
  readonly alarms: Alarm[] = [];
  readonly topic: Topic | undefined;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const prefix = props.resourcePrefix;

    if (props.alarmEmail) {
      this.topic = new Topic(this, 'AlarmTopic', { topicName: `${prefix}-alarms`, enforceSSL: true });
      this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    }

    const requests = props.stage.metricCount({ period: FIVE_MINUTES, statistic: 'Sum' });
    const serverErrors = props.stage.metricServerError({ period: FIVE_MINUTES, statistic: 'Sum' });
    const serverErrorRate = new MathExpression({
      expression: `IF(requests >= ${thresholds.serverErrorMinRequests}, 100 * errors / requests, 0)`,
      usingMetrics: { requests, errors: serverErrors },
      period: FIVE_MINUTES,
      label: '5xx rate (%)',
    });
    this.alarm('Api5xxRate', {
      alarmName: `${prefix}-api-5xx-rate`,
      alarmDescription: `At least ${thresholds.serverErrorRatePercent}% of API requests answered 5xx`,
      metric: serverErrorRate,
      threshold: thresholds.serverErrorRatePercent,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
    });

    // API Gateway publishes no 429 metric of its own; the access log has every status.
    const rateLimitedFilter = new MetricFilter(this, 'RateLimitedFilter', {
      logGroup: props.accessLogGroup,
      filterPattern: FilterPattern.stringValue('$.status', '=', '429'),
      metricNamespace: METRIC_NAMESPACE,
      metricName: `${prefix}-rate-limited`,
      metricValue: '1',
    });
    const rateLimited = rateLimitedFilter.metric({ period: FIVE_MINUTES, statistic: 'Sum' });
    this.alarm('ApiRateLimited', {
      alarmName: `${prefix}-api-429`,
      alarmDescription: `At least ${thresholds.rateLimitedPerFiveMinutes} requests answered 429 in five minutes`,
      metric: rateLimited,
      threshold: thresholds.rateLimitedPerFiveMinutes,
      evaluationPeriods: 1,
    });

    const securityMetrics = this.securityAlarms(props);
    if (props.webhooks) this.webhookAlarms(props, props.webhooks);
    this.functionAlarms(prefix, props.functions);

    const throttleMetrics: IMetric[] = [];
    for (const [key, table] of Object.entries(props.tables)) {
      const throttles = new MathExpression({
        // Ids are unique per table: the dashboard graphs every table's expression together.
        expression: `${key}Reads + ${key}Writes`,
        usingMetrics: {
          [`${key}Reads`]: table.metric('ReadThrottleEvents', { period: FIVE_MINUTES, statistic: 'Sum' }),
          [`${key}Writes`]: table.metric('WriteThrottleEvents', { period: FIVE_MINUTES, statistic: 'Sum' }),
        },
        period: FIVE_MINUTES,
        label: key,
      });
      throttleMetrics.push(throttles);
      this.alarm(`${key}-Throttles`, {
        alarmName: `${prefix}-ddb-${key}-throttles`,
        alarmDescription: `DynamoDB table ${key}: throttled reads or writes`,
        metric: throttles,
        threshold: thresholds.dynamoThrottleEvents,
        evaluationPeriods: 1,
      });
    }

    if (props.dashboard) {
      const dashboard = new Dashboard(this, 'Dashboard', { dashboardName: prefix });
      dashboard.addWidgets(
        new TextWidget({ markdown: `# ${prefix}`, width: 24, height: 1 }),
        new GraphWidget({ title: 'API requests', left: [requests], right: [serverErrorRate], width: 8 }),
        new GraphWidget({
          title: 'API latency',
          left: [
            props.stage.metricLatency({ statistic: 'p50' }),
            props.stage.metricLatency({ statistic: 'p99' }),
          ],
          width: 8,
        }),
        new GraphWidget({
          title: 'API 4xx / 429',
          left: [props.stage.metricClientError({ period: FIVE_MINUTES, statistic: 'Sum' }), rateLimited],
          width: 8,
        }),
        new GraphWidget({
          title: 'Lambda errors',
          left: props.functions.map(({ name, fn }) => fn.metricErrors({ label: name, statistic: 'Sum' })),
          width: 8,
        }),
        new GraphWidget({
          title: 'Lambda p99 duration (ms)',
          left: props.functions.map(({ name, fn }) => fn.metricDuration({ label: name, statistic: 'p99' })),
          width: 8,
        }),
        new GraphWidget({ title: 'DynamoDB throttle events', left: throttleMetrics, width: 8 }),
        new GraphWidget({ title: 'Refusals and disputes', left: securityMetrics, width: 8 }),
      );
    }
  }

  /**
   * Spikes of refusals: key guessing or a leaked key used from elsewhere (401, 403), token or private
   * key probing (DECRYPTION_ERROR), token hoarding or user enumeration (GRANT_ERROR), and any
   * registration dispute (a 409 from register: a card claimed by two issuers). 401 and 403 come from
   * the access log, which also has the ones API Gateway answers itself (the authorizer, the usage
   * plans); the rest are counts the functions publish (lib/kernel/telemetry.ts, EMF): the error
   * codes counted by the error envelope whichever endpoint answers, the others by their use cases.
   * One metric each for every function at once, so no function's log needs a filter of its own.
   */
  private securityAlarms(props: MonitoringProps): IMetric[] {
    const prefix = props.resourcePrefix;
    const limits = props.security;
    const fromAccessLog = [
      {
        id: 'Unauthorized',
        alarmName: `${prefix}-api-401`,
        metricName: `${prefix}-unauthorized`,
        description: 'requests answered 401 (missing, unknown or revoked API keys)',
        status: '401',
        threshold: limits.unauthorized,
      },
      {
        id: 'Forbidden',
        alarmName: `${prefix}-api-403`,
        metricName: `${prefix}-forbidden`,
        description: 'requests answered 403 (wrong role, foreign resources, refused decryptions)',
        status: '403',
        threshold: limits.forbidden,
      },
    ].map(({ id, alarmName, metricName, description, status, threshold }) => {
      new MetricFilter(this, `${id}Filter0`, {
        logGroup: props.accessLogGroup,
        filterPattern: FilterPattern.stringValue('$.status', '=', status),
        metricNamespace: METRIC_NAMESPACE,
        metricName,
        metricValue: '1',
      });
      const metric = new Metric({
        namespace: METRIC_NAMESPACE,
        metricName,
        period: FIVE_MINUTES,
        statistic: 'Sum',
      });
      return this.countAlarm(id, alarmName, description, threshold, metric);
    });
    const counted = (
      [
        {
          id: 'DecryptionErrors',
          alarmName: `${prefix}-decryption-errors`,
          description: 'DECRYPTION_ERROR answers (bad tokens or private keys, foreign or escrowed receipts)',
          threshold: limits.decryptionErrors,
          metricName: 'DecryptionErrorAnswers',
        },
        {
          id: 'GrantErrors',
          alarmName: `${prefix}-grant-errors`,
          description: 'GRANT_ERROR answers (token limit reached, unknown or foreign users)',
          threshold: limits.grantErrors,
          metricName: 'GrantErrorAnswers',
        },
        {
          id: 'RegisterConflicts',
          alarmName: `${prefix}-register-conflicts`,
          description: 'registrations answered 409 (a card already registered, maybe by another issuer)',
          threshold: limits.registerConflicts,
          metricName: 'RegisterConflicts',
        },
        {
          id: 'ReRegistrations',
          alarmName: `${prefix}-re-registrations`,
          description:
            'cards registered again by the client that erased their user 30 days or less before (claim allowance grinding, or a cardholder back)',
          threshold: limits.reRegistrations,
          metricName: 'ReRegistrations',
        },
        {
          id: 'RecipientSealFailures',
          alarmName: `${prefix}-recipient-seal-failures`,
          description:
            "receipts escrowed because their registered recipient's stored key could not be sealed to",
          threshold: thresholds.recipientSealFailures,
          metricName: 'RecipientSealFailures',
        },
        {
          id: 'RefundCurrencyMismatches',
          alarmName: `${prefix}-refund-currency-mismatches`,
          description: "gateway refund events refused because their currency is not their payment's",
          threshold: thresholds.refundCurrencyMismatches,
          metricName: 'RefundCurrencyMismatches',
        },
      ] satisfies { metricName: MetricName; [field: string]: unknown }[]
    ).map(({ id, alarmName, description, threshold, metricName }) =>
      this.countAlarm(id, alarmName, description, threshold, this.serviceCount(props, metricName)),
    );
    return [...fromAccessLog, ...counted];
  }

  /**
   * One alarm per watched count; a label would turn a plain metric's alarm into a metric-math alarm,
   * so the dashboard gets the labelled copy.
   */
  private countAlarm(
    id: string,
    alarmName: string,
    description: string,
    threshold: number,
    metric: Metric,
  ): IMetric {
    this.alarm(id, {
      alarmName,
      alarmDescription: `At least ${threshold} ${description} in five minutes`,
      metric,
      threshold,
      evaluationPeriods: 1,
    });
    return metric.with({ label: id });
  }

  /**
   * Lambda's own errors (crashes and timeouts, which no code of ours can count) and p99 durations,
   * read per function and summed (errors) or maxed (durations) in metric-math alarms of at most ten
   * functions each, CloudWatch's limit: a function fires its group's alarm exactly when it would have
   * fired an alarm of its own. Durations are grouped by timeout, so that one threshold fits the group.
   * Missing points (a function not invoked) count as 0, so one idle function hides no other's.
   */
  private functionAlarms(prefix: string, functions: readonly MonitoredFunction[]): void {
    const names = (group: readonly MonitoredFunction[]) => group.map(({ name }) => name).join(', ');
    chunks(functions, METRICS_PER_ALARM).forEach((group, index) => {
      this.alarm(`LambdaErrors${index + 1}`, {
        alarmName: `${prefix}-lambda-errors-${index + 1}`,
        alarmDescription: `Unhandled errors or timeouts (at least ${thresholds.lambdaErrors} in five minutes) in one of: ${names(group)}`,
        metric: new MathExpression({
          expression: 'SUM(FILL(METRICS(), 0))',
          usingMetrics: Object.fromEntries(
            group.map(({ fn }, at) => [
              `e${at}`,
              fn.metricErrors({ period: FIVE_MINUTES, statistic: 'Sum' }),
            ]),
          ),
          period: FIVE_MINUTES,
        }),
        threshold: thresholds.lambdaErrors,
        evaluationPeriods: 1,
      });
    });
    const timeouts = [...new Set(functions.map(({ timeoutSeconds }) => timeoutSeconds))].sort(
      (a, b) => a - b,
    );
    for (const timeoutSeconds of timeouts) {
      const sameTimeout = functions.filter((monitored) => monitored.timeoutSeconds === timeoutSeconds);
      chunks(sameTimeout, METRICS_PER_ALARM).forEach((group, index) => {
        this.alarm(`LambdaDuration${timeoutSeconds}s${index + 1}`, {
          alarmName: `${prefix}-lambda-duration-p99-${timeoutSeconds}s-${index + 1}`,
          alarmDescription: `p99 duration above ${thresholds.durationShareOfTimeout * 100}% of the ${timeoutSeconds} s timeout in one of: ${names(group)}`,
          metric: new MathExpression({
            expression: 'MAX(FILL(METRICS(), 0))',
            usingMetrics: Object.fromEntries(
              group.map(({ fn }, at) => [
                `d${at}`,
                fn.metricDuration({ period: FIVE_MINUTES, statistic: 'p99' }),
              ]),
            ),
            period: FIVE_MINUTES,
          }),
          threshold: Math.round(timeoutSeconds * 1000 * thresholds.durationShareOfTimeout),
          evaluationPeriods: 3,
        });
      });
    }
  }

  /**
   * A count the functions make (lib/kernel/telemetry.ts), as EMF publishes it in the stage's
   * namespace: the service dimension alone, which a count with dimensions is published under too.
   */
  private serviceCount(props: MonitoringProps, metricName: MetricName): Metric {
    return new Metric({
      namespace: props.metricNamespace,
      metricName,
      dimensionsMap: { service: 'receipt-service' },
      period: FIVE_MINUTES,
      statistic: 'Sum',
    });
  }

  /**
   * A delivery given up (its schedule spent over 27 h, or its URL refused at delivery) is a receiver
   * that lost an event; a message in the dead-letter queue is a stream batch no delivery was made of.
   * Both need a person: the deliveries API retries the first, the queue's position replays the second.
   */
  private webhookAlarms(
    props: MonitoringProps,
    { deadLetterQueue, deliveryDeadLetterQueue }: NonNullable<MonitoringProps['webhooks']>,
  ): void {
    const prefix = props.resourcePrefix;
    if (deliveryDeadLetterQueue) {
      this.alarm('WebhookDeliveryDeadLetters', {
        alarmName: `${prefix}-webhook-delivery-dlq`,
        alarmDescription:
          'Queued webhook attempts the deliverer could not record, five receives over, still in the dead-letter queue ' +
          '(the deliverer consumes it and records each delivery due within seconds: a message it cannot record ' +
          'either, because DynamoDB is still unreachable, stays, and is lost after 14 days)',
        // Visible and in flight together: the deliverer keeps receiving a message it cannot record, so
        // such a message spends most of its time in flight (180 s each receive) and is rarely visible.
        metric: new MathExpression({
          expression: 'visible + inFlight',
          label: 'Messages in the delivery dead-letter queue (visible or in flight)',
          period: FIVE_MINUTES,
          usingMetrics: {
            visible: deliveryDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
              period: FIVE_MINUTES,
              statistic: 'Maximum',
            }),
            inFlight: deliveryDeadLetterQueue.metricApproximateNumberOfMessagesNotVisible({
              period: FIVE_MINUTES,
              statistic: 'Maximum',
            }),
          },
        }),
        threshold: 1,
        evaluationPeriods: 1,
      });
    }
    this.alarm('WebhookDeliveriesFailed', {
      alarmName: `${prefix}-webhook-deliveries-failed`,
      alarmDescription: 'Webhook deliveries marked failed after their last attempt',
      // The count lib/webhooks/send.ts makes (EMF, the service dimension alone).
      metric: this.serviceCount(props, 'WebhookDeliveriesFailed'),
      threshold: 1,
      evaluationPeriods: 1,
    });
    this.alarm('WebhookDispatchDeadLetters', {
      alarmName: `${prefix}-webhook-dispatch-dlq`,
      alarmDescription:
        'Receipts stream batches the webhook dispatcher gave up on (dead-letter queue not empty)',
      metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: FIVE_MINUTES,
        statistic: 'Maximum',
      }),
      threshold: 1,
      evaluationPeriods: 1,
    });
  }

  private alarm(
    id: string,
    options: {
      alarmName: string;
      alarmDescription: string;
      metric: IMetric | Metric;
      threshold: number;
      evaluationPeriods: number;
      datapointsToAlarm?: number;
    },
  ): void {
    const alarm = new Alarm(this, id, {
      ...options,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      // No traffic is not an incident.
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (this.topic) alarm.addAlarmAction(new SnsAction(this.topic));
    this.alarms.push(alarm);
  }
}
