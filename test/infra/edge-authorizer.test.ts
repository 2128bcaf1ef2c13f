import { execFileSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Template } from 'aws-cdk-lib/assertions';
import { EDGE_AUTHORIZER_CACHE_SECONDS } from '../../lib/api-keys/edge-authorizer.js';
import { edgeAuthorizerFunction } from '../../functions/platform/edge-authorizer/function.js';
import { routes } from '../../functions/routes.js';
import { tableDefinitions } from '../../lib/kernel/tables.js';
import {
  apiDefinitionOf,
  asArray,
  authorizerNameOf,
  functionByName,
  operationAt,
  operationsOf,
  referencedId,
  requiredSchemes,
  resourcesOf,
  roleIdOf,
  sharedTemplate,
  statementsOfRole,
  type ApiDefinitionJson,
  type Resource,
} from './support.js';
import { bundleFunction } from './variants.js';

/**
 * The edge keys: API Gateway takes usage-plan keys from a Lambda authorizer that checks X-API-Key by
 * its hash, so no API Gateway key holds a client's secret, while the usage plans still throttle each
 * client at the edge.
 */
let template: Template;
let authorizerFunctionId: string;
let authorizerFunction: Resource;
let definition: ApiDefinitionJson;
/** The authorizer: the definition's Lambda authorizer security scheme. */
let authorizerName: string;

beforeAll(() => {
  template = sharedTemplate();
  [authorizerFunctionId, authorizerFunction] = functionByName(
    template,
    'receipt-service-test-edge-authorizer',
  );
  definition = apiDefinitionOf(template);
  authorizerName = authorizerNameOf(definition);
});

const apiKeysTableId = (): string => {
  const entry = Object.entries(resourcesOf(template, 'AWS::DynamoDB::Table')).find(
    ([, table]) => table.Properties.TableName === `receipt-service-test-${tableDefinitions.apiKeys.name}`,
  );
  if (!entry) throw new Error('No api-keys table');
  return entry[0];
};

