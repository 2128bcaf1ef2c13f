import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Template } from 'aws-cdk-lib/assertions';
import { routes, type TableAccess } from '../../lib/routes.js';
import { tableDefinitions, tableEnvVar, tableKeys, type TableKey } from '../../lib/tables.js';
import {
  asArray,
  functionByName,
  referencedId,
  resourcesOf,
  statementsOfRole,
  synth,
  type Resource,
  type Statement,
} from './support.js';

let template: Template;
let tableIds: Record<TableKey, string>;
let escrowKeyId: string;
let escrowAliasId: string;

beforeAll(() => {
  ({ template } = synth());
  const tables = resourcesOf(template, 'AWS::DynamoDB::Table');
  tableIds = Object.fromEntries(
    tableKeys.map((key) => {
      const entry = Object.entries(tables).find(
        ([, table]) => table.Properties.TableName === `receipt-service-test-${tableDefinitions[key].name}`,
      );
      if (!entry) throw new Error(`No table for ${key}`);
      return [key, entry[0]];
    }),
  ) as Record<TableKey, string>;
  escrowKeyId = Object.keys(resourcesOf(template, 'AWS::KMS::Key'))[0] as string;
  escrowAliasId = Object.keys(resourcesOf(template, 'AWS::KMS::Alias'))[0] as string;
});

const fn = (name: string): Resource => functionByName(template, `receipt-service-test-${name}`)[1];
const env = (name: string): Record<string, unknown> =>
  (fn(name).Properties.Environment as { Variables: Record<string, unknown> }).Variables;
const statements = (name: string): Statement[] =>
  statementsOfRole(template, referencedId(fn(name).Properties.Role) ?? '');
const actionsOn = (name: string, resourceId: string): Set<string> =>
  new Set(
    statements(name)
      .filter((statement) =>
        asArray(statement.Resource).some((resource) => referencedId(resource) === resourceId),
      )
      .flatMap((statement) => asArray(statement.Action)),
  );

// Written out here rather than imported, so a wrong constant in infra/permissions.ts fails a test.
const expectedTableActions: Record<TableAccess, string[]> = {
  read: ['dynamodb:BatchGetItem', 'dynamodb:ConditionCheckItem', 'dynamodb:GetItem', 'dynamodb:Query'],
  write: ['dynamodb:BatchWriteItem', 'dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  readWrite: [
    'dynamodb:BatchGetItem',
    'dynamodb:BatchWriteItem',
    'dynamodb:ConditionCheckItem',
    'dynamodb:DeleteItem',
    'dynamodb:GetItem',
    'dynamodb:PutItem',
    'dynamodb:Query',
    'dynamodb:UpdateItem',
  ],
};

describe('one function per route', () => {
  it('creates exactly the functions of the route table', () => {
    const names = Object.values(resourcesOf(template, 'AWS::Lambda::Function')).map(
      (f) => f.Properties.FunctionName,
    );
    expect(names.sort()).toEqual(routes.map((route) => `receipt-service-test-${route.name}`).sort());
  });

  it.each(routes.map((route) => [route.name, route] as const))(
    '%s: Node.js 24 on arm64, traced, sized by the route',
    (name, route) => {
      const properties = fn(name).Properties;
      expect(properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        TracingConfig: { Mode: 'Active' },
        MemorySize: route.memoryMb ?? 512,
        Timeout: route.timeoutSeconds ?? 10,
      });
      // Its own log group, with a retention.
      const logGroupId = referencedId((properties.LoggingConfig as { LogGroup: unknown }).LogGroup) ?? '';
      expect(resourcesOf(template, 'AWS::Logs::LogGroup')[logGroupId]?.Properties.RetentionInDays).toBe(30);
    },
  );

  it('runs on the same Node.js major version as the tests', () => {
    expect(`nodejs${process.versions.node.split('.')[0]}.x`).toBe(fn('health').Properties.Runtime);
  });
});

