import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Template } from 'aws-cdk-lib/assertions';
import { tableDefinitions, tableKeys, type TableDefinition } from '../../lib/kernel/tables.js';
import { routes } from '../../functions/routes.js';
import { webhookDispatchFunction } from '../../functions/webhooks/webhook-dispatch/function.js';
import { webhookSweepFunction } from '../../functions/webhooks/webhook-sweep/function.js';
import { webhookDeliverFunction } from '../../functions/webhooks/webhook-deliver/function.js';
import {
  asArray,
  functionByName,
  referencedId,
  resourcesOf,
  roleIdOf,
  sharedTemplate,
  type Resource,
} from './support.js';
import { synthVariant } from './variants.js';

let template: Template;

beforeAll(() => {
  template = sharedTemplate();
});

interface KeyStatement {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Principal: { AWS: unknown };
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

const keyWith = (matches: (key: Resource) => boolean): [string, Resource] => {
  const found = Object.entries(resourcesOf(template, 'AWS::KMS::Key')).filter(([, key]) => matches(key));
  if (found.length !== 1) throw new Error(`Expected one such key, found ${found.length}`);
  return found[0] as [string, Resource];
};
const escrowKey = () => keyWith((key) => key.Properties.KeySpec === 'RSA_2048');
const tableKey = () =>
  keyWith(
    (key) => key.Properties.KeySpec === undefined && String(key.Properties.Description).includes('DynamoDB'),
  );
const policyOf = (key: Resource): KeyStatement[] =>
  (key.Properties.KeyPolicy as { Statement: KeyStatement[] }).Statement;

/** Whether an IAM action pattern (`kms:*`, `kms:Re*`) covers the action. */
const covers = (pattern: string, action: string): boolean =>
  pattern === '*' || pattern === action || (pattern.endsWith('*') && action.startsWith(pattern.slice(0, -1)));
const allows = (statement: KeyStatement, action: string): boolean =>
  statement.Effect === 'Allow' && asArray(statement.Action).some((pattern) => covers(pattern, action));
const isAccountRoot = (statement: KeyStatement): boolean =>
  JSON.stringify(statement.Principal).includes(':root');
const principalIds = (statements: KeyStatement[]): string[] =>
  statements.flatMap((statement) =>
    asArray(statement.Principal.AWS).map((p) => referencedId(p) ?? JSON.stringify(p)),
  );
const roleOf = (routeName: string): string =>
  roleIdOf(functionByName(template, `receipt-service-test-${routeName}`)[1]);

// What DynamoDB would use a key for, and what hands use on to someone else.
const keyUses = [
  'kms:Decrypt',
  'kms:Encrypt',
  'kms:ReEncryptFrom',
  'kms:ReEncryptTo',
  'kms:GenerateDataKey',
  'kms:CreateGrant',
] as const;
const customerKeyedTableNames = [
  'users',
  'receipts-sharded',
  'audit',
  'access-tokens',
  'webhooks',
  'evidence',
];

const tableNamed = (name: string): Resource => {
  const found = Object.values(resourcesOf(template, 'AWS::DynamoDB::Table')).find(
    (table) => table.Properties.TableName === `receipt-service-test-${name}`,
  );
  if (!found) throw new Error(`No table ${name}`);
  return found;
};

describe('DynamoDB tables', () => {
  it('creates every table in lib/kernel/tables.ts, and only those', () => {
    expect(Object.keys(resourcesOf(template, 'AWS::DynamoDB::Table'))).toHaveLength(tableKeys.length);
  });

  it.each(tableKeys.map((key) => [key, tableDefinitions[key] as TableDefinition] as const))(
    '%s: keys, on-demand, encryption, TTL, recovery and retention from its definition',
    (_key, definition) => {
      const table = tableNamed(definition.name);
      const properties = table.Properties;
      expect(properties.BillingMode).toBe('PAY_PER_REQUEST');
      // Tables holding card tags or webhook secrets under our own key; the rest under AWS's.
      expect(properties.SSESpecification).toEqual(
        customerKeyedTableNames.includes(definition.name)
          ? { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: { 'Fn::GetAtt': [tableKey()[0], 'Arn'] } }
          : { SSEEnabled: true },
      );
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
          ...(index.sortKey ? [{ AttributeName: index.sortKey, KeyType: 'RANGE' }] : []),
        ]);
      }
    },
  );

  it("spreads receipts over shards of their merchant client's partition, with indexes that hold keys only (issue 40)", () => {
    const receipts = tableNamed('receipts-sharded').Properties;
    expect(receipts.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'receiptId', KeyType: 'RANGE' },
    ]);
    const indexes = receipts.GlobalSecondaryIndexes as { IndexName: string; Projection: unknown }[];
    expect(indexes.map((index) => [index.IndexName, index.Projection])).toEqual([
      ['by-recipient-user', { ProjectionType: 'KEYS_ONLY' }],
      ['by-receipt-id', { ProjectionType: 'KEYS_ONLY' }],
    ]);
    expect(receipts.DeletionProtectionEnabled).toBe(true);
  });

  it('keeps the tokens, counters and idempotency records out of point-in-time recovery', () => {
    for (const name of ['access-tokens', 'rate-limits', 'idempotency']) {
      expect(tableNamed(name).Properties.PointInTimeRecoverySpecification).toEqual({
        PointInTimeRecoveryEnabled: false,
      });
    }
    for (const name of ['api-keys', 'key-pairs', 'users', 'receipts-sharded', 'transactions', 'audit']) {
      expect(tableNamed(name).Properties.PointInTimeRecoverySpecification).toEqual({
        PointInTimeRecoveryEnabled: true,
      });
    }
  });
});

