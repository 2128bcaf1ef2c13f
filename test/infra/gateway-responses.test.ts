import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import type { Template } from 'aws-cdk-lib/assertions';
import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import * as z from 'zod';
import { routes } from '../../functions/routes.js';
import {
  edgeErrorResponses,
  renderEdgeAnswer,
  type EdgeAnswer,
  type EdgeRequestContext,
} from '../../infra/gateway-responses.js';
import {
  authorizeEdge,
  edgeRouteKey,
  formatKeyedRoutes,
  parseKeyedRoutes,
  type EdgeAuthorizerDeps,
} from '../../lib/api-keys/edge-authorizer.js';
import { ApiKeyAuthenticator, newApiKeyRecord } from '../../lib/api-keys/authenticator.js';
import { ApiKeyRepository } from '../../lib/db/api-keys.js';
import { createDynamoClients } from '../../lib/db/client.js';
import { ensureTables } from '../../lib/db/create-tables.js';
import { RateLimiter } from '../../lib/db/rate-limits.js';
import { ManualClock } from '../../lib/kernel/clock.js';
import { createLogger } from '../../lib/kernel/log.js';
import { rateGroupOf } from '../../lib/kernel/route.js';
import { prefixedTableNames } from '../../lib/kernel/tables.js';
import { tiers } from '../../lib/kernel/tiers.js';
import { errorEnvelope } from '../../lib/openapi/envelopes.js';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  apiDefinitionOf,
  authorizerNameOf,
  operationsOf,
  requiredSchemes,
  resourcesOf,
  sharedTemplate,
  type ApiOperation,
} from './support.js';

/**
 * What API Gateway answers by itself, as deployed: each gateway response and mock answer of the
 * synthesized template's API definition (x-amazon-apigateway-gateway-responses and the mock ANY methods), rendered the way API Gateway renders it (variables substituted, nothing
 * else: gateway response templates are not VTL) with the context the edge authorizer really gives,
 * must be the documented error envelope with an ISO 8601 timestamp and the X-RateLimit-* headers of
 * the limit that binds.
 */
let template: Template;

/** A gateway response of the definition, with its type. */
interface GatewayResponse {
  type: string;
  statusCode?: string;
  responseParameters: Record<string, string>;
  responseTemplates: Record<string, string>;
}
const gatewayResponses = (): GatewayResponse[] =>
  Object.entries(apiDefinitionOf(template)['x-amazon-apigateway-gateway-responses']).map(
    ([type, response]) => ({ type, ...response }),
  );

const mockMethods = (): ApiOperation[] =>
  operationsOf(apiDefinitionOf(template))
    .map(({ operation }) => operation)
    .filter((operation) => operation['x-amazon-apigateway-integration']?.type === 'mock');

/** A gateway response of the definition as the declaration it came from (status, template, headers). */
function answerOf(response: GatewayResponse): EdgeAnswer {
  const prefix = 'gatewayresponse.header.';
  return {
    statusCode: response.statusCode ?? (response.type.endsWith('5XX') ? '500' : '400'),
    template: response.responseTemplates['application/json'] ?? '',
    headers: Object.fromEntries(
      Object.entries(response.responseParameters).map(([name, value]) => [name.slice(prefix.length), value]),
    ),
  };
}

function answerOfMock(method: ApiOperation): EdgeAnswer {
  const response = method['x-amazon-apigateway-integration']?.responses?.default;
  const prefix = 'method.response.header.';
  return {
    statusCode: response?.statusCode ?? '',
    template: response?.responseTemplates?.['application/json'] ?? '',
    headers: Object.fromEntries(
      Object.entries(response?.responseParameters ?? {}).map(([name, value]) => [
        name.slice(prefix.length),
        value,
      ]),
    ),
  };
}

