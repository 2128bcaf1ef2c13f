import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Template } from 'aws-cdk-lib/assertions';
import { tableDefinitions, tableKeys, type TableDefinition } from '../../lib/tables.js';
import { routes } from '../../lib/routes.js';
import { resourcesOf, synth, type Resource } from './support.js';

let template: Template;

beforeAll(() => {
  ({ template } = synth());
});

const tableNamed = (name: string): Resource => {
  const found = Object.values(resourcesOf(template, 'AWS::DynamoDB::Table')).find(
    (table) => table.Properties.TableName === `receipt-service-test-${name}`,
  );
  if (!found) throw new Error(`No table ${name}`);
  return found;
};

describe('DynamoDB tables', () => {
  it('creates every table in lib/tables.ts, and only those', () => {
    expect(Object.keys(resourcesOf(template, 'AWS::DynamoDB::Table'))).toHaveLength(tableKeys.length);
  });

  it.each(tableKeys.map((key) => [key, tableDefinitions[key] as TableDefinition] as const))(
    '%s: keys, on-demand, encryption, TTL, recovery and retention from its definition',
    (_key, definition) => {
      const table = tableNamed(definition.name);
      const properties = table.Properties;
      expect(properties.BillingMode).toBe('PAY_PER_REQUEST');
      expect(properties.SSESpecification).toEqual({ SSEEnabled: true });
      expect(properties.KeySchema).toEqual([
        { AttributeName: definition.partitionKey, KeyType: 'HASH' },
        ...(definition.sortKey ? [{ AttributeName: definition.sortKey, KeyType: 'RANGE' }] : []),
      ]);

      if (definition.ttlAttribute) {
        expect(properties.TimeToLiveSpecification).toEqual({
          AttributeName: definition.ttlAttribute,
          Enabled: true,
        });
      } else {
        expect(properties.TimeToLiveSpecification).toBeUndefined();
      }

      expect(properties.PointInTimeRecoverySpecification).toEqual({
        PointInTimeRecoveryEnabled: definition.durable,
      });
      expect(properties.DeletionProtectionEnabled).toBe(definition.durable);
      expect(table.DeletionPolicy).toBe(definition.durable ? 'Retain' : 'Delete');

      const indexes =
        (properties.GlobalSecondaryIndexes as { IndexName: string; KeySchema: unknown }[] | undefined) ?? [];
      expect(indexes.map((index) => index.IndexName)).toEqual(
        (definition.indexes ?? []).map((index) => index.name),
      );
      for (const index of definition.indexes ?? []) {
        expect(indexes.find((candidate) => candidate.IndexName === index.name)?.KeySchema).toEqual([
          { AttributeName: index.partitionKey, KeyType: 'HASH' },
        ]);
      }
    },
  );

  it('keeps the tokens, counters and idempotency records out of point-in-time recovery', () => {
    for (const name of ['access-tokens', 'rate-limits', 'idempotency']) {
      expect(tableNamed(name).Properties.PointInTimeRecoverySpecification).toEqual({
        PointInTimeRecoveryEnabled: false,
      });
    }
    for (const name of ['api-keys', 'key-pairs', 'users', 'receipts', 'transactions', 'audit']) {
      expect(tableNamed(name).Properties.PointInTimeRecoverySpecification).toEqual({
        PointInTimeRecoveryEnabled: true,
      });
    }
  });
});

describe('escrow key', () => {
  it('is an RSA-2048 encryption key that outlives the stack', () => {
    const keys = Object.values(resourcesOf(template, 'AWS::KMS::Key'));
    expect(keys).toHaveLength(1);
    expect(keys[0]?.Properties).toMatchObject({ KeySpec: 'RSA_2048', KeyUsage: 'ENCRYPT_DECRYPT' });
    expect(keys[0]?.DeletionPolicy).toBe('Retain');
    template.hasResourceProperties('AWS::KMS::Alias', { AliasName: 'alias/receipt-service-test-escrow' });
  });
});

describe('operations', () => {
  const alarms = () => Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'));
  const alarmNamed = (name: string) => alarms().find((alarm) => alarm.Properties.AlarmName === name);

  it('alarms on API 5xx rate and 429s', () => {
    const serverErrors = alarmNamed('receipt-service-test-api-5xx-rate');
    expect(JSON.stringify(serverErrors?.Properties.Metrics)).toContain('5XXError');
    expect(serverErrors?.Properties.Threshold).toBe(1);
    const rateLimited = alarmNamed('receipt-service-test-api-429');
    expect(rateLimited?.Properties).toMatchObject({
      MetricName: 'receipt-service-test-rate-limited',
      Namespace: 'ReceiptService',
    });
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      FilterPattern: '{ $.status = "429" }',
      MetricTransformations: [{ MetricName: 'receipt-service-test-rate-limited', MetricValue: '1' }],
    });
  });

  it('alarms on each function: errors, and p99 duration near its timeout', () => {
    for (const route of routes) {
      expect(alarmNamed(`receipt-service-test-${route.name}-errors`)?.Properties).toMatchObject({
        MetricName: 'Errors',
        Threshold: 1,
      });
      expect(alarmNamed(`receipt-service-test-${route.name}-duration-p99`)?.Properties).toMatchObject({
        MetricName: 'Duration',
        ExtendedStatistic: 'p99',
        Threshold: (route.timeoutSeconds ?? 10) * 800,
      });
    }
  });

  it('alarms on throttling of each table', () => {
    for (const key of tableKeys) {
      const alarm = alarmNamed(`receipt-service-test-ddb-${key}-throttles`);
      expect(JSON.stringify(alarm?.Properties.Metrics)).toContain('ReadThrottleEvents');
      expect(JSON.stringify(alarm?.Properties.Metrics)).toContain('WriteThrottleEvents');
    }
  });

  it('sends no notifications unless an address is configured', () => {
    expect(Object.keys(resourcesOf(template, 'AWS::SNS::Topic'))).toHaveLength(0);
    for (const alarm of alarms()) expect(alarm.Properties.AlarmActions).toBeUndefined();
  });

  it('e-mails every alarm to the configured address over a TLS-only topic', () => {
    const { template: withEmail } = synth({ context: { alarmEmail: 'ops@example.com' } });
    withEmail.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
    });
    withEmail.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: [{ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }],
      },
    });
    const [topicId] = Object.keys(resourcesOf(withEmail, 'AWS::SNS::Topic'));
    for (const alarm of Object.values(resourcesOf(withEmail, 'AWS::CloudWatch::Alarm'))) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
    }
  });

  it('sets a retention on every log group', () => {
    for (const group of Object.values(resourcesOf(template, 'AWS::Logs::LogGroup'))) {
      expect(group.Properties.RetentionInDays).toBe(30);
    }
  });

  it('has a dashboard unless switched off', () => {
    expect(Object.keys(resourcesOf(template, 'AWS::CloudWatch::Dashboard'))).toHaveLength(1);
    const { template: without } = synth({ context: { dashboard: 'false' } });
    expect(Object.keys(resourcesOf(without, 'AWS::CloudWatch::Dashboard'))).toHaveLength(0);
  });
});
