import { beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { Template } from 'aws-cdk-lib/assertions';
import { routes } from '../../functions/routes.js';
import { tierNames, tiers } from '../../lib/kernel/tiers.js';
import { usagePlanParameterName } from '../../lib/kernel/tiers.js';
import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { publicView, readersProse, withoutProse } from '../../lib/openapi/views.js';
import {
  apiDefinitionOf,
  authorizerNameOf,
  functionByName,
  operationAt,
  operationsOf,
  referencedId,
  requiredSchemes,
  resourcesOf,
  sharedApp,
  sharedTemplate,
  type ApiDefinitionJson,
} from './support.js';
import { synthVariant } from './variants.js';

let template: Template;

beforeAll(() => {
  template = sharedTemplate();
});

const definition = (): ApiDefinitionJson => apiDefinitionOf(template);
const authorizerName = (): string => authorizerNameOf(definition());
const stageMethodSettings = (): Record<string, unknown>[] => {
  const [stage] = Object.values(resourcesOf(template, 'AWS::ApiGateway::Stage'));
  return stage?.Properties.MethodSettings as Record<string, unknown>[];
};
/**
 * Each template as synthesized (the service stack's unindented) stays below 60 % of CloudFormation's
 * 1 MB limit; test/infra/stacks.test.ts checks that 30 more routes still fit under it.
 */
const TEMPLATE_SIZE_BUDGET = 600_000;

/** Fills a template the way API Gateway does, with a quoted message as `$context.error.messageString` has. */
const render = (body: string): unknown =>
  JSON.parse(
    body
      .replaceAll('$context.error.messageString', JSON.stringify('Forbidden'))
      .replaceAll('$context.authorizer.timestamp', '2025-11-22T01:41:00.000Z')
      .replaceAll('$context.requestId', 'c0ffee00-0000-4000-8000-000000000000'),
  );

const envelope = (code: string) => ({
  success: false,
  error: {
    code,
    message: expect.any(String),
    timestamp: '2025-11-22T01:41:00.000Z',
    request_id: 'c0ffee00-0000-4000-8000-000000000000',
  },
});

describe('routes', () => {
  it('defines the API by its OpenAPI definition: no method, resource, authorizer or gateway response of its own', () => {
    for (const type of [
      'AWS::ApiGateway::Method',
      'AWS::ApiGateway::Resource',
      'AWS::ApiGateway::Authorizer',
      'AWS::ApiGateway::RequestValidator',
      'AWS::ApiGateway::GatewayResponse',
      'AWS::ApiGateway::Model',
    ])
      expect([type, Object.keys(resourcesOf(template, type))]).toEqual([type, []]);
    expect(Object.keys(resourcesOf(template, 'AWS::ApiGateway::RestApi'))).toHaveLength(1);
  });

  it('has exactly one operation per route, on its own function, with the authorizer, validator and throttle', () => {
    const settings = stageMethodSettings();
    const proxied = operationsOf(definition()).filter(
      ({ operation }) => operation['x-amazon-apigateway-integration']?.type === 'aws_proxy',
    );
    expect(proxied).toHaveLength(routes.length);
    for (const route of routes) {
      const matching = proxied.filter(({ path, method }) => path === route.path && method === route.method);
      expect([route.name, matching.length]).toEqual([route.name, 1]);
      const operation = operationAt(template, route.path, route.method);
      const integration = operation['x-amazon-apigateway-integration'];
      expect(integration).toMatchObject({ type: 'aws_proxy', httpMethod: 'POST' });
      // Its own function, by the name that function has in the template.
      functionByName(template, `receipt-service-test-${route.name}`);
      expect(JSON.stringify(integration?.uri)).toContain(
        `:function:receipt-service-test-${route.name}/invocations`,
      );
      expect(requiredSchemes(operation)).toEqual(
        (route.apiKeyRequired ? ['ApiKeyAuth', authorizerName()] : [authorizerName()]).sort(),
      );
      expect(operation['x-amazon-apigateway-request-validator']).toBe(
        route.path.includes('{') ? 'path-parameters' : undefined,
      );
      // Keyed routes are throttled by their tier's usage plan, the others by a stage setting of their own.
      const throttle = settings.filter(
        (setting) =>
          setting.HttpMethod === route.method &&
          setting.ResourcePath === `/${route.path.replaceAll('/', '~1')}`,
      );
      expect([route.name, throttle.length]).toEqual([route.name, route.apiKeyRequired ? 0 : 1]);
    }
  });

  it('lets API Gateway invoke each function from its own route on this stage only: one permission per function', () => {
    const [apiId] = Object.keys(resourcesOf(template, 'AWS::ApiGateway::RestApi'));
    const permissions = Object.values(resourcesOf(template, 'AWS::Lambda::Permission')).filter(
      (permission) => permission.Properties.Principal === 'apigateway.amazonaws.com',
    );
    // The routes' functions and the authorizer.
    expect(permissions).toHaveLength(routes.length + 1);
    for (const route of routes) {
      const [functionId] = functionByName(template, `receipt-service-test-${route.name}`);
      const own = permissions.filter(
        (permission) => referencedId(permission.Properties.FunctionName) === functionId,
      );
      expect([route.name, own.length]).toEqual([route.name, 1]);
      const sourceArn = JSON.stringify(own[0]?.Properties.SourceArn);
      expect(sourceArn).toContain(`"${apiId}"`);
      expect(sourceArn).toContain(`/test/${route.method}${route.path.replace(/\{[^}]+\}/g, '*')}"`);
    }
  });

  it('requires an API key everywhere but the public health, contract and reference page routes', () => {
    for (const route of routes) {
      expect([route.path, requiredSchemes(operationAt(template, route.path, route.method))]).toEqual([
        route.path,
        route.apiKeyRequired ? expect.arrayContaining(['ApiKeyAuth']) : [authorizerName()],
      ]);
    }
    const open = routes.filter((route) => !route.apiKeyRequired).map((route) => route.name);
    expect(open).toContain('health');
    // The gateways' events are verified by their providers' signatures instead (test/infra/gateway-events.test.ts).
    // The key log's routes and a merchant's JWKS are public by design (issue 39).
    const publicByDesign = ['health', 'openapi', 'api-docs', 'gateway-events'];
    publicByDesign.push('get-merchant-jwks', 'get-key-log-tree-head', 'get-key-log-public-key');
    publicByDesign.push('list-key-log-entries', 'prove-key-log-inclusion', 'prove-key-log-consistency');
    for (const name of open) expect(publicByDesign).toContain(name);
    // API Gateway's API key requirement: an apiKey scheme in the X-API-Key header.
    expect(definition().components.securitySchemes.ApiKeyAuth).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
    });
  });

  it('declares and validates path parameters, and leaves bodies to the functions', () => {
    const create = operationAt(template, '/api/v1/payments/{gateway}/create', 'POST');
    expect(create.parameters).toContainEqual(
      expect.objectContaining({ name: 'gateway', in: 'path', required: true }),
    );
    expect(create['x-amazon-apigateway-request-validator']).toBe('path-parameters');
    expect(definition()['x-amazon-apigateway-request-validators']).toEqual({
      'path-parameters': { validateRequestParameters: true, validateRequestBody: false },
    });
  });

  /** An operation's response, through the deployed view's shared responses (`$ref`) when it is one. */
  const responseOf = (operation: ReturnType<typeof operationAt>, status: string) => {
    const response = operation.responses?.[status] as { $ref?: string; headers?: Record<string, unknown> };
    const shared = response?.$ref?.replace('#/components/responses/', '');
    const components = (definition().components as { responses?: Record<string, typeof response> }).responses;
    return shared ? components?.[shared] : response;
  };

  it('answers a method a known path lacks with 405 method_not_allowed and Allow', () => {
    const paths = [...new Set(routes.map((route) => route.path))];
    for (const path of paths) {
      const any = operationAt(template, path, 'ANY');
      const integration = any['x-amazon-apigateway-integration'];
      expect(integration?.type).toBe('mock');
      expect(requiredSchemes(any)).toEqual([authorizerName()]);
      const response = integration?.responses?.default;
      expect(response?.statusCode).toBe('405');
      const allowed = routes.filter((route) => route.path === path).map((route) => route.method);
      expect(response?.responseParameters?.['method.response.header.Allow']).toBe(`'${allowed.join(', ')}'`);
      expect(response?.responseParameters?.['method.response.header.X-Request-Id']).toBe('context.requestId');
      // A header is mapped only when the method response declares it.
      expect(Object.keys(responseOf(any, '405')?.headers ?? {}).sort()).toEqual(
        Object.keys(response?.responseParameters ?? {})
          .map((name) => name.slice('method.response.header.'.length))
          .sort(),
      );
      expect(render(response?.responseTemplates?.['application/json'] ?? '')).toEqual({
        ...envelope('method_not_allowed'),
        error: { ...envelope('method_not_allowed').error, details: { allowed } },
      });
    }
    // Paths without routes get a 404 ANY instead (test/infra/gateway-responses.test.ts).
    const anyMethods = operationsOf(definition()).filter(({ method }) => method === 'ANY');
    const statusOf = ({ operation }: (typeof anyMethods)[number]) =>
      operation['x-amazon-apigateway-integration']?.responses?.default?.statusCode;
    expect(anyMethods.filter((method) => statusOf(method) === '405')).toHaveLength(paths.length);
    expect(anyMethods.every((method) => ['404', '405'].includes(statusOf(method) ?? ''))).toBe(true);
  });
});

