import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { findRoute, routes } from '../../functions/routes.js';
import {
  asArray,
  functionByName,
  operationAt,
  requiredSchemes,
  roleIdOf,
  resourcesOf,
  sharedTemplate,
  statementsOfRole,
  type Resource,
} from './support.js';
import { buildVariant, synthVariant } from './variants.js';

/**
 * The gateways' own webhooks in the deployed stack: a route without an API key (the providers sign
 * instead) with a budget of its own at the edge, and the webhook signing secrets readable by the
 * function that verifies them and no other.
 */
const route = findRoute('gateway-events');
const eventsFunction = `receipt-service-test-${route.name}`;
const webhookSecrets = [
  '/test/receipt-service/stripe-webhook-secret',
  '/test/receipt-service/square-webhook-signature-key',
];

let template: Template;

beforeAll(() => {
  template = sharedTemplate();
});

// A function that uses escrow runs as a role of the data stack, named beside the key (roleIdOf).
const roleOf = (name: string): string => roleIdOf(functionByName(template, name)[1]);
const variablesOf = (name: string): Record<string, unknown> =>
  (functionByName(template, name)[1].Properties.Environment as { Variables: Record<string, unknown> })
    .Variables;

/** The secret names a role may read with GetSecretValue, from the ARNs CloudFormation builds. */
function readableSecrets(roleId: string): string[] {
  return statementsOfRole(template, roleId)
    .filter((statement) => asArray(statement.Action).includes('secretsmanager:GetSecretValue'))
    .flatMap((statement) => asArray(statement.Resource))
    .map((resource) => JSON.stringify(resource))
    .flatMap((text) => [...text.matchAll(/secret:([^"]+?)-\?\?\?\?\?\?/g)].map((match) => match[1]!));
}

describe('the gateways’ events route', () => {
  it('needs no API key: each event is verified by its provider’s signature', () => {
    const operation = operationAt(template, route.path, 'POST');
    expect(requiredSchemes(operation)).not.toContain('ApiKeyAuth');
    expect(operation['x-amazon-apigateway-integration']?.type).toBe('aws_proxy');
    // The edge authorizer runs on every method (it gives API Gateway's own answers their timestamp and
    // rate-limit headers), and lets through every method it is not told is keyed: this one is not.
    const keyed = String(
      (
        functionByName(template, 'receipt-service-test-edge-authorizer')[1].Properties.Environment as {
          Variables: Record<string, unknown>;
        }
      ).Variables.EDGE_KEYED_ROUTES,
    );
    expect(keyed).toContain('POST /api/v1/payments/{gateway}/create');
    expect(keyed).not.toContain(route.path);
  });

  it('has a throttle of its own at the edge, apart from the other keyless routes', () => {
    const [stage] = Object.values(resourcesOf(template, 'AWS::ApiGateway::Stage')) as Resource[];
    const settings = stage?.Properties.MethodSettings as Record<string, unknown>[];
    expect(settings).toContainEqual(
      expect.objectContaining({
        HttpMethod: 'POST',
        ResourcePath: `/${route.path.replaceAll('/', '~1')}`,
        ThrottlingRateLimit: route.keylessBudget!.edge.ratePerSecond,
        ThrottlingBurstLimit: route.keylessBudget!.edge.burst,
      }),
    );
    expect(route.keylessBudget!.edge.ratePerSecond).not.toBe(20);
  });

  it('lets the events function alone read the webhook signing secrets', () => {
    expect(readableSecrets(roleOf(eventsFunction)).sort()).toEqual(
      expect.arrayContaining([...webhookSecrets].sort()),
    );
    for (const other of routes.filter((candidate) => candidate.name !== route.name)) {
      const readable = readableSecrets(roleOf(`receipt-service-test-${other.name}`));
      expect([other.name, readable.filter((name) => webhookSecrets.includes(name))]).toEqual([
        other.name,
        [],
      ]);
    }
    for (const name of ['edge-authorizer', 'webhook-dispatch', 'webhook-sweep']) {
      expect(readableSecrets(roleOf(`receipt-service-test-${name}`))).toEqual([]);
    }
  });

  it('tells only the events function where the secrets are and which URL Square signs', () => {
    const variables = variablesOf(eventsFunction);
    expect(variables).toMatchObject({
      STRIPE_WEBHOOK_SECRET_NAME: webhookSecrets[0],
      SQUARE_WEBHOOK_SECRET_NAME: webhookSecrets[1],
    });
    // The stage's own events URL on execute-api, built from the API's id.
    expect(JSON.stringify(variables.SQUARE_WEBHOOK_URL)).toContain('/test/api/v1/gateways/gateway_b/events');
    for (const other of routes.filter((candidate) => candidate.name !== route.name)) {
      expect(variablesOf(`receipt-service-test-${other.name}`)).not.toHaveProperty(
        'STRIPE_WEBHOOK_SECRET_NAME',
      );
    }
    const custom = synthVariant({
      settings: { squareWebhookUrl: 'https://api.example.com/v1/square' },
    }).templates.template;
    const customVariables = (
      functionByName(custom, eventsFunction)[1].Properties.Environment as {
        Variables: Record<string, unknown>;
      }
    ).Variables;
    expect(customVariables.SQUARE_WEBHOOK_URL).toBe('https://api.example.com/v1/square');
  });

  it('leaves cdk-nag nothing unacknowledged', () => {
    const { data, service } = buildVariant();
    for (const stack of [data, service]) {
      expect(new AwsSolutionsChecks().validateScope(stack).violations).toEqual([]);
    }
  });
});

describe('the events route at the edge (WAF)', () => {
  type Rule = { Name: string; Action: unknown; Statement: Record<string, unknown> };
  const aclOf = (from: Template) => {
    const acls = Object.values(resourcesOf(from, 'AWS::WAFv2::WebACL'));
    expect(acls).toHaveLength(1);
    return acls[0]!.Properties as { Scope: string; DefaultAction: unknown; Rules: Rule[] };
  };

  it('limits each source address on the route, and is associated with the stage', () => {
    const acl = aclOf(template);
    expect(acl).toMatchObject({ Scope: 'REGIONAL', DefaultAction: { Allow: {} } });
    // No allow-list configured by default: every address, each limited.
    expect(acl.Rules.map((rule) => rule.Name)).toEqual(['gateway-events-per-source']);
    expect(acl.Rules[0]).toMatchObject({
      Action: { Block: {} },
      Statement: {
        RateBasedStatement: {
          AggregateKeyType: 'IP',
          EvaluationWindowSec: 60,
          Limit: 600,
          ScopeDownStatement: {
            ByteMatchStatement: {
              FieldToMatch: { UriPath: {} },
              PositionalConstraint: 'CONTAINS',
              SearchString: '/api/v1/gateways/',
            },
          },
        },
      },
    });
    const [association] = Object.values(resourcesOf(template, 'AWS::WAFv2::WebACLAssociation'));
    // The stage's ARN: arn:…:apigateway:…::/restapis/<api>/stages/test.
    expect(JSON.stringify(association!.Properties.ResourceArn)).toContain('/stages/');
    expect(JSON.stringify(association!.Properties.ResourceArn)).toContain('test');
    expect(resourcesOf(template, 'AWS::WAFv2::IPSet')).toEqual({});
  });

  it("with the providers' addresses configured, answers nobody else on the route", () => {
    const custom = synthVariant({
      settings: {
        gatewayEventSourceCidrs: ['3.18.12.63/32', '54.187.174.169/32'],
        gatewayEventsPerSourcePerMinute: 100,
      },
    }).templates.template;
    const acl = aclOf(custom);
    expect(acl.Rules.map((rule) => rule.Name)).toEqual([
      'gateway-events-from-providers-only',
      'gateway-events-per-source',
    ]);
    const [ipSet] = Object.values(resourcesOf(custom, 'AWS::WAFv2::IPSet'));
    expect(ipSet!.Properties).toMatchObject({
      Addresses: ['3.18.12.63/32', '54.187.174.169/32'],
      IPAddressVersion: 'IPV4',
    });
    const block = JSON.stringify(acl.Rules[0]!.Statement);
    expect(block).toContain('NotStatement');
    expect(block).toContain('/api/v1/gateways/');
    expect(acl.Rules[1]!.Statement).toMatchObject({ RateBasedStatement: { Limit: 100 } });
  });

  it('refuses a source that is not a CIDR at synth', () => {
    expect(() => buildVariant({ settings: { gatewayEventSourceCidrs: ['stripe.com'] } })).toThrow(
      /gatewayEventSourceCidrs/,
    );
  });
});
