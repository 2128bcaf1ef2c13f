import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Template } from 'aws-cdk-lib/assertions';
import { routes } from '../../functions/routes.js';
import { tierNames, tiers } from '../../lib/kernel/tiers.js';
import { usagePlanParameterName } from '../../lib/kernel/tiers.js';
import {
  functionByName,
  methodAt,
  referencedId,
  resourcesOf,
  sharedTemplate,
  type Resource,
} from './support.js';
import { synthVariant } from './variants.js';

let template: Template;

beforeAll(() => {
  template = sharedTemplate();
});

const methods = (): Resource[] => Object.values(resourcesOf(template, 'AWS::ApiGateway::Method'));
const methodFor = (path: string, httpMethod: string): Resource => methodAt(template, path, httpMethod);

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
  it('has one Lambda proxy method per route, on the function of that route', () => {
    const functionIds = Object.keys(resourcesOf(template, 'AWS::Lambda::Function'));
    for (const route of routes) {
      const method = methodFor(route.path, route.method);
      const integration = method.Properties.Integration as { Type: string; Uri: unknown };
      expect(integration.Type).toBe('AWS_PROXY');
      const [functionId] = functionByName(template, `receipt-service-test-${route.name}`);
      expect(JSON.stringify(integration.Uri)).toContain(`"${functionId}"`);
      expect(functionIds).toContain(functionId);
    }
    const proxied = methods().filter(
      (method) => (method.Properties.Integration as { Type: string }).Type === 'AWS_PROXY',
    );
    expect(proxied).toHaveLength(routes.length);
  });

  it('requires an API key everywhere but the public health, contract and reference page routes', () => {
    for (const route of routes) {
      expect([route.path, methodFor(route.path, route.method).Properties.ApiKeyRequired]).toEqual([
        route.path,
        route.apiKeyRequired,
      ]);
    }
    const open = routes.filter((route) => !route.apiKeyRequired).map((route) => route.name);
    expect(open).toContain('health');
    // The gateways' events are verified by their providers' signatures instead (test/infra/gateway-events.test.ts).
    for (const name of open) expect(['health', 'openapi', 'api-docs', 'gateway-events']).toContain(name);
  });

  it('declares and validates path parameters', () => {
    const create = methodFor('/api/v1/payments/{gateway}/create', 'POST');
    expect(create.Properties.RequestParameters).toEqual({ 'method.request.path.gateway': true });
    expect(create.Properties.RequestValidatorId).toBeDefined();
    template.hasResourceProperties('AWS::ApiGateway::RequestValidator', {
      ValidateRequestParameters: true,
      ValidateRequestBody: true,
    });
  });

  it('answers a method a known path lacks with 405 method_not_allowed and Allow', () => {
    const paths = [...new Set(routes.map((route) => route.path))];
    for (const path of paths) {
      const any = methodFor(path, 'ANY');
      const integration = any.Properties.Integration as {
        Type: string;
        IntegrationResponses: {
          StatusCode: string;
          ResponseTemplates: Record<string, string>;
          ResponseParameters: Record<string, string>;
        }[];
      };
      expect(integration.Type).toBe('MOCK');
      expect(any.Properties.ApiKeyRequired).toBe(false);
      const [response] = integration.IntegrationResponses.filter(
        (candidate) => candidate.StatusCode === '405',
      );
      expect(response?.StatusCode).toBe('405');
      const allowed = routes.filter((route) => route.path === path).map((route) => route.method);
      expect(response?.ResponseParameters['method.response.header.Allow']).toBe(`'${allowed.join(', ')}'`);
      expect(response?.ResponseParameters['method.response.header.X-Request-Id']).toBe('context.requestId');
      expect(render(response?.ResponseTemplates['application/json'] ?? '')).toEqual({
        ...envelope('method_not_allowed'),
        error: { ...envelope('method_not_allowed').error, details: { allowed } },
      });
    }
    // Resources without routes get a 404 ANY instead (test/infra/gateway-responses.test.ts).
    const anyMethods = methods().filter((method) => method.Properties.HttpMethod === 'ANY');
    const statusOf = (method: Resource) =>
      (method.Properties.Integration as { IntegrationResponses: { StatusCode: string }[] })
        .IntegrationResponses[0]?.StatusCode;
    expect(anyMethods.filter((method) => statusOf(method) === '405')).toHaveLength(paths.length);
    expect(anyMethods.every((method) => ['404', '405'].includes(statusOf(method) ?? ''))).toBe(true);
  });
});

describe('gateway responses', () => {
  const responses = (): Record<string, Resource['Properties']> =>
    Object.fromEntries(
      Object.values(resourcesOf(template, 'AWS::ApiGateway::GatewayResponse')).map((response) => [
        response.Properties.ResponseType as string,
        response.Properties,
      ]),
    );

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
    expect(response?.StatusCode).toBe(status);
    const body = (response?.ResponseTemplates as Record<string, string>)['application/json'] ?? '';
    expect(render(body)).toEqual(envelope(code));
  });

  it('gives every gateway response the request id header', () => {
    for (const response of Object.values(responses())) {
      expect(response.ResponseParameters).toMatchObject({
        'gatewayresponse.header.X-Request-Id': 'context.requestId',
      });
    }
  });

  it('tells throttled and over-quota callers when to retry', () => {
    for (const type of ['THROTTLED', 'QUOTA_EXCEEDED']) {
      expect(
        (responses()[type]?.ResponseParameters as Record<string, string>)[
          'gatewayresponse.header.Retry-After'
        ],
      ).toMatch(/^'\d+'$/);
    }
  });

  it("keeps API Gateway's own message where the catch-all has nothing better", () => {
    const body = (responses().DEFAULT_4XX?.ResponseTemplates as Record<string, string>)['application/json'];
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
    const variant = synthVariant({ context: { tiers: '{"free":{"burst":7}}' } });
    const [stack, overridden] = [variant.service, variant.templates.template];
    overridden.hasResourceProperties('AWS::ApiGateway::UsagePlan', {
      UsagePlanName: 'receipt-service-test-free',
      Throttle: { RateLimit: tiers.free.ratePerSecond, BurstLimit: 7 },
    });
    const warnings = stack.node.metadata.filter((entry) => entry.type === 'aws:cdk:warning');
    expect(JSON.stringify(warnings)).toContain('lib/kernel/tiers.ts');
  });
});