// The authorizer's context comes from the authorizer itself, on DynamoDB Local's counters.
const endpoint = process.env.TEST_DYNAMODB_ENDPOINT as string;
const names = prefixedTableNames(`edge-responses-${process.pid}-${Date.now()}-`);
const { client, doc } = createDynamoClients({ region: 'us-east-1', endpoint });
const keyedRoutes = parseKeyedRoutes(
  formatKeyedRoutes(
    routes
      .filter((route) => route.apiKeyRequired)
      .map((route) => ({ method: route.method, path: route.path, group: rateGroupOf(route) })),
  ),
);
const limiter = new RateLimiter(doc, names.rateLimits);
const deps: EdgeAuthorizerDeps = {
  authenticator: new ApiKeyAuthenticator(
    new ApiKeyRepository(doc, names.apiKeys),
    new ManualClock(),
    0,
    'live',
  ),
  logger: createLogger({ level: 'SILENT' }),
  rates: { limiter, tiers, anonymousRequestsPerMinute: 60, keyedRoutes },
};
const requestTimeEpoch = Date.parse('2026-11-25T17:41:07.123Z');
const authorizerEvent = (
  apiKey: string | undefined,
  resource = '/api/v1/receipts/encrypt',
  method = 'POST',
) =>
  ({
    type: 'REQUEST',
    methodArn: `arn:aws:execute-api:eu-west-1:123456789012:abc123/test/${method}${resource}`,
    resource,
    path: resource,
    httpMethod: method,
    headers: apiKey ? { 'X-API-Key': apiKey } : {},
    requestContext: { requestId: randomUUID(), requestTimeEpoch, identity: { sourceIp: '203.0.113.9' } },
  }) as unknown as APIGatewayRequestAuthorizerEvent;

const isoTimestamp = z.iso.datetime({ offset: true });
const integerHeader = /^\d+$/;
let allowedContext: Record<string, string>;
let deniedContext: Record<string, string>;
let publicContext: Record<string, string>;
let keyRecord: { keyId: string };

