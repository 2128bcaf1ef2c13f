import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Template } from 'aws-cdk-lib/assertions';
import { routes, type TableAccess } from '../../functions/routes.js';
import {
  tableDefinitions,
  tableEnvVar,
  tableKeys,
  type TableDefinition,
  type TableKey,
} from '../../lib/kernel/tables.js';
import {
  asArray,
  functionByName,
  projectRoot,
  referencedId,
  resourcesOf,
  roleIdOf,
  sharedTemplate,
  statementsOfRole,
  type Resource,
  type Statement,
} from './support.js';
import { synthVariant } from './variants.js';

let template: Template;
let tableIds: Record<TableKey, string>;
let escrowKeyId: string;
let escrowAliasId: string;
let tableKeyId: string;
/** The card-tag key's secret and the customer-managed key it is encrypted under. */
let cardTagSecretId: string;
let cardTagSecretKeyId: string;
/** The paging cursors' key's secret. */
let cursorSecretId: string;
let logKeyId: string;

beforeAll(() => {
  template = sharedTemplate();
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
  const keys = Object.entries(resourcesOf(template, 'AWS::KMS::Key'));
  escrowKeyId = keys.find(([, key]) => key.Properties.KeySpec === 'RSA_2048')?.[0] as string;
  logKeyId = keys.find(([, key]) => key.Properties.KeySpec === 'ECC_NIST_P256')?.[0] as string;
  tableKeyId = keys.find(
    ([id, key]) => key.Properties.KeySpec === undefined && id.startsWith('Data'),
  )?.[0] as string;
  cardTagSecretKeyId = keys.find(([id]) => id.startsWith('CardTagKey'))?.[0] as string;
  if (!cardTagSecretKeyId) throw new Error('no card-tag secret key in the template');
  const secrets = Object.keys(resourcesOf(template, 'AWS::SecretsManager::Secret'));
  cardTagSecretId = secrets.find((id) => id.startsWith('CardTagKey')) as string;
  cursorSecretId = secrets.find((id) => id.startsWith('CursorKey')) as string;
  if (!cardTagSecretId || !cursorSecretId) throw new Error('no card-tag or cursor secret in the template');
  escrowAliasId = Object.keys(resourcesOf(template, 'AWS::KMS::Alias'))[0] as string;
});

const fn = (name: string): Resource => functionByName(template, `receipt-service-test-${name}`)[1];
const env = (name: string): Record<string, unknown> =>
  (fn(name).Properties.Environment as { Variables: Record<string, unknown> }).Variables;
const statements = (name: string): Statement[] => statementsOfRole(template, roleIdOf(fn(name)));
const actionsOn = (name: string, resourceId: string): Set<string> =>
  new Set(
    statements(name)
      .filter((statement) =>
        asArray(statement.Resource).some((resource) => referencedId(resource) === resourceId),
      )
      .flatMap((statement) => asArray(statement.Action)),
  );

