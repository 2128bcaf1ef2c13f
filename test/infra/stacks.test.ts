import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { CloudFormationStackArtifact } from 'aws-cdk-lib/cx-api';
import { countByType, total, type TemplateJson } from '../../infra/cloud-assembly.js';
import { routes } from '../../functions/routes.js';
import { tableDefinitions, tableKeys } from '../../lib/kernel/tables.js';
import {
  asArray,
  projectRoot,
  referencedId,
  sharedApp,
  stackOutputReads,
  testStackNames,
  type Resource,
  type StageTemplates,
} from './support.js';
import { synthVariant } from './variants.js';

/** CloudFormation refuses a stack of more than 500 resources; this leaves room to grow and to see it coming. */
const STACK_RESOURCE_BUDGET = 400;
/**
 * The service stack's own budget, so that 30 and more routes still fit under the suite's 400
 * (docs/DEPLOY.md, "What a route costs").
 */
const SERVICE_STACK_BUDGET = 250;
/**
 * What one more route adds to the service stack at most: its function, role, policy, log group and
 * permission (a route with no table and no secret has no policy; one using escrow has its role in the
 * data stack).
 */
const SERVICE_RESOURCES_PER_ROUTE = 5;
/**
 * The monitoring stack's budget (issue 34): its alarms read the metrics the functions publish and
 * Lambda's own, ten functions to an alarm, so it grows by an alarm per ten functions, not by four
 * resources per function.
 */
const MONITORING_STACK_BUDGET = 110;
/** CloudFormation's 1 MB limit on a template (uploaded through S3), less a tenth kept in reserve. */
const TEMPLATE_BYTES_WITH_MARGIN = 900_000;
/** CloudFormation's limit on a stack's outputs; cross-stack reads are outputs of the stack read. */
const STACK_OUTPUT_LIMIT = 200;

/**
 * The single stack of commit 3e3e0ab, the last before the split, counted by scripts/infra-resource-counts.ts
 * (the command is in the file and in fixtures/README.md).
 */
interface ResourceCounts {
  commit: string;
  total: number;
  byType: Record<string, number>;
  /** Function names without the `receipt-service-<stage>-` prefix. */
  functions: string[];
}
const beforeTheSplit = JSON.parse(
  readFileSync(join(projectRoot, 'test/infra/fixtures/single-stack-resources.json'), 'utf8'),
) as ResourceCounts;

/**
 * What the split itself adds or removes, by type. Nothing: the stacks read each other through weak
 * references (cdk.json: `@aws-cdk/core:defaultCrossStackReferences` is `weak`), which are an Output of
 * the stack read and an `Fn::GetStackOutput` in the reader, neither of them a resource; no Export, no
 * SSM parameter, no custom resource. The escrow users' roles moved to the data stack and their
 * policies stayed with the functions: one of each, as before.
 */
const wiringDifferences: Record<string, number> = {};

/**
 * What the app gained since that commit that is not a route (routes added since are left out of the
 * comparison by building the variant with the fixture's routes only), each with where it came from.
 */
/** Functions that serve no route, added since that commit. */
const functionsAddedSinceTheSplit = [
  // The per-destination webhook attempts, fed by the delivery queue (infra/webhook-delivery.ts).
  'webhook-deliver',
];

const addedSinceTheSplit: Record<string, number> = {
  // The payments table (payment status and refunds, lib/db/payments.ts), the evidence table (the
  // keyed evidence index, lib/db/evidence.ts) and the merchant-keys table (merchant signing keys and
  // signing policies, lib/db/merchant-keys.ts) and the key-log table (the transparency log of merchant
  // key events, lib/db/key-log.ts) ...
  'AWS::DynamoDB::Table': 4,
  // ... with a throttling alarm each, as every table has (infra/monitoring.ts); the webhook-deliver
  // function's errors and duration alarms; its dead-letter queue's; re-registrations and recipient
  // seal failures (cardholder trust, round 3); refund events in another currency (round 4).
  'AWS::CloudWatch::Alarm': 4 + 2 + 1 + 2 + 1,
  // webhook-deliver: its role, policy, log group, the two metric filters every function's log has,
  // and the event source mappings of its queue and of that queue's dead-letter queue (which records
  // a first attempt given up on due); the delivery queue (SQS FIFO, one message group per webhook)
  // and its dead-letter queue, each with its TLS-only policy.
  'AWS::IAM::Role': 1,
  'AWS::IAM::Policy': 1,
  'AWS::Logs::LogGroup': 1,
  'AWS::Logs::MetricFilter': 2,
  'AWS::Lambda::EventSourceMapping': 2,
  'AWS::Lambda::Function': 1,
  'AWS::SQS::Queue': 2,
  'AWS::SQS::QueuePolicy': 2,
  // The stage's web ACL, limiting each source address on the gateways' events route (infra/edge-waf.ts).
  'AWS::WAFv2::WebACL': 1,
  'AWS::WAFv2::WebACLAssociation': 1,
  // The key log's signing key (ECC_NIST_P256, tree heads; infra/data-stack.ts).
  'AWS::KMS::Key': 1,
};

