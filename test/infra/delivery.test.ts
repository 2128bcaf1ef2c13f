import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Template } from 'aws-cdk-lib/assertions';
import { tableDefinitions } from '../../lib/kernel/tables.js';
import { dispatchStream } from '../../functions/webhooks/webhook-dispatch/function.js';
import { deliveryQueue } from '../../functions/webhooks/webhook-deliver/function.js';
import {
  asArray,
  functionByName,
  referencedId,
  resourcesOf,
  roleIdOf,
  sharedTemplate,
  statementsOfRole,
  type Resource,
  type Statement,
} from './support.js';

let template: Template;
let receiptsTableId: string;
let queueId: string;
let deliveryQueueId: string;
let deliveryDlqId: string;
let mapping: Resource;
let queueMapping: Resource;
let deadLetterMapping: Resource;

const tableIdNamed = (name: string): string => {
  const entry = Object.entries(resourcesOf(template, 'AWS::DynamoDB::Table')).find(
    ([, table]) => table.Properties.TableName === `receipt-service-test-${name}`,
  );
  if (!entry) throw new Error(`no table ${name}`);
  return entry[0];
};
const fnId = (name: string) => functionByName(template, `receipt-service-test-${name}`)[0];
const roleStatements = (name: string): Statement[] =>
  statementsOfRole(template, roleIdOf(functionByName(template, `receipt-service-test-${name}`)[1]));
const actionsOf = (statements: Statement[]): string[] =>
  [...new Set(statements.flatMap((statement) => asArray(statement.Action)))].sort();
/** Statements naming the resource (a table, its indexes, its stream, a queue) by its logical id. */
const on = (statements: Statement[], resourceId: string, match: (text: string) => boolean = () => true) =>
  statements.filter((statement) =>
    asArray(statement.Resource).some(
      (resource) => JSON.stringify(resource).includes(`"${resourceId}"`) && match(JSON.stringify(resource)),
    ),
  );

beforeAll(() => {
  template = sharedTemplate();
  receiptsTableId = tableIdNamed(tableDefinitions.receipts.name);
  const queueNamed = (name: string) =>
    Object.entries(resourcesOf(template, 'AWS::SQS::Queue')).find(
      ([, queue]) => queue.Properties.QueueName === `receipt-service-test-${name}`,
    )?.[0] as string;
  queueId = queueNamed('webhook-dispatch-dlq');
  deliveryQueueId = queueNamed('webhook-deliveries.fifo');
  deliveryDlqId = queueNamed('webhook-deliveries-dlq.fifo');
  const mappings = Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'));
  mapping = mappings.find((each) => JSON.stringify(each.Properties.EventSourceArn).includes('StreamArn'))!;
  const fromQueue = (id: string) =>
    mappings.find(
      (each) =>
        JSON.stringify(each.Properties.EventSourceArn) === JSON.stringify({ 'Fn::GetAtt': [id, 'Arn'] }),
    )!;
  queueMapping = fromQueue(deliveryQueueId);
  deadLetterMapping = fromQueue(deliveryDlqId);
});