// Written out here rather than imported, so a wrong constant in infra/permissions.ts fails a test:
// per table, the calls the functions' code makes when it reads and when it writes.
const expectedTableActions: Record<TableKey, { read: string[]; write: string[] }> = {
  apiKeys: { read: ['dynamodb:GetItem'], write: [] },
  keyPairs: {
    read: ['dynamodb:GetItem'],
    write: ['dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  users: {
    read: ['dynamodb:GetItem'],
    write: ['dynamodb:ConditionCheckItem', 'dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  accessTokens: {
    read: ['dynamodb:BatchGetItem', 'dynamodb:GetItem'],
    write: ['dynamodb:DeleteItem', 'dynamodb:PutItem'],
  },
  receipts: {
    read: ['dynamodb:BatchGetItem', 'dynamodb:GetItem'],
    write: ['dynamodb:BatchWriteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  transactions: {
    read: ['dynamodb:BatchGetItem', 'dynamodb:GetItem'],
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  evidence: {
    read: ['dynamodb:Query'],
    write: ['dynamodb:BatchWriteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  merchants: { read: ['dynamodb:GetItem'], write: ['dynamodb:PutItem'] },
  rateLimits: { read: ['dynamodb:BatchGetItem'], write: ['dynamodb:UpdateItem'] },
  audit: { read: [], write: ['dynamodb:PutItem'] },
  webhookDeliveries: { read: ['dynamodb:GetItem'], write: ['dynamodb:PutItem', 'dynamodb:UpdateItem'] },
  webhooks: {
    read: ['dynamodb:GetItem'],
    write: ['dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  idempotency: {
    read: ['dynamodb:GetItem'],
    write: ['dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  payments: {
    read: ['dynamodb:GetItem', 'dynamodb:Query'],
    write: ['dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  merchantKeys: {
    read: ['dynamodb:GetItem'],
    write: ['dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  keyLog: {
    read: ['dynamodb:GetItem', 'dynamodb:BatchGetItem'],
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
};

const expectedFor = (key: TableKey, access: TableAccess | undefined): string[] =>
  [
    ...(access === 'read' || access === 'readWrite' ? expectedTableActions[key].read : []),
    ...(access === 'write' || access === 'readWrite' ? expectedTableActions[key].write : []),
  ].sort();

describe('one function per route', () => {
  it('creates exactly the functions of the route table, the edge authorizer and the webhook dispatcher, sweeper and deliverer', () => {
    const names = Object.values(resourcesOf(template, 'AWS::Lambda::Function')).map(
      (f) => f.Properties.FunctionName,
    );
    expect(names.sort()).toEqual(
      [
        ...routes.map((route) => route.name),
        'edge-authorizer',
        'webhook-dispatch',
        'webhook-sweep',
        'webhook-deliver',
      ]
        .map((name) => `receipt-service-test-${name}`)
        .sort(),
    );
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
      expect(resourcesOf(template, 'AWS::Logs::LogGroup')[logGroupId]?.Properties.RetentionInDays).toBe(365);
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
    // Square's production environment is production's alone (test/infra/settings.test.ts).
    const withSquare = synthVariant({
      settings: { squareLocationId: 'L123', squareEnvironment: 'sandbox' },
    }).templates.template;
    const variables = (
      functionByName(withSquare, 'receipt-service-test-create-payment')[1].Properties.Environment as {
        Variables: Record<string, unknown>;
      }
    ).Variables;
    expect(variables).toMatchObject({
      PAYMENT_GATEWAYS: 'gateway_a,gateway_b',
      SQUARE_LOCATION_ID: 'L123',
      SQUARE_ENVIRONMENT: 'sandbox',
    });
  });
});

describe('least privilege', () => {
  it.each(routes.map((route) => [route.name, route] as const))(
    '%s: on each table it declares, only the calls the code makes there',
    (name, route) => {
      for (const key of tableKeys) {
        const granted = [...actionsOn(name, tableIds[key])].sort();
        expect([key, granted]).toEqual([key, expectedFor(key, route.tables[key])]);
      }
    },
  );

  it('keeps the audit table append-only for every function, whatever its route declares', () => {
    const writers = routes.filter((route) => route.tables.audit);
    expect(writers.length).toBeGreaterThan(0);
    for (const route of routes) {
      const granted = [...actionsOn(route.name, tableIds.audit)];
      expect([route.name, granted]).toEqual([route.name, route.tables.audit ? ['dynamodb:PutItem'] : []]);
    }
  });

  it('grants what the code calls, and nothing it does not (read from lib/db)', () => {
    // Calls per table as the repositories make them; the admin CLI and operator tooling use the
    // same repositories with their own credentials, so their calls are set apart here by name.
    const operatorOnly: Partial<Record<TableKey, string[]>> = {
      apiKeys: ['dynamodb:PutItem', 'dynamodb:Scan', 'dynamodb:UpdateItem'],
      audit: ['dynamodb:Query'],
    };
    const commandAction: Record<string, string> = {
      Get: 'dynamodb:GetItem',
      Put: 'dynamodb:PutItem',
      Update: 'dynamodb:UpdateItem',
      Delete: 'dynamodb:DeleteItem',
      Query: 'dynamodb:Query',
      Scan: 'dynamodb:Scan',
      BatchGet: 'dynamodb:BatchGetItem',
      BatchWrite: 'dynamodb:BatchWriteItem',
      ConditionCheck: 'dynamodb:ConditionCheckItem',
      GetItem: 'dynamodb:GetItem',
      PutItem: 'dynamodb:PutItem',
      UpdateItem: 'dynamodb:UpdateItem',
      DeleteItem: 'dynamodb:DeleteItem',
    };
    const used = new Map<TableKey, Set<string>>(tableKeys.map((key) => [key, new Set<string>()]));
    const use = (key: TableKey, action: string) => used.get(key)?.add(action);
    const sourceOf = (path: string) => readFileSync(join(projectRoot, path), 'utf8');
    for (const key of tableKeys) {
      if (key === 'idempotency') continue;
      const definition: TableDefinition = tableDefinitions[key];
      const source = sourceOf(`lib/db/${definition.envName ?? definition.name}.ts`);
      for (const match of source.matchAll(/new (\w+?)Command\((?=([\s\S]{0,300}))/g)) {
        const [, command = '', after = ''] = match;
        if (command === 'TransactWrite') continue;
        // The receipts' escrow index is granted apart from the table.
        if (command === 'Query' && /IndexName/.test(after.split('}),')[0] ?? '')) continue;
        use(key, commandAction[command] ?? `unknown command ${command}`);
      }
      if (/putIfAbsent\(\s*this\.doc/.test(source)) use(key, 'dynamodb:PutItem');
      for (const [, item = '', field = ''] of source.matchAll(
        /\b(Put|Update|Delete|ConditionCheck): \{\s*TableName: this\.(\w+)/g,
      )) {
        const table = field === 'tableName' ? key : (field.replace(/Table$/, '') as TableKey);
        use(table, commandAction[item] ?? item);
      }
    }
    // Powertools' idempotency persistence layer makes these calls on its table.
    const powertools = readFileSync(
      join(
        projectRoot,
        'node_modules/@aws-lambda-powertools/idempotency/lib/esm/persistence/DynamoDBPersistenceLayer.js',
      ),
      'utf8',
    );
    for (const [, command = ''] of powertools.matchAll(/new (\w+?)Command\(/g)) {
      use('idempotency', commandAction[command] ?? `unknown command ${command}`);
    }

    for (const key of tableKeys) {
      const byFunctions = [...(used.get(key) ?? [])]
        .filter((action) => !(operatorOnly[key] ?? []).includes(action))
        .sort();
      const granted = [
        ...new Set([...expectedTableActions[key].read, ...expectedTableActions[key].write]),
      ].sort();
      // A failure here names the table: add the call to infra/permissions.ts (and above), or drop it.
      expect([key, byFunctions]).toEqual([key, granted]);
    }
  });

  it.each([
    ['receipts', 'by-receipt-id'],
    ['receipts', 'by-recipient-user'],
    ['transactions', 'by-transaction-id'],
  ] as const)('lets only readers of the %s table query its index %s, and only query', (table, index) => {
    const indexStatements = (name: string) =>
      statements(name).filter((statement) => {
        const resource = JSON.stringify(statement.Resource);
        return resource.includes('/index/') && resource.includes(tableIds[table]);
      });
    for (const route of routes) {
      const access = route.tables[table];
      const found = indexStatements(route.name);
      if (access === 'read' || access === 'readWrite') {
        expect(found.map((statement) => statement.Action)).toEqual(['dynamodb:Query']);
        expect(JSON.stringify(found[0]?.Resource)).toContain(`/index/${index}`);
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
      // The log signing key: Sign and GetPublicKey for the routes that declare logKey, nothing for the rest.
      expect([...actionsOn(name, logKeyId)].sort()).toEqual(
        route.logKey ? ['kms:GetPublicKey', 'kms:Sign'] : [],
      );
      // And no KMS action on anything but the escrow key, the log key and the card-tag tables' key.
      const elsewhere = statements(name).filter(
        (statement) =>
          asArray(statement.Action).some((action) => action.startsWith('kms:')) &&
          !asArray(statement.Resource).every((resource) =>
            [escrowKeyId, logKeyId, tableKeyId, ...(route.cardTags ? [cardTagSecretKeyId] : [])].includes(
              referencedId(resource) ?? '',
            ),
          ),
      );
      expect(elsewhere).toEqual([]);
    },
  );

  it.each(routes.map((route) => [route.name, route] as const))(
    "%s: the customer-managed tables' key, through DynamoDB only, when it uses one of those tables",
    (name, route) => {
      const customerKeyed: TableKey[] = ['users', 'receipts', 'audit', 'accessTokens', 'webhooks'];
      const onKey = statements(name).filter((statement) =>
        asArray(statement.Resource).some((resource) => referencedId(resource) === tableKeyId),
      );
      const declared = customerKeyed.filter((key) => route.tables[key]);
      if (declared.length === 0) {
        expect(onKey).toEqual([]);
        return;
      }
      expect(onKey).toHaveLength(1);
      const writes = declared.some((key) => route.tables[key] !== 'read');
      expect(asArray(onKey[0]?.Action).sort()).toEqual(
        writes
          ? [
              'kms:Decrypt',
              'kms:DescribeKey',
              'kms:Encrypt',
              'kms:GenerateDataKey',
              'kms:GenerateDataKeyWithoutPlaintext',
              'kms:ReEncryptFrom',
              'kms:ReEncryptTo',
            ]
          : ['kms:Decrypt', 'kms:DescribeKey'],
      );
      expect(JSON.stringify((onKey[0] as unknown as { Condition: unknown }).Condition)).toMatch(
        /"kms:ViaService":\{"Fn::Join":\["",\["dynamodb\.",\{"Ref":"AWS::Region"\},"\.amazonaws\.com"\]\]\}/,
      );
    },
  );

  it('does not let functions that never unwrap call kms:Decrypt', () => {
    for (const name of [
      'decrypt-receipt',
      'decrypt-payment',
      'encrypt-receipt',
      'create-payment',
      'health',
      // Registering releases nothing any more: only a claim with the card transaction unwraps.
      'register',
    ]) {
      expect(actionsOn(name, escrowKeyId).has('kms:Decrypt')).toBe(false);
    }
    expect(actionsOn('claim-receipts', escrowKeyId).has('kms:Decrypt')).toBe(true);
  });

  it.each(routes.map((route) => [route.name, route] as const))(
    '%s: gateway secrets only when it reaches the gateways',
    (name, route) => {
      // The card-tag and cursor keys' secrets are checked apart, below; IAM may merge their statements with this one.
      const secretStatements = statements(name)
        .filter((statement) =>
          asArray(statement.Action).some((action) => action.startsWith('secretsmanager:')),
        )
        .map((statement) => {
          const resources = asArray(statement.Resource).filter(
            (resource) => ![cardTagSecretId, cursorSecretId].includes(referencedId(resource) ?? ''),
          );
          return { ...statement, Resource: resources.length === 1 ? resources[0] : resources };
        })
        .filter((statement) => asArray(statement.Resource).length > 0);
      if (!route.gateways) {
        expect(secretStatements).toEqual([]);
        return;
      }
      expect(secretStatements).toHaveLength(1);
      expect(secretStatements[0]?.Action).toBe('secretsmanager:GetSecretValue');
      const resources = JSON.stringify(secretStatements[0]?.Resource);
      // The gateways' webhook signing secrets too, for the function that verifies their events only
      // (test/infra/gateway-events.test.ts).
      expect(asArray(secretStatements[0]?.Resource)).toHaveLength(route.gatewayEvents ? 4 : 2);
      expect(resources).toContain(':secret:/test/receipt-service/stripe-secret-key-??????');
      expect(resources).toContain(':secret:/test/receipt-service/square-access-token-??????');
    },
  );

  it.each(routes.map((route) => [route.name, route] as const))(
    '%s: the card-tag key secret, through Secrets Manager only, when it tags cards',
    (name, route) => {
      const onSecret = statements(name).filter((statement) =>
        asArray(statement.Resource).some((resource) => referencedId(resource) === cardTagSecretId),
      );
      const onKey = statements(name).filter((statement) =>
        asArray(statement.Resource).some((resource) => referencedId(resource) === cardTagSecretKeyId),
      );
      const variables = (fn(name).Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      if (!route.cardTags) {
        expect([onSecret, onKey, variables.CARD_TAG_SECRET_NAME]).toEqual([[], [], undefined]);
        return;
      }
      expect(onSecret.map((statement) => statement.Action)).toEqual(['secretsmanager:GetSecretValue']);
      expect(onKey.map((statement) => statement.Action)).toEqual(['kms:Decrypt']);
      expect(JSON.stringify(onKey[0])).toContain('"kms:ViaService"');
      expect(JSON.stringify(onKey[0])).toContain('secretsmanager.');
      expect(variables).toHaveProperty('CARD_TAG_SECRET_NAME');
    },
  );

  it.each(routes.map((route) => [route.name, route] as const))(
    '%s: the cursor key secret only when it pages',
    (name, route) => {
      const onSecret = statements(name).filter((statement) =>
        asArray(statement.Resource).some((resource) => referencedId(resource) === cursorSecretId),
      );
      const variables = env(name);
      if (!route.cursors) {
        expect([onSecret, variables.CURSOR_SECRET_NAME]).toEqual([[], undefined]);
        return;
      }
      expect(onSecret.map((statement) => [statement.Action, statement.Resource])).toEqual([
        ['secretsmanager:GetSecretValue', { Ref: cursorSecretId }],
      ]);
      expect(variables).toHaveProperty('CURSOR_SECRET_NAME');
    },
  );

  it('declares the cursor key for exactly the routes that page', () => {
    expect(
      routes
        .filter((route) => route.cursors)
        .map((route) => route.name)
        .sort(),
    ).toEqual(['list-user-receipts', 'list-webhook-deliveries']);
  });

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
      const roleId = roleIdOf(fn(route.name));
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