describe('escrow key', () => {
  it('is an RSA-2048 encryption key that outlives the stack', () => {
    // The escrow key, the card-tag tables' key, the card-tag secret's key and the key log's signing key.
    expect(Object.keys(resourcesOf(template, 'AWS::KMS::Key'))).toHaveLength(4);
    const logKey = Object.values(resourcesOf(template, 'AWS::KMS::Key')).find(
      (candidate) => candidate.Properties.KeySpec === 'ECC_NIST_P256',
    );
    expect(logKey?.Properties).toMatchObject({ KeyUsage: 'SIGN_VERIFY' });
    expect(logKey?.DeletionPolicy).toBe('Retain');
    const [, key] = escrowKey();
    expect(key.Properties).toMatchObject({ KeySpec: 'RSA_2048', KeyUsage: 'ENCRYPT_DECRYPT' });
    expect(key.DeletionPolicy).toBe('Retain');
    template.hasResourceProperties('AWS::KMS::Alias', { AliasName: 'alias/receipt-service-test-escrow' });
  });

  it('lets the account administer it, but neither decrypt nor hand decryption on', () => {
    const policy = policyOf(escrowKey()[1]);
    const account = policy.filter(isAccountRoot);
    expect(account).toHaveLength(1);
    for (const action of keyUses)
      expect([action, allows(account[0] as KeyStatement, action)]).toEqual([action, false]);
    // Without these CloudFormation and the operators could lock the key out of any change.
    for (const action of [
      'kms:PutKeyPolicy',
      'kms:DescribeKey',
      'kms:EnableKey',
      'kms:DisableKey',
      'kms:ScheduleKeyDeletion',
      'kms:CancelKeyDeletion',
      'kms:TagResource',
      'kms:UntagResource',
      'kms:CreateAlias',
      'kms:RevokeGrant',
    ]) {
      expect([action, allows(account[0] as KeyStatement, action)]).toEqual([action, true]);
    }
  });

  it('names the roles that may decrypt: those of the routes that unwrap escrow, nobody else', () => {
    const decrypters = policyOf(escrowKey()[1]).filter((statement) => allows(statement, 'kms:Decrypt'));
    const unwrapping = routes
      .filter((route) => route.escrow === 'wrapAndUnwrap')
      .map((route) => roleOf(route.name));
    expect(unwrapping.length).toBeGreaterThan(0);
    expect(decrypters.length).toBeGreaterThan(0);
    expect(principalIds(decrypters).sort()).toEqual(unwrapping.sort());
    for (const statement of decrypters) {
      expect(asArray(statement.Action)).toEqual(['kms:Decrypt']);
      // Only the unwrap lib/crypto/escrow.ts makes.
      expect(statement.Condition).toEqual({
        StringEquals: { 'kms:EncryptionAlgorithm': 'RSAES_OAEP_SHA_256' },
      });
    }
  });

  it('lets every route that wraps for escrow read the public key', () => {
    const readers = policyOf(escrowKey()[1]).filter(
      (statement) => !isAccountRoot(statement) && allows(statement, 'kms:GetPublicKey'),
    );
    const escrowUsers = routes.filter((route) => route.escrow).map((route) => roleOf(route.name));
    expect(readers.length).toBeGreaterThan(0);
    expect(escrowUsers.length).toBeGreaterThan(0);
    expect(principalIds(readers).sort()).toEqual(escrowUsers.sort());
    for (const statement of readers)
      expect(asArray(statement.Action).sort()).toEqual(['kms:DescribeKey', 'kms:GetPublicKey']);
  });

  it('gives no other principal anything, and no role not on the list', () => {
    const named = new Set(routes.filter((route) => route.escrow).map((route) => roleOf(route.name)));
    expect(named.size).toBeGreaterThan(0);
    const statements = policyOf(escrowKey()[1]);
    expect(statements.filter((statement) => !isAccountRoot(statement)).length).toBeGreaterThan(0);
    for (const statement of statements) {
      expect(statement.Effect).toBe('Allow');
      if (isAccountRoot(statement)) continue;
      for (const id of principalIds([statement])) expect(named.has(id)).toBe(true);
    }
  });
});

