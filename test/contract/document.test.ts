import { describe, expect, it } from '@jest/globals';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import { buildOpenApiDocument, tags } from '../../lib/openapi/document.js';
import { routes } from '../../functions/routes.js';
import { flattenedReceipt, newHashedPan, sampleReceipt } from '../support/fixtures.js';

interface Operation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  security?: unknown[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, unknown>;
}

const document = buildOpenApiDocument(routes);
const paths = (document.paths ?? {}) as Record<string, Record<string, Operation>>;
const documented = Object.entries(paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, operation })),
);
const operationOf = (method: string, path: string): Operation | undefined =>
  paths[path]?.[method.toLowerCase()];

describe('the OpenAPI document against the route table', () => {
  it('documents every route of functions/routes.ts by method and path', () => {
    const missing = routes
      .map((route) => `${route.method} ${route.path}`)
      .filter((key) => !documented.some((entry) => entry.key === key));
    expect(missing).toEqual([]);
  });

  it('documents nothing that is not a route, and describes no route that is gone', () => {
    const routeKeys = new Set(routes.map((route) => `${route.method} ${route.path}`));
    expect(documented.map((entry) => entry.key).filter((key) => !routeKeys.has(key))).toEqual([]);
  });

  it('gives each operation a summary, an id and one tag from the spec groups', () => {
    const groups: string[] = tags.map((tag) => tag.name);
    expect(groups).toEqual([
      'health',
      'onboarding',
      'keys',
      'receipts',
      'transactions',
      'payments',
      'webhooks',
      // Merchant signing keys (issue 24) are beyond the specification's groups.
      'merchants',
    ]);
    for (const { key, operation } of documented) {
      expect({ key, summary: Boolean(operation.summary), id: Boolean(operation.operationId) }).toEqual({
        key,
        summary: true,
        id: true,
      });
      expect(operation.tags).toHaveLength(1);
      expect(groups).toContain(operation.tags?.[0]);
    }
  });

  it('requires X-API-Key everywhere except health and openapi.json', () => {
    expect(document.security).toEqual([{ ApiKeyAuth: [] }]);
    expect(document.components?.securitySchemes?.ApiKeyAuth).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
    });
    for (const route of routes) {
      const operation = operationOf(route.method, route.path);
      expect({ route: route.name, security: operation?.security }).toEqual({
        route: route.name,
        security: route.apiKeyRequired ? undefined : [],
      });
      if (route.apiKeyRequired)
        expect(Object.keys(operation?.responses ?? {})).toEqual(expect.arrayContaining(['401', '403']));
    }
  });

  it('declares 404, 405, 429 and 500 on every operation, and the endpoint statuses of DECISIONS.md', () => {
    // 200, or 201 where the route creates something (its declaration says so).
    const successOf = (key: string) =>
      String(routes.find((route) => `${route.method} ${route.path}` === key)?.response.status ?? 200);
    for (const { key, operation } of documented) {
      expect({ key, statuses: Object.keys(operation.responses) }).toEqual({
        key,
        statuses: expect.arrayContaining([successOf(key), '404', '405', '429', '500']),
      });
    }
    const statuses = (method: string, path: string) =>
      Object.keys(operationOf(method, path)?.responses ?? {});
    expect(statuses('POST', '/api/v1/onboarding/register')).toEqual(
      expect.arrayContaining(['400', '404', '409', '413', '415']),
    );
    expect(statuses('POST', '/api/v1/payments/{gateway}/create')).toEqual(
      expect.arrayContaining(['402', '409', '502']),
    );
    expect(statuses('POST', '/api/v1/payments/decrypt')).toEqual(
      expect.arrayContaining(['403', '404', '502']),
    );
    expect(statuses('GET', '/api/v1/health')).toContain('503');
    const createPayment = JSON.stringify(operationOf('POST', '/api/v1/payments/{gateway}/create'));
    expect(createPayment).toContain('"Idempotency-Key"');
    expect(JSON.stringify(document.components?.responses?.RateLimited)).toContain(
      '#/components/headers/Retry-After',
    );
  });

  it('documents encrypt as oneOf the nested and flattened schemas the handler validates with', () => {
    const body = operationOf('POST', '/api/v1/receipts/encrypt')?.requestBody?.content['application/json']
      ?.schema;
    expect(body).toEqual({
      oneOf: [
        { $ref: '#/components/schemas/NestedEncryptRequest' },
        { $ref: '#/components/schemas/FlattenedEncryptRequest' },
      ],
    });
    const schemas = document.components?.schemas ?? {};
    for (const name of [
      'NestedEncryptRequest',
      'FlattenedEncryptRequest',
      'DigitalReceipt',
      'ErrorEnvelope',
      'PaymentResult',
    ]) {
      expect(schemas).toHaveProperty(name);
    }
  });

  it('tells the encrypt forms apart exactly as the handler does, so each body matches one branch of the oneOf', () => {
    const ajv = new Ajv2020({ strict: false });
    formatsModule.default(ajv);
    ajv.addSchema({ ...JSON.parse(JSON.stringify(document)), $id: 'https://receipts.local/openapi.json' });
    const branches = ['NestedEncryptRequest', 'FlattenedEncryptRequest'];
    const matches = (body: unknown) =>
      branches.filter((name) =>
        ajv.validate(`https://receipts.local/openapi.json#/components/schemas/${name}`, body),
      );
    const nested = {
      receipt: sampleReceipt(),
      recipientIdentifier: { type: 'email', value: 'a@example.com' },
    };
    expect(matches(nested)).toEqual(['NestedEncryptRequest']);
    expect(matches(flattenedReceipt({ recipientHashedPan: newHashedPan() }))).toEqual([
      'FlattenedEncryptRequest',
    ]);
    // A body carrying both is the nested form with unknown fields to the handler (a 400), and
    // matches neither branch of the document.
    expect(matches({ ...flattenedReceipt(), ...nested })).toEqual([]);
    expect(
      ajv.validate('https://receipts.local/openapi.json#/components/schemas/CreatePaymentRequest', {
        ...flattenedReceipt(),
        amount: 1548,
      }),
    ).toBe(true);
  });

  it('describes requests input-side and responses output-side: a defaulted field is optional to send, and always sent back', () => {
    // The SDK's types follow `required` alone (scripts/openapi.ts), so this is what makes a request
    // field the service defaults optional in them, and a response field it always sends required.
    const components = (document.components?.schemas ?? {}) as Record<string, unknown>;
    const defaulted = (root: unknown) => {
      const found: { at: string; required: boolean }[] = [];
      const seen = new Set<unknown>();
      const walk = (node: unknown, at: string): void => {
        if (typeof node !== 'object' || node === null || seen.has(node)) return;
        seen.add(node);
        const schema = node as Record<string, unknown>;
        if (typeof schema.$ref === 'string') {
          const name = schema.$ref.replace('#/components/schemas/', '');
          walk(components[name], name);
          return;
        }
        const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
        for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, object>)) {
          if ('default' in property) found.push({ at: `${at}.${name}`, required: required.includes(name) });
        }
        for (const [key, value] of Object.entries(schema)) {
          if (key !== 'properties') walk(value, at);
          else
            for (const [name, property] of Object.entries(value as object)) walk(property, `${at}.${name}`);
        }
      };
      walk(root, 'body');
      return found;
    };
    const requests = documented.flatMap(({ operation }) =>
      defaulted(operation.requestBody?.content['application/json']?.schema),
    );
    const responses = documented.flatMap(({ operation }) => defaulted(operation.responses));
    expect(requests.map(({ at }) => at)).toEqual(
      expect.arrayContaining(['CreatePaymentRequest.currency', 'FlattenedEncryptRequest.mockItems']),
    );
    expect(requests.filter(({ required }) => required)).toEqual([]);
    expect(responses.filter(({ required }) => !required)).toEqual([]);
  });
});