describe('the REST API', () => {
  it('takes usage-plan keys from the authorizer, not from the X-API-Key header', () => {
    expect(definition['x-amazon-apigateway-api-key-source']).toBe('AUTHORIZER');
  });

  it('has one REQUEST authorizer on the function, run for every request: no identity source, no cache', () => {
    expect(authorizerName).toBe('receipt-service-test-edge');
    const authorizer = definition.components.securitySchemes[authorizerName]?.[
      'x-amazon-apigateway-authorizer'
    ] as Record<string, unknown>;
    expect(authorizer).toMatchObject({
      type: 'request',
      authorizerResultTtlInSeconds: EDGE_AUTHORIZER_CACHE_SECONDS,
    });
    // A missing X-API-Key reaches the authorizer too, and every answer is the request's own.
    expect(authorizer.identitySource).toBeUndefined();
    expect(EDGE_AUTHORIZER_CACHE_SECONDS).toBe(0);
    expect(JSON.stringify(authorizer.authorizerUri)).toContain(
      ':function:receipt-service-test-edge-authorizer/invocations',
    );
    expect(authorizerFunction.Properties.FunctionName).toBe('receipt-service-test-edge-authorizer');
  });

  it.each(routes.filter((route) => route.apiKeyRequired).map((route) => [route.name, route] as const))(
    '%s: the authorizer, and an API key required so its tier plan throttles it',
    (_name, route) => {
      const operation = operationAt(template, route.path, route.method);
      // API Gateway reads each requirement: the API key (ApiKeyAuth) and the Lambda authorizer.
      expect(operation.security).toEqual([{ ApiKeyAuth: [] }, { [authorizerName]: [] }]);
    },
  );

  it('puts the public routes and the 404/405 answers behind the authorizer too, without a key', () => {
    // The authorizer lets anyone through there: it only gives their gateway responses the request's
    // time and the source IP's budget (lib/api-keys/edge-authorizer.ts, EDGE_KEYED_ROUTES).
    const open = routes.filter((route) => !route.apiKeyRequired);
    // The gateways' events are signed by their providers instead (test/infra/gateway-events.test.ts).
    expect(open.map((route) => route.name).sort()).toEqual([
      'api-docs',
      'gateway-events',
      'get-key-log-public-key',
      'get-key-log-tree-head',
      'get-merchant-jwks',
      'health',
      'list-key-log-entries',
      'openapi',
      'prove-key-log-consistency',
      'prove-key-log-inclusion',
    ]);
    const operations = operationsOf(definition);
    const unkeyed = [
      ...open.map((route) => operationAt(template, route.path, route.method)),
      ...operations.filter(({ method }) => method === 'ANY').map(({ operation }) => operation),
    ];
    expect(unkeyed.length).toBeGreaterThan(open.length);
    for (const operation of unkeyed) expect(requiredSchemes(operation)).toEqual([authorizerName]);
    expect(operations.every(({ operation }) => requiredSchemes(operation).includes(authorizerName))).toBe(
      true,
    );
    // Which methods need a key is the route table's say, passed to the function.
    const variables = (authorizerFunction.Properties.Environment as { Variables: Record<string, string> })
      .Variables;
    const keyed = (variables.EDGE_KEYED_ROUTES ?? '').split(',');
    expect(keyed).toHaveLength(routes.filter((route) => route.apiKeyRequired).length);
    expect(keyed).toContain('POST /api/v1/payments/{gateway}/create=payments');
    for (const route of open)
      expect(keyed.some((entry) => entry.startsWith(`${route.method} ${route.path}=`))).toBe(false);
  });

  it('lets API Gateway invoke the authorizer from this API only', () => {
    const permissions = Object.values(resourcesOf(template, 'AWS::Lambda::Permission')).filter(
      (permission) => referencedId(permission.Properties.FunctionName) === authorizerFunctionId,
    );
    expect(permissions).toHaveLength(1);
    expect(permissions[0]?.Properties.Principal).toBe('apigateway.amazonaws.com');
    const sourceArn = JSON.stringify(permissions[0]?.Properties.SourceArn);
    expect(sourceArn).toContain('/authorizers/');
    const [apiId] = Object.keys(resourcesOf(template, 'AWS::ApiGateway::RestApi'));
    expect(sourceArn).toContain(`"${apiId}"`);
  });

  it('logs the client the authorizer found and the time it added, never a key value', () => {
    const [stage] = Object.values(resourcesOf(template, 'AWS::ApiGateway::Stage'));
    const format = JSON.parse((stage?.Properties.AccessLogSetting as { Format: string }).Format) as Record<
      string,
      string
    >;
    expect(format).toMatchObject({
      clientId: '$context.authorizer.principalId',
      authorizerLatencyMs: '$context.authorizer.latency',
    });
    expect(Object.values(format)).not.toContain('$context.identity.apiKey');
  });
});

describe('the authorizer function', () => {
  it('is a house function: Node.js 24 on arm64, traced, its own log group, a short timeout', () => {
    expect(authorizerFunction.Properties).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      TracingConfig: { Mode: 'Active' },
      Timeout: 5,
    });
    const logGroupId =
      referencedId((authorizerFunction.Properties.LoggingConfig as { LogGroup: unknown }).LogGroup) ?? '';
    expect(resourcesOf(template, 'AWS::Logs::LogGroup')[logGroupId]?.Properties.RetentionInDays).toBe(365);
  });

  it('is given the api-keys and rate-limits tables and its environment, nothing else', () => {
    const variables = (authorizerFunction.Properties.Environment as { Variables: Record<string, unknown> })
      .Variables;
    expect(Object.keys(variables).filter((key) => key.startsWith('TABLE_'))).toEqual([
      'TABLE_API_KEYS',
      'TABLE_RATE_LIMITS',
    ]);
    expect(referencedId(variables.TABLE_API_KEYS)).toBe(apiKeysTableId());
    // A staging stage: only rk_test_ keys pass.
    expect(variables.API_KEY_ENVIRONMENT).toBe('test');
    for (const absent of [
      'ESCROW_KMS_KEY_ID',
      'STRIPE_SECRET_NAME',
      'SQUARE_SECRET_NAME',
      'PAYMENT_GATEWAYS',
    ])
      expect(variables).not.toHaveProperty(absent);
  });

  it('may only GetItem on the api-keys table and read the rate counters, besides its logs and traces', () => {
    const roleId = roleIdOf(authorizerFunction);
    const statements = statementsOfRole(template, roleId);
    const data = statements.filter((statement) =>
      asArray(statement.Action).some((action) => !action.startsWith('logs:') && !action.startsWith('xray:')),
    );
    expect(data).toHaveLength(2);
    expect(data[0]?.Action).toBe('dynamodb:GetItem');
    expect(asArray(data[0]?.Resource).map((resource) => referencedId(resource))).toEqual([apiKeysTableId()]);
    // Never a write: the functions count, the authorizer only reports.
    expect(data[1]?.Action).toBe('dynamodb:BatchGetItem');
    expect(resourcesOf(template, 'AWS::IAM::Role')[roleId]?.Properties.ManagedPolicyArns).toBeUndefined();
  });
});

