import { describe, expect, it } from '@jest/globals';
import { publicView, shareResponses, withoutProse } from '../../lib/openapi/views.js';

/**
 * The two views of the OpenAPI document (lib/openapi/views.ts); test/infra/api.test.ts checks them on
 * the service's own document as deployed.
 */
const edge = 'receipt-service-test-edge';
const deployed = {
  openapi: '3.0.1',
  security: [{ ApiKeyAuth: [] }],
  'x-amazon-apigateway-api-key-source': 'AUTHORIZER',
  components: {
    securitySchemes: {
      ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
      [edge]: {
        type: 'apiKey',
        name: 'Unused',
        in: 'header',
        'x-amazon-apigateway-authtype': 'custom',
        'x-amazon-apigateway-authorizer': { type: 'request', authorizerUri: 'arn:…' },
      },
    },
  },
  paths: {
    '/keyed': {
      post: {
        security: [{ ApiKeyAuth: [] }, { [edge]: [] }],
        'x-amazon-apigateway-integration': { type: 'aws_proxy' },
      },
      'x-amazon-apigateway-any-method': { security: [{ [edge]: [] }] },
    },
    '/open': { get: { security: [{ [edge]: [] }], responses: { 200: { description: 'OK' } } } },
    '/{proxy+}': { 'x-amazon-apigateway-any-method': { security: [{ [edge]: [] }] } },
  },
};

describe('publicView', () => {
  it("takes away API Gateway's members, its authorizer's scheme and requirements, and the paths only it has", () => {
    expect(publicView(deployed)).toEqual({
      openapi: '3.0.1',
      security: [{ ApiKeyAuth: [] }],
      components: { securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
      paths: {
        // The document's own requirement again: inherited, as the public document states it.
        '/keyed': { post: {} },
        // Open: no requirement left, which says "no API key".
        '/open': { get: { security: [], responses: { 200: { description: 'OK' } } } },
      },
    });
  });

  it('keeps a requirement of its own that differs from the document’s', () => {
    const other = structuredClone(deployed) as unknown as {
      paths: { '/keyed': { post: { security: Record<string, string[]>[] } } };
    };
    other.paths['/keyed'].post.security = [{ ApiKeyAuth: ['admin'] }, { [edge]: [] }];
    expect((publicView(other).paths as typeof other.paths)['/keyed'].post.security).toEqual([
      { ApiKeyAuth: ['admin'] },
    ]);
  });
});

describe('withoutProse', () => {
  it("leaves out descriptions, summaries and examples, but not a schema's properties, and empty a response's description", () => {
    const document = {
      info: { title: 'T', description: 'Long introduction' },
      paths: {
        '/x': {
          post: {
            summary: 'Does x',
            description: 'At length',
            responses: { 200: { description: 'OK', content: {} } },
          },
        },
      },
      components: {
        schemas: {
          Line: {
            type: 'object',
            description: 'A line',
            examples: [{ description: 'Coffee' }],
            properties: { description: { type: 'string', description: 'What was sold' } },
          },
        },
      },
    };
    expect(withoutProse(document)).toEqual({
      info: { title: 'T' },
      paths: { '/x': { post: { responses: { 200: { description: '', content: {} } } } } },
      components: {
        schemas: { Line: { type: 'object', properties: { description: { type: 'string' } } } },
      },
    });
  });
});

describe('shareResponses', () => {
  const notFound = { description: '', content: { 'application/json': { schema: { type: 'object' } } } };
  const document = () => ({
    components: { responses: { Unauthorized: { description: '' } } },
    paths: {
      '/a': {
        get: {
          responses: {
            200: { description: 'A' },
            401: { $ref: '#/components/responses/Unauthorized' },
            404: notFound,
          },
        },
        'x-amazon-apigateway-any-method': { responses: { 405: { description: 'Answered by API Gateway' } } },
      },
      '/b': {
        delete: { responses: { 204: { description: 'B' }, 404: structuredClone(notFound) } },
        'x-amazon-apigateway-any-method': { responses: { 405: { description: 'Answered by API Gateway' } } },
      },
      // A mock's integration maps headers onto its method responses: they stay as they are.
      '/c': {
        'x-amazon-apigateway-any-method': {
          responses: { 405: { description: 'Answered by API Gateway' } },
          'x-amazon-apigateway-integration': { type: 'mock' },
        },
      },
    },
  });

  it('declares a response that occurs more than once as a component and references it; publicView puts it back', () => {
    const shared = shareResponses(document());
    expect(shared.components.responses).toEqual({
      Unauthorized: { description: '' },
      Shared1: notFound,
      Shared2: { description: 'Answered by API Gateway' },
    });
    expect(shared.paths['/a'].get.responses).toEqual({
      200: { description: 'A' },
      401: { $ref: '#/components/responses/Unauthorized' },
      404: { $ref: '#/components/responses/Shared1' },
    });
    expect(shared.paths['/b']['x-amazon-apigateway-any-method'].responses[405]).toEqual({
      $ref: '#/components/responses/Shared2',
    });
    expect(shared.paths['/c']['x-amazon-apigateway-any-method'].responses[405]).toEqual({
      description: 'Answered by API Gateway',
    });
    const expected = document() as Record<string, unknown> & {
      paths: Record<string, Record<string, unknown>>;
    };
    for (const item of Object.values(expected.paths)) delete item['x-amazon-apigateway-any-method'];
    delete expected.paths['/c'];
    expect(publicView(shared)).toEqual(expected);
  });
});
