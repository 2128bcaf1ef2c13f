import { Duration, Validations } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { EventSourceMapping, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { deliveryQueue } from '../functions/webhooks/webhook-deliver/function.js';
import { dispatchStream } from '../functions/webhooks/webhook-dispatch/function.js';
import { dynamoViaService } from './data-tables.js';
import type { ServiceFunction } from './service-function.js';

export interface WebhookDeliveryProps {
  prefix: string;
  /** The receipts table, with its stream (lib/kernel/tables.ts). */
  receipts: Table;
  /** The key the receipts table, and so its stream, is encrypted under. */
  receiptsKey: IKey;
  dispatcher: ServiceFunction;
  sweeper: ServiceFunction;
  /** The delivery queue's consumer: makes the attempts. */
  deliverer: ServiceFunction;
}

/**
 * Webhook delivery on managed services: the receipts stream drives the dispatcher through a Lambda
 * event source mapping (a batch that keeps failing is halved, retried, and finally recorded in a
 * dead-letter queue), and an EventBridge schedule runs the sweeper, which queues the retries that
 * are due. Neither makes an attempt: both send it to an SQS FIFO queue whose message group is the
 * webhook, which SQS hands out one group's message at a time to the deliverer (one message per
 * invocation), so a receiver that hangs holds back only its own webhook's deliveries. No process of
 * ours waits between attempts: the schedule lives in the deliveries table.
 */
export class WebhookDelivery extends Construct {
  readonly deadLetterQueue: Queue;
  readonly mapping: EventSourceMapping;
  readonly schedule: Rule;
  /** The per-webhook queue of attempts (FIFO, grouped by webhookId). */
  readonly deliveryQueue: Queue;
  /** Messages the deliverer could not record an attempt for, five times over. */
  readonly deliveryDeadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: WebhookDeliveryProps) {
    super(scope, id);
    const streamArn = props.receipts.tableStreamArn;
    if (!streamArn) throw new Error('The receipts table has no stream: lib/kernel/tables.ts must declare it');

    // What lands here is a batch's stream position (not its records): enough to replay it by hand.
    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      queueName: `${props.prefix}-webhook-dispatch-dlq`,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    Validations.of(this.deadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself the dead-letter destination of the receipts stream mapping: it receives the ' +
        'positions of stream batches the dispatcher could not process, and an alarm fires on its first message.',
    });

    this.mapping = new EventSourceMapping(this, 'ReceiptsStream', {
      target: props.dispatcher.function,
      eventSourceArn: streamArn,
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: dispatchStream.batchSize,
      parallelizationFactor: dispatchStream.parallelizationFactor,
      bisectBatchOnError: true,
      retryAttempts: dispatchStream.retryAttempts,
      maxRecordAge: Duration.hours(dispatchStream.maxRecordAgeHours),
      reportBatchItemFailures: true,
      onFailure: new SqsDlq(this.deadLetterQueue),
    });
    // The dispatcher alone reads the stream: the calls Lambda's poller makes, on this stream only.
    props.dispatcher.role.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: [
          'dynamodb:DescribeStream',
          'dynamodb:GetRecords',
          'dynamodb:GetShardIterator',
          'dynamodb:ListStreams',
        ],
        resources: [streamArn],
      }),
    );
    // Stream records are encrypted under the table's key; DynamoDB decrypts them for the reader.
    props.dispatcher.role.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['kms:Decrypt', 'kms:DescribeKey'],
        resources: [props.receiptsKey.keyArn],
        conditions: dynamoViaService(),
      }),
    );
    // The mapping checks at creation that the role can read the stream.
    this.mapping.node.addDependency(props.dispatcher.role);

    // FIFO, for its message groups: one webhook's messages are handed out one at a time, and the
    // groups apart. High-throughput mode: the 300 messages a second of a FIFO queue apply per group.
    this.deliveryDeadLetterQueue = new Queue(this, 'DeliveryDeadLetterQueue', {
      queueName: `${props.prefix}-${deliveryQueue.deadLetterQueueName}`,
      fifo: true,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
      // Consumed by the deliverer too: no message is handed out again while its consumer may live.
      visibilityTimeout: Duration.seconds(deliveryQueue.visibilityTimeoutSeconds),
    });
    Validations.of(this.deliveryDeadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself the dead-letter queue of the webhook delivery queue: its messages name deliveries ' +
        'whose attempt could not be recorded, and the deliverer consumes it, recording each delivery due for the ' +
        'sweeper (a message it cannot record stays here for 14 days); an alarm fires on its first message.',
    });
    this.deliveryQueue = new Queue(this, 'DeliveryQueue', {
      queueName: `${props.prefix}-webhook-deliveries.fifo`,
      fifo: true,
      contentBasedDeduplication: false,
      deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
      fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(deliveryQueue.visibilityTimeoutSeconds),
      // A first attempt's message is its delivery until the outcome is recorded: kept as long as SQS can.
      retentionPeriod: Duration.days(14),
      deadLetterQueue: {
        queue: this.deliveryDeadLetterQueue,
        maxReceiveCount: deliveryQueue.maxReceiveCount,
      },
    });
    props.deliverer.function.addEventSource(
      new SqsEventSource(this.deliveryQueue, {
        batchSize: deliveryQueue.batchSize,
        reportBatchItemFailures: true,
      }),
    );
    // A first attempt's delivery lives only in its message until its outcome is written: one given up
    // on is recorded due from here, for the sweeper (lib/webhooks/queue.ts, recordDeadLettered).
    props.deliverer.function.addEventSource(
      new SqsEventSource(this.deliveryDeadLetterQueue, {
        batchSize: deliveryQueue.batchSize,
        reportBatchItemFailures: true,
      }),
    );
    for (const sender of [props.dispatcher, props.sweeper]) {
      this.deliveryQueue.grantSendMessages(sender.role);
      sender.function.addEnvironment('WEBHOOK_QUEUE_URL', this.deliveryQueue.queueUrl);
    }

    this.schedule = new Rule(this, 'SweepSchedule', {
      ruleName: `${props.prefix}-webhook-sweep`,
      description: 'Queues the webhook deliveries whose next attempt is due',
      schedule: Schedule.rate(Duration.minutes(1)),
      // A missed run is made up by the next one a minute later.
      targets: [new LambdaFunction(props.sweeper.function, { retryAttempts: 0 })],
    });
  }
}
