import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { routes } from '../../functions/routes.js';
import { captureLogs, type LogCapture } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { operationAt, requiredSchemes } from '../infra/support.js';
import { synthVariant } from '../infra/variants.js';
import { echoRoute } from './fixtures/extra-route/route.js';

/** One declaration is all an endpoint needs: the document, the stack and the local server all follow it. */
const withFixture = [...routes, echoRoute];

describe('a route declared only in a fixture', () => {
  it('appears in the OpenAPI document with its parameters and response', () => {
    const document = buildOpenApiDocument(withFixture);
    const operation = document.paths?.['/api/v1/echo/{word}']?.get;
    expect(operation?.operationId).toBe('echoFixture');
    expect(operation?.parameters?.map((parameter) => ('name' in parameter ? parameter.name : ''))).toEqual([
      'word',
      'times',
    ]);
    expect(Object.keys(operation?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '400', '401', '403']),
    );
    expect(buildOpenApiDocument(routes).paths?.['/api/v1/echo/{word}']).toBeUndefined();
  });

  it('gets a function, a role and an operation in the API definition of the CDK stack', () => {
    // The function, its role and its method are the service stack's; the data and monitoring stacks
    // follow only the routes that use escrow and the functions' alarms.
    const template = synthVariant({ routes: withFixture }).templates.service;
    template.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'receipt-service-test-echo-fixture',
      Description: 'GET /api/v1/echo/{word}',
    });
    const operation = operationAt(template, '/api/v1/echo/{word}', 'GET');
    expect(operation['x-amazon-apigateway-integration']?.type).toBe('aws_proxy');
    expect(requiredSchemes(operation)).toContain('ApiKeyAuth');
  });

  describe('on the local server', () => {
    let stack: TestStack;
    let logs: LogCapture;
    let apiKey: string;
    beforeAll(async () => {
      logs = captureLogs();
      stack = await startTestStack({ routes: withFixture });
      ({ apiKey } = await stack.apiKey(['merchant']));
    });
    afterAll(async () => {
      await stack?.close();
      logs?.restore();
    });
    // Plain fetch: the test stack's contract check knows only the service's own document.
    const get = async (path: string) => {
      const response = await fetch(`${stack.url}${path}`, { headers: { 'X-API-Key': apiKey } });
      return { status: response.status, json: (await response.json()) as Record<string, never> };
    };

    it('serves it with its path and query parameters parsed and typed', async () => {
      expect(await get('/api/v1/echo/hi?times=2')).toEqual({
        status: 200,
        json: { success: true, data: { echo: 'hi hi' } },
      });
    });

    it('refuses bad path and query parameters in one 400 naming each', async () => {
      const reply = await get('/api/v1/echo/HI?times=9&loud=1');
      expect(reply.status).toBe(400);
      expect(reply.json.error).toMatchObject({
        code: 'INVALID_REQUEST',
        details: {
          fields: expect.arrayContaining([
            { field: 'word', message: 'must be lower-case letters' },
            { field: 'times', message: expect.stringMatching(/3/) },
            { field: 'loud', message: 'is not a known field' },
          ]),
        },
      });
    });
  });
});