/**
 * The API is defined by its OpenAPI document (infra/api-definition.ts): its methods and resources
 * (the 404 mocks added since that commit among them), authorizer, request validator and gateway
 * responses are members of the REST API's definition, no longer resources of their own. Its Lambda
 * permissions stay one per function.
 */
const definedByTheDocument: Record<string, number> = Object.fromEntries(
  [
    'AWS::ApiGateway::Method',
    'AWS::ApiGateway::Resource',
    'AWS::ApiGateway::Authorizer',
    'AWS::ApiGateway::RequestValidator',
    'AWS::ApiGateway::GatewayResponse',
  ].map((type) => [type, -(beforeTheSplit.byType[type] ?? 0)]),
);

/**
 * Alarms on the metrics the functions publish (EMF) and on Lambda's own, no longer on metric filters
 * per function log (infra/monitoring.ts), for the 29 functions that comparison monitors (its 26
 * routes but the authorizer, dispatch, sweep and deliver): the two filters of each function's log
 * (DECRYPTION_ERROR, GRANT_ERROR) and register's 409 filter are gone, and the errors and p99
 * duration alarms of each function are alarms of up to ten functions each: errors in 3, durations
 * by timeout in 7 (21 functions of 10 s in 3; 29 s, 20 s, 30 s (deliver) and 60 s (dispatch and
 * sweep) in one each).
 */
const alarmsFromMetrics: Record<string, number> = {
  'AWS::Logs::MetricFilter': -(2 * 29 + 1),
  'AWS::CloudWatch::Alarm': -(2 * 29) + 3 + 7,
};

const kinds = ['data', 'service', 'monitoring'] as const;
const nameOf = (kind: (typeof kinds)[number]): string => testStackNames[kind];

let stacks: Record<string, TemplateJson>;
const resourcesIn = (stackName: string): Record<string, Resource> =>
  (stacks[stackName]?.Resources ?? {}) as Record<string, Resource>;

beforeAll(() => {
  ({ stacks } = sharedApp().templates);
});