describe('one document, two views', () => {
  /** What the deployed view leaves out or changes for API Gateway, and nothing else. */
  const deployedOnly = (document: Record<string, unknown>) => {
    const info = document.info as Record<string, unknown>;
    return {
      ...document,
      // API Gateway imports OpenAPI 3.0, not 3.1 (infra/api-definition.ts).
      openapi: undefined,
      // The reader's introduction; the deployed view has the REST API's one-line description instead.
      info: { ...info, description: undefined },
    };
  };

  it('is the public document once API Gateway’s members are taken away', () => {
    const deployed = definition() as unknown as Record<string, unknown>;
    // Tokens (the functions' ARNs) sit only in x-amazon members, which publicView removes.
    const published = JSON.parse(JSON.stringify(buildOpenApiDocument(routes))) as Record<string, unknown>;
    // The reader's prose (descriptions, summaries, examples) is left out to keep the template small.
    expect(readersProse).toEqual(['description', 'summary', 'example', 'examples']);
    expect(deployedOnly(publicView(deployed))).toEqual(deployedOnly(withoutProse(published)));
    expect(deployed.openapi).toBe('3.0.1');
    expect(published.openapi).toBe('3.1.0');
    expect((deployed.info as { description: string }).description).toBe('Encrypted digital receipts (test)');
  });

  it('publishes no x-amazon member', () => {
    expect(JSON.stringify(buildOpenApiDocument(routes))).not.toContain('"x-amazon-');
    expect(JSON.stringify(definition())).toContain('"x-amazon-apigateway-integration"');
  });

  it('keeps each template well under CloudFormation’s 1 MB limit', () => {
    for (const [name, stack] of Object.entries(sharedApp().templates.stacks))
      expect([name, JSON.stringify(stack).length < TEMPLATE_SIZE_BUDGET]).toEqual([name, true]);
  });
});