beforeAll(async () => {
  template = sharedTemplate();
  await ensureTables(client, names, { timeToLive: false });
  const created = newApiKeyRecord(
    { name: 'POS', roles: ['merchant'], tier: 'standard', environment: 'live' },
    new Date(),
  );
  await new ApiKeyRepository(doc, names.apiKeys).create(created.record);
  keyRecord = created.record;
  // Some of the minute spent, and most of the day: the day is the limit that binds.
  const now = new Date(requestTimeEpoch);
  for (let i = 0; i < 3; i++) await limiter.hit(`key#${created.record.keyId}#general`, 3_000, 60, now);
  await limiter.hit(`day#${created.record.keyId}`, tiers.standard.dailyQuota, 86_400, now, 1);
  const strings = (context: unknown) =>
    Object.fromEntries(Object.entries(context as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
  allowedContext = strings((await authorizeEdge(authorizerEvent(created.apiKey), deps)).context);
  deniedContext = strings((await authorizeEdge(authorizerEvent(undefined), deps)).context);
  publicContext = strings(
    (await authorizeEdge(authorizerEvent(undefined, '/{proxy+}', 'PUT'), deps)).context,
  );
});

/** Each gateway response under the context API Gateway has when it makes it. */
function contextFor(type: string): EdgeRequestContext {
  const base = { requestId: randomUUID(), errorMessage: 'Forbidden' };
  if (type === 'ACCESS_DENIED' || type === 'UNAUTHORIZED') return { ...base, authorizer: deniedContext };
  return { ...base, authorizer: allowedContext };
}

describe('the edge authorizer', () => {
  it('runs for every request (no identity source, no result cache) and guards every method', () => {
    const definition = apiDefinitionOf(template);
    const name = authorizerNameOf(definition);
    const authorizer = definition.components.securitySchemes[name]?.['x-amazon-apigateway-authorizer'];
    expect(authorizer).toMatchObject({ authorizerResultTtlInSeconds: 0 });
    expect(authorizer).not.toHaveProperty('identitySource');
    expect(Object.keys(resourcesOf(template, 'AWS::ApiGateway::Method'))).toEqual([]);
    for (const { path, method, operation } of operationsOf(definition))
      expect([path, method, requiredSchemes(operation)]).toEqual([
        path,
        method,
        expect.arrayContaining([name]),
      ]);
  });

  it('gives the request its ISO 8601 time, the binding limit, and the daily quota beside it', () => {
    expect(allowedContext.timestamp).toBe('2026-11-25T17:41:07.123Z');
    const dayStart = Math.floor(requestTimeEpoch / 86_400_000) * 86_400;
    const minuteStart = Math.floor(requestTimeEpoch / 60_000) * 60;
    // 3 of the minute's 3,000 spent, 1 of the day's 200,000: the minute binds.
    expect(allowedContext).toMatchObject({
      rateLimitLimit: String(tiers.standard.requestsPerMinute.general),
      rateLimitRemaining: String(tiers.standard.requestsPerMinute.general - 3),
      rateLimitReset: String(minuteStart + 60),
      quotaLimit: String(tiers.standard.dailyQuota),
      quotaReset: String(dayStart + 86_400),
    });
  });

  it('reports the daily quota once fewer requests are left in the day than in the minute', async () => {
    const now = new Date(requestTimeEpoch);
    const { record, apiKey } = newApiKeyRecord(
      { name: 'Busy POS', roles: ['merchant'], tier: 'standard', environment: 'live' },
      now,
    );
    await new ApiKeyRepository(doc, names.apiKeys).create(record);
    // The day nearly spent (199,000 counted in one claim, as leases add up), the minute untouched.
    await limiter.hit(`day#${record.keyId}`, tiers.standard.dailyQuota, 86_400, now, 1);
    await doc.send(
      new UpdateCommand({
        TableName: names.rateLimits,
        Key: { pk: `day#${record.keyId}#${Math.floor(requestTimeEpoch / 86_400_000) * 86_400}` },
        UpdateExpression: 'ADD #count :n',
        ExpressionAttributeNames: { '#count': 'count' },
        ExpressionAttributeValues: { ':n': 198_999 },
      }),
    );
    const context = (await authorizeEdge(authorizerEvent(apiKey), deps)).context as Record<string, unknown>;
    expect(context).toMatchObject({
      rateLimitLimit: String(tiers.standard.dailyQuota),
      rateLimitRemaining: '1000',
      rateLimitReset: context.quotaReset,
    });
  });

  it('reports the source IP budget on a refusal and on an open method', () => {
    for (const context of [deniedContext, publicContext]) {
      expect(context).toMatchObject({
        timestamp: '2026-11-25T17:41:07.123Z',
        rateLimitLimit: '60',
        rateLimitRemaining: '60',
      });
    }
    expect(deniedContext.message).toBe('Missing API key: send it in the X-API-Key header');
    expect(keyedRoutes.has(edgeRouteKey('PUT', '/{proxy+}'))).toBe(false);
    expect(keyRecord.keyId).toBeTruthy();
  });
});

describe('gateway responses in the synthesized template', () => {
  it('declares every response type once, and every one reaches the template', () => {
    const types = gatewayResponses().map((response) => response.type);
    expect(types.sort()).toEqual(edgeErrorResponses.map((response) => response.type).sort());
  });

  it('take their timestamp and X-RateLimit-* from the authorizer, and say no-store', () => {
    for (const response of gatewayResponses()) {
      const { type } = response;
      const answer = answerOf(response);
      expect({
        type,
        timestamp: answer.template.includes('"timestamp":"$context.authorizer.timestamp"'),
      }).toEqual({
        type,
        timestamp: true,
      });
      expect({ type, headers: answer.headers }).toEqual({
        type,
        headers: expect.objectContaining({
          'X-Request-Id': 'context.requestId',
          'Cache-Control': "'no-store'",
          'X-RateLimit-Limit':
            type === 'QUOTA_EXCEEDED' ? 'context.authorizer.quotaLimit' : 'context.authorizer.rateLimitLimit',
          'X-RateLimit-Remaining':
            type === 'QUOTA_EXCEEDED' ? "'0'" : 'context.authorizer.rateLimitRemaining',
          'X-RateLimit-Reset':
            type === 'QUOTA_EXCEEDED' ? 'context.authorizer.quotaReset' : 'context.authorizer.rateLimitReset',
        }),
      });
    }
  });

  it.each(
    edgeErrorResponses
      .filter((response) => !response.beforeAuthorizer)
      .map((response) => [response.type] as const),
  )(
    '%s renders as API Gateway renders it into the error envelope, with an ISO 8601 timestamp and numeric rate limits',
    (type) => {
      const response = gatewayResponses().find((candidate) => candidate.type === type);
      expect(response).toBeDefined();
      const context = contextFor(type);
      const rendered = renderEdgeAnswer(answerOf(response as GatewayResponse), context);
      const parsed = errorEnvelope.safeParse(JSON.parse(rendered.body));
      expect(parsed.error?.issues ?? []).toEqual([]);
      expect(isoTimestamp.safeParse(parsed.data?.error.timestamp).success).toBe(true);
      expect(parsed.data?.error.request_id).toBe(context.requestId);
      expect(rendered.headers['X-Request-Id']).toBe(context.requestId);
      for (const header of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'])
        expect({ header, value: rendered.headers[header] }).toEqual({
          header,
          value: expect.stringMatching(integerHeader),
        });
      if (type === 'QUOTA_EXCEEDED') expect(rendered.headers['X-RateLimit-Remaining']).toBe('0');
    },
  );

  it("places the authorizer's refusal message in a valid JSON string", () => {
    const denied = gatewayResponses().find((candidate) => candidate.type === 'ACCESS_DENIED');
    const body = JSON.parse(
      renderEdgeAnswer(answerOf(denied as GatewayResponse), contextFor('ACCESS_DENIED')).body,
    ) as {
      error: { message: string };
    };
    expect(body.error.message).toBe('Missing API key: send it in the X-API-Key header');
  });

  it('leaves the timestamp and rate limits empty only where API Gateway answers before the authorizer runs', () => {
    const contextless = edgeErrorResponses.filter((response) => response.beforeAuthorizer);
    expect(contextless.map((response) => response.type).sort()).toEqual([
      'AUTHORIZER_FAILURE',
      'REQUEST_TOO_LARGE',
      'WAF_FILTERED',
    ]);
    // What API Gateway sends then (docs/API.md says so): the envelope, without a time it could not format.
    for (const { type } of contextless) {
      const response = gatewayResponses().find((candidate) => candidate.type === type);
      const rendered = renderEdgeAnswer(answerOf(response as GatewayResponse), { requestId: randomUUID() });
      const body = JSON.parse(rendered.body) as { error: { timestamp: string; code: string } };
      expect({ type, timestamp: body.error.timestamp, limit: rendered.headers['X-RateLimit-Limit'] }).toEqual(
        {
          type,
          timestamp: '',
          limit: '',
        },
      );
    }
  });
});

describe('404 and 405 answered by mocks behind the authorizer', () => {
  it('has a catch-all 404 at the root and on every resource between it and a route, and a 405 on each routed path', () => {
    const statuses = mockMethods().map((method) => answerOfMock(method).statusCode);
    expect(statuses.filter((status) => status === '405')).toHaveLength(
      new Set(routes.map((route) => route.path)).size,
    );
    expect(statuses.filter((status) => status === '404').length).toBeGreaterThanOrEqual(2);
  });

  it.each(['404', '405'])(
    '%s renders into the error envelope with an ISO 8601 timestamp and the IP budget',
    (status) => {
      for (const method of mockMethods().filter(
        (candidate) => answerOfMock(candidate).statusCode === status,
      )) {
        const rendered = renderEdgeAnswer(answerOfMock(method), {
          requestId: randomUUID(),
          authorizer: publicContext,
        });
        const parsed = errorEnvelope.safeParse(JSON.parse(rendered.body));
        expect(parsed.error?.issues ?? []).toEqual([]);
        expect(parsed.data?.error.code).toBe(status === '404' ? 'not_found' : 'method_not_allowed');
        expect(isoTimestamp.safeParse(parsed.data?.error.timestamp).success).toBe(true);
        expect(rendered.headers).toMatchObject({
          'X-RateLimit-Limit': '60',
          'X-RateLimit-Remaining': '60',
          'Cache-Control': 'no-store',
        });
        expect(requiredSchemes(method)).not.toContain('ApiKeyAuth');
      }
    },
  );
});