describe('one stage, three stacks', () => {
  it('has a data, a service and a monitoring stack, each deployed after what it reads', () => {
    expect(Object.keys(stacks).sort()).toEqual(kinds.map(nameOf).sort());
    const dependencies = (stackName: string): string[] =>
      sharedApp()
        .assembly.getStackByName(stackName)
        .dependencies.filter((artifact) => artifact instanceof CloudFormationStackArtifact)
        .map((artifact) => (artifact as CloudFormationStackArtifact).stackName)
        .sort();
    expect(dependencies(nameOf('data'))).toEqual([]);
    expect(dependencies(nameOf('service'))).toEqual([nameOf('data')]);
    expect(dependencies(nameOf('monitoring'))).toEqual([nameOf('data'), nameOf('service')].sort());
  });

  it.each(kinds)('keeps the %s stack below 400 resources and 200 outputs', (kind) => {
    const count = total(countByType([stacks[nameOf(kind)] as TemplateJson]));
    expect(count).toBeGreaterThan(0);
    expect(count).toBeLessThan(STACK_RESOURCE_BUDGET);
    expect(Object.keys(stacks[nameOf(kind)]?.Outputs ?? {}).length).toBeLessThan(STACK_OUTPUT_LIMIT);
  });

  it(`keeps the service stack within ${SERVICE_STACK_BUDGET} resources, none of them an API method or path`, () => {
    const service = stacks[nameOf('service')] as TemplateJson;
    const counted = countByType([service]);
    expect(total(counted)).toBeLessThanOrEqual(SERVICE_STACK_BUDGET);
    expect(counted['AWS::ApiGateway::Method']).toBeUndefined();
    expect(counted['AWS::ApiGateway::Resource']).toBeUndefined();
  });

  it(`adds ${SERVICE_RESOURCES_PER_ROUTE} service resources per route, so that 30 more fit under ${STACK_RESOURCE_BUDGET}`, () => {
    // A keyed route with tables of its own: a policy, and a role in this stack.
    const typical = routes.find(
      (route) => route.apiKeyRequired && Object.keys(route.tables).length > 0 && !route.escrow,
    );
    const smaller = synthVariant({ routes: routes.filter((route) => route !== typical) }).templates.stacks[
      nameOf('service')
    ] as TemplateJson;
    const service = stacks[nameOf('service')] as TemplateJson;
    const perRoute = total(countByType([service])) - total(countByType([smaller]));
    expect(perRoute).toBe(SERVICE_RESOURCES_PER_ROUTE);
    // And its bytes: the template, the API definition inline, stays well under CloudFormation's 1 MB
    // (a tenth of it to spare) with 30 more such routes (docs/DEPLOY.md, "What one more route costs").
    // A route's bytes compare two variants: `cdk synth`'s own metadata (about 5 KB) is in neither.
    const size = (template: TemplateJson) => JSON.stringify(template).length;
    const variant = synthVariant({}).templates.stacks[nameOf('service')] as TemplateJson;
    const bytesPerRoute = size(variant) - size(smaller);
    expect(bytesPerRoute).toBeGreaterThan(0);
    expect(size(service) + 30 * bytesPerRoute).toBeLessThanOrEqual(TEMPLATE_BYTES_WITH_MARGIN);
    expect(
      Math.floor((STACK_RESOURCE_BUDGET - 1 - total(countByType([service]))) / perRoute),
    ).toBeGreaterThanOrEqual(30);
  });

  it(`keeps the monitoring stack within ${MONITORING_STACK_BUDGET} resources, with an alarm topic too`, () => {
    const monitoring = (templates: Record<string, TemplateJson>) =>
      total(countByType([templates[nameOf('monitoring')] as TemplateJson]));
    expect(monitoring(stacks)).toBeLessThanOrEqual(MONITORING_STACK_BUDGET);
    const withTopic = synthVariant({ monitoring: true, context: { alarmEmail: 'ops@example.com' } }).templates
      .stacks;
    expect(monitoring(withTopic)).toBeLessThanOrEqual(MONITORING_STACK_BUDGET);
  });

  it('reads across stacks one way only: the service stack the data stack, monitoring both', () => {
    const readers = Object.fromEntries(
      kinds.map((kind) => [
        kind,
        [...new Set(stackOutputReads(stacks[nameOf(kind)]).map((read) => read.StackName))].sort(),
      ]),
    );
    expect(readers).toEqual({
      data: [],
      service: [nameOf('data')],
      monitoring: [nameOf('data'), nameOf('service')].sort(),
    });
    // Every read names an output that exists (support.ts resolves them all, or throws).
    expect(stackOutputReads(stacks[nameOf('service')]).length).toBeGreaterThan(0);
    expect(() => sharedApp().templates.template).not.toThrow();
  });

  it('keeps the tables, keys and secrets in the data stack only, retained but for the short-lived tables', () => {
    const stateful = ['AWS::DynamoDB::Table', 'AWS::KMS::Key', 'AWS::SecretsManager::Secret'];
    for (const kind of ['service', 'monitoring'] as const) {
      const found = Object.values(resourcesIn(nameOf(kind))).filter((resource) =>
        stateful.includes(resource.Type),
      );
      expect([kind, found]).toEqual([kind, []]);
    }
    const data = Object.values(resourcesIn(nameOf('data')));
    const ofType = (type: string) => data.filter((resource) => resource.Type === type);
    expect(ofType('AWS::DynamoDB::Table')).toHaveLength(tableKeys.length);
    // The escrow key, the card-tag tables' key, the card-tag secret's key and the key log's signing key;
    // the card-tag key's secret and the paging cursors' key.
    expect(ofType('AWS::KMS::Key')).toHaveLength(4);
    const secrets = ofType('AWS::SecretsManager::Secret');
    expect(secrets).toHaveLength(2);
    // The cursor key alone goes with the stack: losing it only makes outstanding cursors start again
    // (infra/cursor-secret.ts), and nothing stored is sealed under it.
    const isCursorKey = (resource: (typeof secrets)[number]) =>
      String(resource.Properties.Name).endsWith('-cursor-key');
    expect(secrets.filter(isCursorKey)).toHaveLength(1);
    for (const resource of [
      ...ofType('AWS::KMS::Key'),
      ...secrets.filter((secret) => !isCursorKey(secret)),
    ]) {
      expect([resource.DeletionPolicy, resource.UpdateReplacePolicy]).toEqual(['Retain', 'Retain']);
    }
    for (const resource of secrets.filter(isCursorKey)) {
      expect([resource.DeletionPolicy, resource.UpdateReplacePolicy]).toEqual(['Delete', 'Delete']);
    }
    // Tokens, counters and idempotency records (lib/kernel/tables.ts: not durable) go with the stack.
    for (const key of tableKeys) {
      const definition = tableDefinitions[key];
      const table = ofType('AWS::DynamoDB::Table').find(
        (resource) => resource.Properties.TableName === `receipt-service-test-${definition.name}`,
      );
      const policy = definition.durable ? 'Retain' : 'Delete';
      expect([key, table?.DeletionPolicy, table?.UpdateReplacePolicy]).toEqual([key, policy, policy]);
    }
  });

  it("runs nothing in the data stack: no function, and the escrow users' roles without their policies", () => {
    const types = new Set(Object.values(resourcesIn(nameOf('data'))).map((resource) => resource.Type));
    expect([...types].sort()).toEqual(
      [
        'AWS::DynamoDB::Table',
        'AWS::IAM::Role',
        'AWS::KMS::Alias',
        'AWS::KMS::Key',
        'AWS::SSM::Parameter',
        'AWS::SecretsManager::Secret',
      ].sort(),
    );
    const roles = Object.values(resourcesIn(nameOf('data'))).filter(
      (resource) => resource.Type === 'AWS::IAM::Role',
    );
    const escrowUsers = routes.filter((route) => route.escrow);
    expect(escrowUsers.length).toBeGreaterThan(0);
    expect(roles.map((role) => role.Properties.Description).sort()).toEqual(
      escrowUsers.map((route) => `receipt-service ${route.name}`).sort(),
    );
    for (const role of roles) {
      expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain('lambda.amazonaws.com');
      expect(role.Properties.Policies).toBeUndefined();
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
    // The escrow key names these roles, in its own stack: nothing the service stack deploys can add one.
    const [escrowKey] = Object.values(resourcesIn(nameOf('data'))).filter(
      (resource) => resource.Properties.KeySpec === 'RSA_2048',
    );
    const statements = (escrowKey?.Properties.KeyPolicy as { Statement: { Principal: { AWS: unknown } }[] })
      .Statement;
    const named = statements
      .flatMap((statement) => asArray(statement.Principal.AWS))
      .map((principal) => referencedId(principal))
      .filter((id): id is string => id !== undefined);
    expect(new Set(named)).toEqual(
      new Set(
        Object.entries(resourcesIn(nameOf('data')))
          .filter(([, resource]) => resource.Type === 'AWS::IAM::Role')
          .map(([id]) => id),
      ),
    );
  });

  it('changes only the service stack when functions change', () => {
    // A new log level for every function and more memory for one: what a code deployment changes.
    const changed = synthVariant({
      monitoring: true,
      settings: { logLevel: 'DEBUG' },
      routes: routes.map((route) => (route.name === 'health' ? { ...route, memoryMb: 1024 } : route)),
    }).templates.stacks;
    // Descriptions are the app's (infra/service-stacks.ts), which the variant leaves out.
    const body = ({ Resources, Outputs }: TemplateJson) => ({ Resources, Outputs });
    const unchanged = (kind: 'data' | 'monitoring') =>
      expect(body(changed[nameOf(kind)] as TemplateJson)).toEqual(body(stacks[nameOf(kind)] as TemplateJson));
    unchanged('data');
    unchanged('monitoring');
    expect(body(changed[nameOf('service')] as TemplateJson)).not.toEqual(
      body(stacks[nameOf('service')] as TemplateJson),
    );
  });

  it(`holds what the single stack of ${beforeTheSplit.commit.slice(0, 7)} held, by type and count, apart from the wiring`, () => {
    // The routes of that commit only, so that routes added since do not count as a difference.
    const before = routes.filter((route) => beforeTheSplit.functions.includes(route.name));
    const { stacks: split } = synthVariant({ monitoring: true, routes: before }).templates as StageTemplates;
    const functions = Object.values(split)
      .flatMap((template) => Object.values(template.Resources ?? {}))
      .filter((resource) => resource.Type === 'AWS::Lambda::Function')
      .map((resource) => String(resource.Properties?.FunctionName).replace('receipt-service-test-', ''))
      .sort();
    // A renamed route or function needs the fixture made again (fixtures/README.md).
    expect(functions).toEqual([...beforeTheSplit.functions, ...functionsAddedSinceTheSplit].sort());

    const expected = { ...beforeTheSplit.byType };
    for (const differences of [
      wiringDifferences,
      addedSinceTheSplit,
      definedByTheDocument,
      alarmsFromMetrics,
    ])
      for (const [type, difference] of Object.entries(differences))
        expected[type] = (expected[type] ?? 0) + difference;
    const counted = countByType(Object.values(split));
    expect(counted).toEqual(Object.fromEntries(Object.entries(expected).filter(([, count]) => count !== 0)));
  });
});