describe('gateway responses', () => {
  const responses = () => definition()['x-amazon-apigateway-gateway-responses'];

  it.each([
    ['INVALID_API_KEY', '401', 'unauthorized'],
    ['MISSING_AUTHENTICATION_TOKEN', '404', 'not_found'],
    ['RESOURCE_NOT_FOUND', '404', 'not_found'],
    ['THROTTLED', '429', 'rate_limit_exceeded'],
    ['QUOTA_EXCEEDED', '429', 'rate_limit_exceeded'],
    // The edge authorizer's Deny: a refused key (test/infra/edge-authorizer.test.ts).
    ['ACCESS_DENIED', '401', 'unauthorized'],
    ['REQUEST_TOO_LARGE', '413', 'payload_too_large'],
    ['UNSUPPORTED_MEDIA_TYPE', '415', 'unsupported_media_type'],
    ['BAD_REQUEST_BODY', '400', 'invalid_request'],
    ['INTEGRATION_TIMEOUT', '503', 'service_unavailable'],
    ['DEFAULT_4XX', undefined, 'invalid_request'],
    ['DEFAULT_5XX', undefined, 'internal_server_error'],
  ])('%s → %s %s in the service envelope', (type, status, code) => {
    const response = responses()[type];
    expect(response).toBeDefined();
    expect(response?.statusCode).toBe(status);
    const body = response?.responseTemplates['application/json'] ?? '';
    expect(render(body)).toEqual(envelope(code));
  });

  it('gives every gateway response the request id header', () => {
    for (const response of Object.values(responses())) {
      expect(response.responseParameters).toMatchObject({
        'gatewayresponse.header.X-Request-Id': 'context.requestId',
      });
    }
  });

  it('tells throttled and over-quota callers when to retry', () => {
    for (const type of ['THROTTLED', 'QUOTA_EXCEEDED']) {
      expect(responses()[type]?.responseParameters['gatewayresponse.header.Retry-After']).toMatch(/^'\d+'$/);
    }
  });

  it("keeps API Gateway's own message where the catch-all has nothing better", () => {
    const body = responses().DEFAULT_4XX?.responseTemplates['application/json'];
    expect(body).toContain('"message":$context.error.messageString,');
    expect((render(body ?? '') as { error: { message: string } }).error.message).toBe('Forbidden');
  });
});