describe('the receipts stream', () => {
  it('carries new and old images', () => {
    expect(
      resourcesOf(template, 'AWS::DynamoDB::Table')[receiptsTableId]?.Properties.StreamSpecification,
    ).toEqual({
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    });
  });

  it('drives the dispatcher: bisected, retried, partial batch failures, then the dead-letter queue', () => {
    // This one, the delivery queue's and its dead-letter queue's.
    expect(Object.keys(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'))).toHaveLength(3);
    expect(referencedId(mapping.Properties.FunctionName)).toBe(fnId('webhook-dispatch'));
    expect(mapping.Properties.EventSourceArn).toEqual({ 'Fn::GetAtt': [receiptsTableId, 'StreamArn'] });
    expect(mapping.Properties).toMatchObject({
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: dispatchStream.batchSize,
      ParallelizationFactor: dispatchStream.parallelizationFactor,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: dispatchStream.retryAttempts,
      MaximumRecordAgeInSeconds: dispatchStream.maxRecordAgeHours * 3_600,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    const destination = (mapping.Properties.DestinationConfig as { OnFailure: { Destination: unknown } })
      .OnFailure.Destination;
    expect(referencedId(destination)).toBe(queueId);
  });
});

describe('the delivery queue (issue 20: deliveries isolated per destination)', () => {
  const queues = () => resourcesOf(template, 'AWS::SQS::Queue');

  it('is FIFO, one message group per webhook with its own throughput, deduplicated per group, with a FIFO dead-letter queue', () => {
    expect(queues()[deliveryQueueId]?.Properties).toMatchObject({
      FifoQueue: true,
      ContentBasedDeduplication: false,
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
      SqsManagedSseEnabled: true,
      VisibilityTimeout: deliveryQueue.visibilityTimeoutSeconds,
      RedrivePolicy: {
        deadLetterTargetArn: { 'Fn::GetAtt': [deliveryDlqId, 'Arn'] },
        maxReceiveCount: deliveryQueue.maxReceiveCount,
      },
    });
    expect(queues()[deliveryDlqId]?.Properties).toMatchObject({
      FifoQueue: true,
      SqsManagedSseEnabled: true,
      VisibilityTimeout: deliveryQueue.visibilityTimeoutSeconds,
    });
  });

  it("keeps a message, which is a first attempt's only record until its outcome, 14 days; and hands it out again only after the deliverer's timeout", () => {
    expect(queues()[deliveryQueueId]?.Properties.MessageRetentionPeriod).toBe(14 * 24 * 3_600);
    const deliverer = resourcesOf(template, 'AWS::Lambda::Function')[fnId('webhook-deliver')!];
    expect(deliverer?.Properties.Timeout).toBeLessThan(deliveryQueue.visibilityTimeoutSeconds);
  });

  it('consumes the dead-letter queue too, by the deliverer, which tells its messages apart by the queue name', () => {
    expect(referencedId(deadLetterMapping.Properties.FunctionName)).toBe(fnId('webhook-deliver'));
    expect(deadLetterMapping.Properties).toMatchObject({
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(queues()[deliveryDlqId]?.Properties.QueueName).toBe(
      `receipt-service-test-${deliveryQueue.deadLetterQueueName}`,
    );
    expect(actionsOf(on(roleStatements('webhook-deliver'), deliveryDlqId))).toEqual([
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
    ]);
  });

  it('is consumed by the deliverer alone, one message per invocation, reporting partial failures', () => {
    expect(referencedId(queueMapping.Properties.FunctionName)).toBe(fnId('webhook-deliver'));
    expect(queueMapping.Properties).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [deliveryQueueId, 'Arn'] },
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(actionsOf(on(roleStatements('webhook-deliver'), deliveryQueueId))).toEqual([
      'sqs:ChangeMessageVisibility',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:ReceiveMessage',
    ]);
  });

  it('is sent to by the dispatcher and the sweeper only, which are told its URL', () => {
    for (const name of ['webhook-dispatch', 'webhook-sweep']) {
      expect(actionsOf(on(roleStatements(name), deliveryQueueId))).toEqual([
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:SendMessage',
      ]);
      const environment = functionByName(template, `receipt-service-test-${name}`)[1].Properties
        .Environment as { Variables: Record<string, unknown> };
      expect(referencedId(environment.Variables.WEBHOOK_QUEUE_URL)).toBe(deliveryQueueId);
    }
    for (const name of ['encrypt-receipt', 'retry-webhook-delivery', 'list-webhook-deliveries'])
      expect(on(roleStatements(name), deliveryQueueId)).toEqual([]);
  });
});

describe('the dead-letter queue', () => {
  it('is encrypted, refusing plain-text transport, keeping messages 14 days', () => {
    const queues = resourcesOf(template, 'AWS::SQS::Queue');
    // The stream's, and the delivery queue and its own.
    expect(Object.keys(queues)).toHaveLength(3);
    expect(queues[queueId]?.Properties).toMatchObject({
      QueueName: 'receipt-service-test-webhook-dispatch-dlq',
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 24 * 3_600,
    });
    const policies = Object.values(resourcesOf(template, 'AWS::SQS::QueuePolicy'));
    const denies = policies.flatMap(
      (policy) =>
        (policy.Properties.PolicyDocument as { Statement: (Statement & { Condition?: unknown })[] })
          .Statement,
    );
    expect(denies).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
  });

  it('may only be written to, and only by the dispatcher', () => {
    const dispatcherOnQueue = on(roleStatements('webhook-dispatch'), queueId);
    expect(actionsOf(dispatcherOnQueue)).toEqual([
      'sqs:GetQueueAttributes',
      'sqs:GetQueueUrl',
      'sqs:SendMessage',
    ]);
    for (const name of ['webhook-sweep', 'webhook-deliver', 'encrypt-receipt', 'retry-webhook-delivery'])
      expect(on(roleStatements(name), queueId)).toEqual([]);
  });
});

describe('the sweeper schedule', () => {
  it('runs the sweeper every minute without retrying a missed run', () => {
    const rules = Object.values(resourcesOf(template, 'AWS::Events::Rule'));
    expect(rules).toHaveLength(1);
    const [rule] = rules;
    expect(rule!.Properties.ScheduleExpression).toBe('rate(1 minute)');
    const [target, ...others] = rule!.Properties.Targets as { Arn: unknown; RetryPolicy?: unknown }[];
    expect(others).toEqual([]);
    expect(referencedId(target!.Arn)).toBe(fnId('webhook-sweep'));
    expect(target!.RetryPolicy).toEqual({ MaximumRetryAttempts: 0 });
    const permissions = Object.values(resourcesOf(template, 'AWS::Lambda::Permission')).filter(
      (permission) => permission.Properties.Principal === 'events.amazonaws.com',
    );
    expect(permissions.map((permission) => referencedId(permission.Properties.FunctionName))).toEqual([
      fnId('webhook-sweep'),
    ]);
  });
});

describe('least privilege', () => {
  const deliveriesId = () => tableIdNamed(tableDefinitions.webhookDeliveries.name);
  const webhooksId = () => tableIdNamed('webhooks');
  const isStream = (text: string) => text.includes('StreamArn');

  it('lets only the dispatcher read the receipts stream, with the four stream calls', () => {
    const dispatcher = on(roleStatements('webhook-dispatch'), receiptsTableId, isStream);
    expect(actionsOf(dispatcher)).toEqual([
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
    ]);
    const functions = Object.values(resourcesOf(template, 'AWS::Lambda::Function')).map(
      (fn) => fn.Properties.FunctionName as string,
    );
    for (const name of functions.filter((fn) => !fn.endsWith('-webhook-dispatch')))
      expect([
        name,
        on(roleStatements(name.replace('receipt-service-test-', '')), receiptsTableId, isStream),
      ]).toEqual([name, []]);
  });

  it('gives the dispatcher nothing on the receipts table itself, and no wildcard or Scan anywhere', () => {
    for (const name of [
      'webhook-dispatch',
      'webhook-sweep',
      'webhook-deliver',
      'list-webhook-deliveries',
      'retry-webhook-delivery',
    ]) {
      const statements = roleStatements(name);
      if (name === 'webhook-dispatch')
        expect(on(statements, receiptsTableId, (text) => !isStream(text))).toEqual([]);
      const actions = actionsOf(statements);
      expect(actions.filter((action) => action.endsWith('*') || action === 'dynamodb:Scan')).toEqual([]);
      for (const statement of statements)
        if (asArray(statement.Resource).includes('*'))
          expect(asArray(statement.Action).sort()).toEqual([
            'xray:PutTelemetryRecords',
            'xray:PutTraceSegments',
          ]);
    }
  });

  it('grants the deliveries table by need: the sweeper and deliverer write, the listing only reads, the dispatcher nothing', () => {
    const deliveries = deliveriesId();
    const tableOnly = (text: string) => !text.includes('/index/');
    // It only queues first attempts, each message carrying its delivery.
    expect(on(roleStatements('webhook-dispatch'), deliveries)).toEqual([]);
    for (const name of ['webhook-sweep', 'webhook-deliver'])
      expect(actionsOf(on(roleStatements(name), deliveries, tableOnly))).toEqual([
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
      ]);
    expect(actionsOf(on(roleStatements('list-webhook-deliveries'), deliveries, tableOnly))).toEqual([
      'dynamodb:GetItem',
    ]);
    expect(
      actionsOf(
        on(roleStatements('list-webhook-deliveries'), deliveries, (text) => text.includes('/index/')),
      ),
    ).toEqual(['dynamodb:Query']);
    // The webhooks are read, never written, by delivery.
    for (const name of [
      'webhook-dispatch',
      'webhook-sweep',
      'webhook-deliver',
      'list-webhook-deliveries',
      'retry-webhook-delivery',
    ])
      expect(
        actionsOf(on(roleStatements(name), webhooksId())).filter((action) => !/GetItem|Query/.test(action)),
      ).toEqual([]);
    // The sweeper and the deliverer never look up users.
    for (const name of ['webhook-sweep', 'webhook-deliver'])
      expect(on(roleStatements(name), tableIdNamed('users'))).toEqual([]);
  });

  it("reads the webhooks' secrets through the tables' customer-managed key, by DynamoDB only", () => {
    const tableKeyId = Object.entries(resourcesOf(template, 'AWS::KMS::Key')).find(
      ([id, key]) => key.Properties.KeySpec === undefined && id.startsWith('Data'),
    )?.[0] as string;
    expect(
      resourcesOf(template, 'AWS::DynamoDB::Table')[webhooksId()]?.Properties.SSESpecification,
    ).toMatchObject({ SSEType: 'KMS', KMSMasterKeyId: { 'Fn::GetAtt': [tableKeyId, 'Arn'] } });
    for (const name of ['webhook-dispatch', 'webhook-sweep', 'webhook-deliver']) {
      const onKey = on(roleStatements(name), tableKeyId);
      expect(onKey).toHaveLength(1);
      // Both only read customer-keyed tables (webhooks, and users for the dispatcher): no encrypt rights.
      expect(actionsOf(onKey)).toEqual(['kms:Decrypt', 'kms:DescribeKey']);
      expect(JSON.stringify((onKey[0] as unknown as { Condition: unknown }).Condition)).toContain(
        'kms:ViaService',
      );
    }
  });
});

describe('alarms', () => {
  const alarms = () => Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'));

  it('fires on the first failed delivery', () => {
    const alarm = alarms().find((candidate) => candidate.Properties.MetricName === 'WebhookDeliveriesFailed');
    expect(alarm?.Properties).toMatchObject({
      AlarmName: 'receipt-service-test-webhook-deliveries-failed',
      // The stage's own namespace, where its functions publish (infra/settings.ts).
      Namespace: 'ReceiptService/test',
      Dimensions: [{ Name: 'service', Value: 'receipt-service' }],
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
  });

  it("fires on the first message in the dispatcher's dead-letter queue", () => {
    const alarm = alarms().find(
      (candidate) => candidate.Properties.AlarmName === 'receipt-service-test-webhook-dispatch-dlq',
    );
    expect(alarm?.Properties).toMatchObject({
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Namespace: 'AWS/SQS',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(JSON.stringify((alarm?.Properties.Dimensions as { Value: unknown }[])[0]?.Value)).toContain(
      `"${queueId}"`,
    );
  });

  it("counts the delivery dead-letter queue's messages in flight too: the deliverer keeps receiving one it cannot record", () => {
    const alarm = alarms().find(
      (candidate) => candidate.Properties.AlarmName === 'receipt-service-test-webhook-delivery-dlq',
    );
    expect(alarm?.Properties).toMatchObject({
      Threshold: 1,
      EvaluationPeriods: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    const metrics = alarm?.Properties.Metrics as {
      Id: string;
      Expression?: string;
      MetricStat?: {
        Metric: { MetricName: string; Namespace: string; Dimensions: { Value: unknown }[] };
        Stat: string;
      };
    }[];
    const expression = metrics.find((metric) => metric.Expression)!;
    const inputs = metrics.filter((metric) => metric.MetricStat);
    expect(
      inputs.map((metric) => [metric.MetricStat!.Metric.MetricName, metric.MetricStat!.Stat]).sort(),
    ).toEqual([
      ['ApproximateNumberOfMessagesNotVisible', 'Maximum'],
      ['ApproximateNumberOfMessagesVisible', 'Maximum'],
    ]);
    for (const input of inputs) {
      expect(input.MetricStat!.Metric.Namespace).toBe('AWS/SQS');
      expect(JSON.stringify(input.MetricStat!.Metric.Dimensions[0]?.Value)).toContain(`"${deliveryDlqId}"`);
      expect(expression.Expression).toContain(input.Id);
    }
    expect(expression.Expression).toMatch(/^\w+ \+ \w+$/);
  });

  it('watches the dispatcher, the sweeper and the deliverer for errors like every function', () => {
    const watched = alarms()
      .filter((alarm) => String(alarm.Properties.AlarmName).startsWith('receipt-service-test-lambda-errors-'))
      .map((alarm) => JSON.stringify(alarm.Properties.Metrics));
    for (const name of ['webhook-dispatch', 'webhook-sweep', 'webhook-deliver']) {
      expect([name, watched.filter((metrics) => metrics.includes(`"${fnId(name)}"`))]).toEqual([
        name,
        [expect.stringContaining('"MetricName":"Errors"')],
      ]);
    }
  });
});