describe('card-tag tables key', () => {
  it('is a rotating symmetric key that outlives the stack, like the tables it encrypts', () => {
    const [, key] = tableKey();
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.DeletionPolicy).toBe('Retain');
  });

  it('is used only through DynamoDB in this account, and administered without decrypting', () => {
    const policy = policyOf(tableKey()[1]);
    const using = policy.filter((statement) => keyUses.some((action) => allows(statement, action)));
    expect(using.length).toBeGreaterThan(0);
    for (const statement of using) {
      expect(JSON.stringify(statement.Condition?.StringEquals?.['kms:ViaService'])).toContain('dynamodb.');
      expect(statement.Condition?.StringEquals?.['kms:CallerAccount']).toEqual({ Ref: 'AWS::AccountId' });
    }
    const administration = policy.filter((statement) => allows(statement, 'kms:ScheduleKeyDeletion'));
    expect(administration).toHaveLength(1);
    expect(administration[0]?.Condition).toBeUndefined();
    for (const action of keyUses) expect(allows(administration[0] as KeyStatement, action)).toBe(false);
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

  const filters = () => Object.values(resourcesOf(template, 'AWS::Logs::MetricFilter'));
  const metricOf = (filter: Resource) =>
    (filter.Properties.MetricTransformations as { MetricName: string; MetricNamespace: string }[])[0];
  const isAccessLogGroup = (logGroupId: string | undefined) => {
    const [stage] = Object.values(resourcesOf(template, 'AWS::ApiGateway::Stage'));
    return !!logGroupId && JSON.stringify(stage?.Properties.AccessLogSetting).includes(`"${logGroupId}"`);
  };
  it.each([
    ['401', 'api-401', 'unauthorized', 50],
    ['403', 'api-403', 'forbidden', 50],
  ])('alarms on a spike of %s answers, counted from the access log', (status, alarm, metric, threshold) => {
    expect(alarmNamed(`receipt-service-test-${alarm}`)?.Properties).toMatchObject({
      MetricName: `receipt-service-test-${metric}`,
      Namespace: 'ReceiptService',
      Statistic: 'Sum',
      Period: 300,
      Threshold: threshold,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    const counting = filters().filter(
      (filter) => metricOf(filter)?.MetricName === `receipt-service-test-${metric}`,
    );
    expect(counting).toHaveLength(1);
    expect(counting[0]?.Properties.FilterPattern).toBe(`{ $.status = "${status}" }`);
    expect(isAccessLogGroup(referencedId(counting[0]?.Properties.LogGroupName))).toBe(true);
  });

  /** The stage's own namespace, where the functions publish their counts (EMF, infra/settings.ts). */
  const stageNamespace = 'ReceiptService/test';
  const everyFunction = [...routes, webhookDispatchFunction, webhookSweepFunction, webhookDeliverFunction];
  /** The metrics a metric-math alarm reads. */
  const metricsRead = (alarm: Resource | undefined) =>
    ((alarm?.Properties.Metrics ?? []) as { MetricStat?: { Metric: Record<string, unknown> } }[])
      .map((query) => query.MetricStat?.Metric)
      .filter((metric): metric is Record<string, unknown> => metric !== undefined);

  it("counts nothing from the functions' logs: the access log's are the only metric filters", () => {
    const counted = filters().map((filter) => referencedId(filter.Properties.LogGroupName));
    expect(counted).toHaveLength(3);
    for (const logGroupId of counted) expect(isAccessLogGroup(logGroupId)).toBe(true);
  });

  it("has every function publish its counts in the stage's own namespace", () => {
    for (const definition of everyFunction) {
      const { Variables } = functionByName(template, `receipt-service-test-${definition.name}`)[1].Properties
        .Environment as { Variables: Record<string, unknown> };
      expect([definition.name, Variables.POWERTOOLS_METRICS_NAMESPACE]).toEqual([
        definition.name,
        stageNamespace,
      ]);
    }
  });

  it.each([
    ['DECRYPTION_ERROR answers', 'decryption-errors', 'DecryptionErrorAnswers', 20],
    ['GRANT_ERROR answers', 'grant-errors', 'GrantErrorAnswers', 20],
    ['register 409s', 'register-conflicts', 'RegisterConflicts', 1],
  ])(
    'alarms on %s as the functions count them (EMF, every function at once)',
    (_, name, metric, threshold) => {
      expect(alarmNamed(`receipt-service-test-${name}`)?.Properties).toMatchObject({
        MetricName: metric,
        Namespace: stageNamespace,
        Dimensions: [{ Name: 'service', Value: 'receipt-service' }],
        Statistic: 'Sum',
        Period: 300,
        EvaluationPeriods: 1,
        Threshold: threshold,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
    },
  );

  it.each([
    ['ReRegistrations', 're-registrations'],
    ['RecipientSealFailures', 'recipient-seal-failures'],
    ['RefundCurrencyMismatches', 'refund-currency-mismatches'],
  ])('alarms on the first %s, as the use cases count them', (metric, name) => {
    expect(alarmNamed(`receipt-service-test-${name}`)?.Properties).toMatchObject({
      MetricName: metric,
      Namespace: stageNamespace,
      Dimensions: [{ Name: 'service', Value: 'receipt-service' }],
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
  });

  it('takes the security thresholds from the settings', () => {
    const tuned = synthVariant({
      monitoring: true,
      context: {
        unauthorizedAlarmThreshold: '11',
        forbiddenAlarmThreshold: '12',
        decryptionErrorAlarmThreshold: '13',
        grantErrorAlarmThreshold: '14',
        registerConflictAlarmThreshold: '15',
        reRegistrationAlarmThreshold: '16',
      },
    }).templates.template;
    const thresholds = Object.fromEntries(
      Object.values(resourcesOf(tuned, 'AWS::CloudWatch::Alarm')).map((alarm) => [
        alarm.Properties.AlarmName,
        alarm.Properties.Threshold,
      ]),
    );
    expect(thresholds).toMatchObject({
      'receipt-service-test-api-401': 11,
      'receipt-service-test-api-403': 12,
      'receipt-service-test-decryption-errors': 13,
      'receipt-service-test-grant-errors': 14,
      'receipt-service-test-register-conflicts': 15,
      'receipt-service-test-re-registrations': 16,
    });
  });

  it('alarms on every function: errors, and p99 duration near its timeout, ten functions to an alarm', () => {
    const functionIdOf = (metric: Record<string, unknown>) =>
      referencedId((metric.Dimensions as { Name: string; Value: unknown }[])[0]?.Value) ?? '';
    const functionId = (name: string) => functionByName(template, `receipt-service-test-${name}`)[0];
    const named = (kind: string) =>
      alarms().filter((alarm) =>
        String(alarm.Properties.AlarmName).startsWith(`receipt-service-test-lambda-${kind}-`),
      );
    const expressionOf = (alarm: Resource) =>
      (alarm.Properties.Metrics as { Expression?: string; ReturnData?: boolean }[]).filter(
        (query) => query.Expression,
      );

    // Errors: each function in exactly one alarm, which fires on its first error.
    const errorAlarms = named('errors');
    expect(errorAlarms).toHaveLength(Math.ceil(everyFunction.length / 10));
    const watched: string[] = [];
    for (const alarm of errorAlarms) {
      expect(alarm.Properties).toMatchObject({ Threshold: 1, EvaluationPeriods: 1 });
      expect(expressionOf(alarm)).toEqual([
        expect.objectContaining({ Expression: 'SUM(FILL(METRICS(), 0))', ReturnData: true }),
      ]);
      const metrics = metricsRead(alarm);
      expect(metrics.length).toBeLessThanOrEqual(10);
      for (const metric of metrics) {
        expect(metric).toMatchObject({ MetricName: 'Errors', Namespace: 'AWS/Lambda' });
        watched.push(functionIdOf(metric));
      }
      for (const query of alarm.Properties.Metrics as { MetricStat?: { Stat: string; Period: number } }[])
        if (query.MetricStat) expect(query.MetricStat).toMatchObject({ Stat: 'Sum', Period: 300 });
    }
    expect(watched.sort()).toEqual(everyFunction.map((definition) => functionId(definition.name)).sort());

    // Durations: each function in exactly one alarm of functions with its timeout, at 80 % of it.
    const thresholdOf = new Map<string, unknown>();
    for (const alarm of named('duration-p99')) {
      expect(alarm.Properties.EvaluationPeriods).toBe(3);
      expect(expressionOf(alarm)).toEqual([
        expect.objectContaining({ Expression: 'MAX(FILL(METRICS(), 0))', ReturnData: true }),
      ]);
      const metrics = metricsRead(alarm);
      expect(metrics.length).toBeLessThanOrEqual(10);
      for (const query of alarm.Properties.Metrics as { MetricStat?: { Stat: string; Period: number } }[])
        if (query.MetricStat) expect(query.MetricStat).toMatchObject({ Stat: 'p99', Period: 300 });
      for (const metric of metrics) {
        expect(metric).toMatchObject({ MetricName: 'Duration', Namespace: 'AWS/Lambda' });
        expect(thresholdOf.has(functionIdOf(metric))).toBe(false);
        thresholdOf.set(functionIdOf(metric), alarm.Properties.Threshold);
      }
    }
    expect(Object.fromEntries(thresholdOf)).toEqual(
      Object.fromEntries(
        everyFunction.map((definition) => [
          functionId(definition.name),
          (definition.timeoutSeconds ?? 10) * 800,
        ]),
      ),
    );
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
    expect(alarms().length).toBeGreaterThan(0);
    for (const alarm of alarms()) expect(alarm.Properties.AlarmActions).toBeUndefined();
  });

  it('e-mails every alarm to the configured address over a TLS-only topic', () => {
    const withEmail = synthVariant({ monitoring: true, context: { alarmEmail: 'ops@example.com' } }).templates
      .template;
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
    const withEmailAlarms = Object.values(resourcesOf(withEmail, 'AWS::CloudWatch::Alarm'));
    expect(withEmailAlarms.length).toBeGreaterThan(0);
    for (const alarm of withEmailAlarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
    }
  });

  it('keeps every log group a year, or as long as the setting says', () => {
    const groups = Object.values(resourcesOf(template, 'AWS::Logs::LogGroup'));
    expect(groups.length).toBeGreaterThan(routes.length);
    for (const group of groups) expect(group.Properties.RetentionInDays).toBe(365);
    // Log groups are the service stack's only (functions and access log): no monitoring stack needed.
    const shorter = synthVariant({ context: { logRetentionDays: '180' } }).templates.template;
    const shorterGroups = Object.values(resourcesOf(shorter, 'AWS::Logs::LogGroup'));
    expect(shorterGroups).toHaveLength(groups.length);
    for (const group of shorterGroups) {
      expect(group.Properties.RetentionInDays).toBe(180);
    }
  });

  it('has a dashboard unless switched off', () => {
    expect(Object.keys(resourcesOf(template, 'AWS::CloudWatch::Dashboard'))).toHaveLength(1);
    const without = synthVariant({ monitoring: true, context: { dashboard: 'false' } }).templates.template;
    expect(Object.keys(resourcesOf(without, 'AWS::CloudWatch::Dashboard'))).toHaveLength(0);
  });
});