describe('stage', () => {
  it('traces, writes JSON access logs and never logs bodies', () => {
    const [stage] = Object.values(resourcesOf(template, 'AWS::ApiGateway::Stage'));
    expect(stage?.Properties).toMatchObject({
      StageName: 'test',
      TracingEnabled: true,
      AccessLogSetting: { DestinationArn: expect.anything(), Format: expect.any(String) },
    });
    const format = JSON.parse((stage?.Properties.AccessLogSetting as { Format: string }).Format) as Record<
      string,
      string
    >;
    expect(format).toMatchObject({ requestId: '$context.requestId', status: '$context.status' });
    expect(Object.values(format)).not.toContain('$context.identity.apiKey');
    // Path values include token ids (DELETE /keys/tokens/{tokenId}), which are never logged.
    expect(Object.values(format)).not.toContain('$context.path');
    const settings = stage?.Properties.MethodSettings as Record<string, unknown>[];
    expect(settings).toContainEqual(
      expect.objectContaining({
        HttpMethod: '*',
        ResourcePath: '/*',
        LoggingLevel: 'ERROR',
        DataTraceEnabled: false,
      }),
    );
  });

  it('throttles the routes that no usage plan covers', () => {
    const [stage] = Object.values(resourcesOf(template, 'AWS::ApiGateway::Stage'));
    const settings = stage?.Properties.MethodSettings as Record<string, unknown>[];
    for (const route of routes.filter((candidate) => !candidate.apiKeyRequired)) {
      expect(settings).toContainEqual(
        expect.objectContaining({
          HttpMethod: route.method,
          ResourcePath: `/${route.path.replaceAll('/', '~1')}`,
          LoggingLevel: 'ERROR',
          ThrottlingRateLimit: route.keylessBudget?.edge.ratePerSecond ?? 20,
          ThrottlingBurstLimit: route.keylessBudget?.edge.burst ?? 40,
        }),
      );
    }
  });
});

describe('usage plans', () => {
  it('has one plan per tier with the tier config limits, attached to the stage', () => {
    const plans = Object.values(resourcesOf(template, 'AWS::ApiGateway::UsagePlan'));
    expect(plans).toHaveLength(tierNames.length);
    const stageId = Object.keys(resourcesOf(template, 'AWS::ApiGateway::Stage'))[0];
    for (const tier of tierNames) {
      const plan = plans.find(
        (candidate) => candidate.Properties.UsagePlanName === `receipt-service-test-${tier}`,
      );
      expect(plan?.Properties).toMatchObject({
        Throttle: { RateLimit: tiers[tier].ratePerSecond, BurstLimit: tiers[tier].burst },
        Quota: { Limit: tiers[tier].dailyQuota, Period: 'DAY' },
      });
      const apiStages = plan?.Properties.ApiStages as { Stage: unknown }[];
      expect(apiStages.map((apiStage) => referencedId(apiStage.Stage))).toEqual([stageId]);
    }
  });

  it('publishes the plan ids as outputs and as the SSM parameters the admin CLI reads', () => {
    const plans = resourcesOf(template, 'AWS::ApiGateway::UsagePlan');
    const planIdOf = (tier: string) =>
      Object.entries(plans).find(
        ([, plan]) => plan.Properties.UsagePlanName === `receipt-service-test-${tier}`,
      )?.[0];
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    const parameters = Object.values(resourcesOf(template, 'AWS::SSM::Parameter'));
    for (const tier of tierNames) {
      const output = outputs[`UsagePlanId${tier.charAt(0).toUpperCase()}${tier.slice(1)}`];
      expect(referencedId(output?.Value)).toBe(planIdOf(tier));
      const parameter = parameters.find(
        (candidate) => candidate.Properties.Name === usagePlanParameterName('test', tier),
      );
      expect(referencedId(parameter?.Properties.Value)).toBe(planIdOf(tier));
    }
  });

  it('follows tier overrides given as context, and warns that the service limiter does not', () => {
    // CDK prints a synthesis's warnings to the console; this one is expected, so it is read, not shown.
    const printed: unknown[] = [];
    const spy = jest.spyOn(console, 'error').mockImplementation((...args) => void printed.push(...args));
    const variant = (() => {
      try {
        return synthVariant({ context: { tiers: '{"free":{"burst":7}}' } });
      } finally {
        spy.mockRestore();
      }
    })();
    expect(printed.join(' ')).toContain('Usage plans differ from lib/kernel/tiers.ts');
    const [stack, overridden] = [variant.service, variant.templates.template];
    overridden.hasResourceProperties('AWS::ApiGateway::UsagePlan', {
      UsagePlanName: 'receipt-service-test-free',
      Throttle: { RateLimit: tiers.free.ratePerSecond, BurstLimit: 7 },
    });
    const warnings = stack.node.metadata.filter((entry) => entry.type === 'aws:cdk:warning');
    expect(JSON.stringify(warnings)).toContain('lib/kernel/tiers.ts');
  });
});