describe('environment', () => {
  it.each(routes.map((route) => [route.name, route] as const))(
    '%s: only its own tables, escrow and gateway settings',
    (name, route) => {
      const variables = env(name);
      expect(variables).toMatchObject({
        STAGE: 'test',
        LOG_LEVEL: 'INFO',
        POWERTOOLS_SERVICE_NAME: 'receipt-service',
        NODE_OPTIONS: '--enable-source-maps',
        TOKEN_TTL_SECONDS: '180',
      });

      const tableVariables = Object.keys(variables).filter((key) => key.startsWith('TABLE_'));
      const ownTables = Object.keys(route.tables) as TableKey[];
      expect(tableVariables.sort()).toEqual(ownTables.map(tableEnvVar).sort());
      for (const key of ownTables) expect(referencedId(variables[tableEnvVar(key)])).toBe(tableIds[key]);

      // By alias: envelopes show the id, and an ARN would show the account.
      if (route.escrow) expect(referencedId(variables.ESCROW_KMS_KEY_ID)).toBe(escrowAliasId);
      else expect(variables).not.toHaveProperty('ESCROW_KMS_KEY_ID');

      const gatewayVariables = [
        'STRIPE_SECRET_NAME',
        'SQUARE_SECRET_NAME',
        'SQUARE_ENVIRONMENT',
        'PAYMENT_GATEWAYS',
      ];
      if (route.gateways) {
        expect(variables).toMatchObject({
          STRIPE_SECRET_NAME: '/test/receipt-service/stripe-secret-key',
          SQUARE_SECRET_NAME: '/test/receipt-service/square-access-token',
          SQUARE_ENVIRONMENT: 'sandbox',
          // Square needs a location id to take payments, and none is configured by default.
          PAYMENT_GATEWAYS: 'gateway_a',
        });
      } else {
        for (const variable of gatewayVariables) expect(variables).not.toHaveProperty(variable);
      }
    },
  );

  it('switches Square on with its location id', () => {
    const { template: withSquare } = synth({
      settings: { squareLocationId: 'L123', squareEnvironment: 'production' },
    });
    const variables = (
      functionByName(withSquare, 'receipt-service-test-create-payment')[1].Properties.Environment as {
        Variables: Record<string, unknown>;
      }
    ).Variables;
    expect(variables).toMatchObject({
      PAYMENT_GATEWAYS: 'gateway_a,gateway_b',
      SQUARE_LOCATION_ID: 'L123',
      SQUARE_ENVIRONMENT: 'production',
    });
  });
});