describe('gateway responses for the authorizer', () => {
  const responses = () => definition['x-amazon-apigateway-gateway-responses'];
  const body = (type: string): string => responses()[type]?.responseTemplates['application/json'] ?? '';
  /** Fills a template the way API Gateway does (test/infra/gateway-responses.test.ts renders them all). */
  const render = (template: string, message: string): unknown =>
    JSON.parse(
      template
        .replaceAll('$context.authorizer.message', message)
        .replaceAll('$context.authorizer.timestamp', '2025-11-22T01:41:00.000Z')
        .replaceAll('$context.requestId', 'c0ffee00-0000-4000-8000-000000000000'),
    );

  it("answers a refused key with 401 unauthorized and the authorizer's reason", () => {
    expect(responses().ACCESS_DENIED?.statusCode).toBe('401');
    const reason = 'This is a test (staging) API key; this is the live (production) environment';
    expect(render(body('ACCESS_DENIED'), reason)).toEqual({
      success: false,
      error: {
        code: 'unauthorized',
        message: reason,
        timestamp: '2025-11-22T01:41:00.000Z',
        request_id: 'c0ffee00-0000-4000-8000-000000000000',
      },
    });
  });

  it('keeps UNAUTHORIZED (an identity source missing, which no longer happens) a 401 unauthorized', () => {
    expect(responses().UNAUTHORIZED?.statusCode).toBe('401');
    expect(render(body('UNAUTHORIZED'), '')).toMatchObject({
      error: { code: 'unauthorized', message: 'Missing or invalid API key' },
    });
  });

  it('answers an authorizer that failed with 503 service_unavailable, not a refusal', () => {
    expect(responses().AUTHORIZER_FAILURE?.statusCode).toBe('503');
    expect(render(body('AUTHORIZER_FAILURE'), '')).toMatchObject({
      error: { code: 'service_unavailable' },
    });
  });

  it('keeps answering a usage identifier with no API Gateway key (revoked, not migrated) as 401', () => {
    expect(responses().INVALID_API_KEY?.statusCode).toBe('401');
    expect(render(body('INVALID_API_KEY'), '')).toMatchObject({ error: { code: 'unauthorized' } });
  });
});

describe('the authorizer bundle', () => {
  it('bundles through the house construct (bundle guard included) and loads under Node', () => {
    // The other assertions skip esbuild; this one bundles the authorizer for real.
    const { outdir, assetDir } = bundleFunction(edgeAuthorizerFunction);
    try {
      // No payment SDKs beside it: the authorizer reaches no gateway.
      expect(readdirSync(assetDir).sort()).toEqual(['index.mjs', 'index.mjs.map']);
      const loaded = execFileSync(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const m = await import(${JSON.stringify(pathToFileURL(join(assetDir, 'index.mjs')).href)}); console.log(typeof m.handler);`,
        ],
        { encoding: 'utf8' },
      );
      expect(loaded.trim()).toBe('function');
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 120_000);
});
