import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { deprecationHeaders } from '../../lib/kernel/route.js';
import { routes } from '../../functions/routes.js';
import { ContractValidator } from '../support/contract.js';
import { captureLogs, type LogCapture } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { DEPRECATED_SINCE, SUNSET, deprecatedRoute } from './fixtures/deprecated-route/route.js';

/** `deprecated: { sunset }` on a declaration: the headers on every response and OpenAPI's flag. */
const withFixture = [...routes, deprecatedRoute];
const path = '/api/v1/old-echo/{word}';

describe('a route declared deprecated', () => {
  it('is deprecated in the OpenAPI document, with both headers on its success response', () => {
    const document = buildOpenApiDocument(withFixture);
    const operation = document.paths?.[path]?.get;
    expect(operation?.deprecated).toBe(true);
    const success = operation?.responses?.['200'];
    expect(success && 'headers' in success ? Object.keys(success.headers ?? {}) : []).toEqual(
      expect.arrayContaining(['Deprecation', 'Sunset']),
    );
    expect(operation?.description).toContain(new Date(SUNSET).toISOString());
    // No route of the service is deprecated unless its declaration says so.
    for (const [routePath, item] of Object.entries(buildOpenApiDocument(routes).paths ?? {}))
      for (const method of ['get', 'post', 'delete'] as const)
        expect({ routePath, method, deprecated: item?.[method]?.deprecated }).toEqual({
          routePath,
          method,
          deprecated: undefined,
        });
  });

  it('formats Deprecation as an RFC 9745 date and Sunset as an RFC 8594 HTTP-date', () => {
    const now = new Date('2026-09-01T12:00:00.500Z');
    expect(deprecationHeaders({ sunset: '2027-01-31' }, now)).toEqual({
      Deprecation: `@${Math.floor(now.getTime() / 1000)}`,
      Sunset: 'Sun, 31 Jan 2027 00:00:00 GMT',
    });
  });

  it('every service route that is deprecated names dates that parse', () => {
    for (const route of [...routes, deprecatedRoute]) {
      if (!route.deprecated) continue;
      expect(Number.isNaN(Date.parse(route.deprecated.sunset))).toBe(false);
      if (route.deprecated.since) expect(Number.isNaN(Date.parse(route.deprecated.since))).toBe(false);
    }
  });

  describe('on the local server', () => {
    let stack: TestStack;
    let logs: LogCapture;
    let apiKey: string;
    const contract = new ContractValidator(buildOpenApiDocument(withFixture));
    beforeAll(async () => {
      logs = captureLogs();
      stack = await startTestStack({ routes: withFixture });
      ({ apiKey } = await stack.apiKey(['merchant']));
    });
    afterAll(async () => {
      await stack?.close();
      logs?.restore();
    });
    const get = async (requestPath: string, key = apiKey) => {
      const response = await fetch(`${stack.url}${requestPath}`, { headers: { 'X-API-Key': key } });
      const text = await response.text();
      const json: unknown = JSON.parse(text);
      contract.assert({
        method: 'GET',
        path: requestPath,
        status: response.status,
        headers: response.headers,
        text,
        json,
      });
      return { status: response.status, headers: response.headers, json };
    };
    const expected = {
      deprecation: `@${Date.parse(DEPRECATED_SINCE) / 1000}`,
      sunset: 'Wed, 30 Jun 2027 00:00:00 GMT',
      link: '<https://example.com/migrate>; rel="deprecation"',
    };

    it('carries Deprecation, Sunset and the deprecation link on a success', async () => {
      const reply = await get('/api/v1/old-echo/hi');
      expect(reply.status).toBe(200);
      expect(reply.json).toEqual({ success: true, data: { echo: 'hi' } });
      expect({
        deprecation: reply.headers.get('deprecation'),
        sunset: reply.headers.get('sunset'),
        link: reply.headers.get('link'),
      }).toEqual(expected);
    });

    it('carries them on an error too', async () => {
      for (const reply of [await get('/api/v1/old-echo/HI'), await get('/api/v1/old-echo/hi', 'not-a-key')]) {
        expect(reply.status).toBeGreaterThanOrEqual(400);
        expect(reply.headers.get('deprecation')).toBe(expected.deprecation);
        expect(reply.headers.get('sunset')).toBe(expected.sunset);
      }
    });

    it('leaves the other routes without them', async () => {
      const response = await fetch(`${stack.url}/api/v1/health`);
      expect(response.headers.get('deprecation')).toBeNull();
      expect(response.headers.get('sunset')).toBeNull();
    });
  });
});