describe('least privilege', () => {
  it.each(routes.map((route) => [route.name, route] as const))(
    '%s: exactly the table actions its route declares',
    (name, route) => {
      for (const key of tableKeys) {
        const access = route.tables[key];
        const granted = [...actionsOn(name, tableIds[key])].sort();
        expect([key, granted]).toEqual([key, access ? expectedTableActions[access] : []]);
      }
    },
  );

  it('lets only readers of the receipts table query its escrow index, and only query', () => {
    const indexStatements = (name: string) =>
      statements(name).filter((statement) => JSON.stringify(statement.Resource).includes('/index/'));
    for (const route of routes) {
      const access = route.tables.receipts;
      const found = indexStatements(route.name);
      if (access === 'read' || access === 'readWrite') {
        expect(found.map((statement) => statement.Action)).toEqual(['dynamodb:Query']);
        expect(JSON.stringify(found[0]?.Resource)).toContain('/index/by-pending-recipient');
        expect(JSON.stringify(found[0]?.Resource)).toContain(tableIds.receipts);
      } else {
        expect([route.name, found]).toEqual([route.name, []]);
      }
    }
  });

  it.each(routes.map((route) => [route.name, route] as const))(
    '%s: escrow key actions by its escrow use',
    (name, route) => {
      const kmsActions = [...actionsOn(name, escrowKeyId)].sort();
      const expected = {
        none: [],
        wrap: ['kms:DescribeKey', 'kms:GetPublicKey'],
        wrapAndUnwrap: ['kms:Decrypt', 'kms:DescribeKey', 'kms:GetPublicKey'],
      }[route.escrow ?? 'none'];
      expect(kmsActions).toEqual(expected);
      // And no KMS action on anything else.
      const elsewhere = statements(name).filter(
        (statement) =>
          asArray(statement.Action).some((action) => action.startsWith('kms:')) &&
          !asArray(statement.Resource).every((resource) => referencedId(resource) === escrowKeyId),
      );
      expect(elsewhere).toEqual([]);
    },
  );

  it('does not let functions that never unwrap call kms:Decrypt', () => {
    for (const name of [
      'decrypt-receipt',
      'decrypt-payment',
      'encrypt-receipt',
      'create-payment',
      'health',
    ]) {
      expect(actionsOn(name, escrowKeyId).has('kms:Decrypt')).toBe(false);
    }
    expect(actionsOn('register', escrowKeyId).has('kms:Decrypt')).toBe(true);
  });

  it.each(routes.map((route) => [route.name, route] as const))(
    '%s: gateway secrets only when it reaches the gateways',
    (name, route) => {
      const secretStatements = statements(name).filter((statement) =>
        asArray(statement.Action).some((action) => action.startsWith('secretsmanager:')),
      );
      if (!route.gateways) {
        expect(secretStatements).toEqual([]);
        return;
      }
      expect(secretStatements).toHaveLength(1);
      expect(secretStatements[0]?.Action).toBe('secretsmanager:GetSecretValue');
      const resources = JSON.stringify(secretStatements[0]?.Resource);
      expect(asArray(secretStatements[0]?.Resource)).toHaveLength(2);
      expect(resources).toContain(':secret:/test/receipt-service/stripe-secret-key-??????');
      expect(resources).toContain(':secret:/test/receipt-service/square-access-token-??????');
    },
  );

  it('has no wildcard actions, and Resource "*" only for X-Ray', () => {
    const documents = [
      ...Object.values(resourcesOf(template, 'AWS::IAM::Policy')).map(
        (policy) => policy.Properties.PolicyDocument,
      ),
      ...Object.values(resourcesOf(template, 'AWS::IAM::Role')).flatMap((role) =>
        ((role.Properties.Policies as { PolicyDocument: unknown }[] | undefined) ?? []).map(
          (p) => p.PolicyDocument,
        ),
      ),
    ] as { Statement: Statement[] }[];
    const all = documents.flatMap((document) => document.Statement);
    expect(all.length).toBeGreaterThan(routes.length);
    for (const statement of all) {
      for (const action of asArray(statement.Action)) {
        expect(action).not.toBe('*');
        expect(action).not.toMatch(/:\*$/);
      }
      if (asArray(statement.Resource).includes('*')) {
        expect(asArray(statement.Action).sort()).toEqual([
          'xray:PutTelemetryRecords',
          'xray:PutTraceSegments',
        ]);
      }
    }
  });

  it('attaches no AWS managed policy to the function roles', () => {
    for (const route of routes) {
      const roleId = referencedId(fn(route.name).Properties.Role) ?? '';
      expect(resourcesOf(template, 'AWS::IAM::Role')[roleId]?.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });

  it('creates each function only after it may write traces', () => {
    const [tracingPolicyId] = Object.entries(resourcesOf(template, 'AWS::IAM::Policy')).find(([, policy]) =>
      JSON.stringify(policy.Properties.PolicyDocument).includes('xray:PutTraceSegments'),
    ) ?? [''];
    for (const route of routes) {
      const [, resource] = functionByName(template, `receipt-service-test-${route.name}`);
      expect(resource.DependsOn).toContain(tracingPolicyId);
    }
  });
});
