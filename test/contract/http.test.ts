import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { routes } from '../../functions/routes.js';
import { captureLogs, type LogCapture } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';

describe('GET /api/v1/openapi.json over HTTP', () => {
  let stack: TestStack;
  let logs: LogCapture;

  beforeAll(async () => {
    logs = captureLogs();
    stack = await startTestStack();
  });

  afterAll(async () => {
    await stack?.close();
    logs.restore();
  });

  it('serves the generated document without an API key, as it is', async () => {
    const reply = await stack.request<Record<string, unknown>>('GET', '/api/v1/openapi.json');
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
    expect(reply.json).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument(routes))));
    expect(reply.json).not.toHaveProperty('success');
    for (const header of [
      'x-request-id',
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
    ]) {
      expect(reply.headers.get(header)).toBeTruthy();
    }
  });

  it('still serves it with an API key, and refuses other methods with 405', async () => {
    const { apiKey } = await stack.apiKey(['merchant']);
    expect((await stack.request('GET', '/api/v1/openapi.json', { apiKey })).status).toBe(200);
    const wrongMethod = await stack.request('POST', '/api/v1/openapi.json', { body: {} });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('GET');
  });

  it('found no response of this file outside the contract', () => {
    expect(stack.contractViolations).toEqual([]);
  });
});
