import { afterAll, describe, expect, it } from '@jest/globals';
import { routes } from '../../functions/routes.js';
import { brokenRoute } from '../contract/fixtures/broken-route/route.js';
import { captureLogs } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/*
 * When the local server imports each route's function (local/server.ts, lazyHandlers): a test's stack
 * on its first request, as Lambda does at a cold start; `npm start` before it listens, so that a
 * function that cannot load stops the start instead of answering 500 later.
 */
const withBroken = [...routes, brokenRoute];

describe("the local server's route functions", () => {
  let stack: TestStack | undefined;
  const logs = captureLogs();

  afterAll(async () => {
    await stack?.close();
    logs.restore();
  });

  it('are imported on first request in a test stack: a function that cannot load fails only its own requests', async () => {
    stack = await startTestStack({ routes: withBroken });
    expect((await stack.request('GET', '/api/v1/health')).status).toBe(200);
    // Not through stack.request: the fixture route is not in the OpenAPI document the contract checks.
    const broken = await fetch(`${stack.url}/api/v1/broken`);
    const text = await broken.text();
    // As API Gateway answers a function that fails to initialise: its integration failure response.
    expect([broken.status, (JSON.parse(text) as { error: { code: string } }).error.code]).toEqual([
      503,
      'service_unavailable',
    ]);
    expect(broken.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(text).not.toContain('cannot load');
    expect(logs.text()).toContain('broken-fixture: this function cannot load');
    // Loaded once: the next request is the same answer, and the function's siblings are unaffected.
    expect((await fetch(`${stack.url}/api/v1/broken`)).status).toBe(503);
    expect((await stack.request('GET', '/api/v1/health')).status).toBe(200);
  });

  it('are all imported before listening otherwise, as `npm start` does: the start fails', async () => {
    await expect(startTestStack({ routes: withBroken, lazyHandlers: false })).rejects.toThrow(
      'broken-fixture: this function cannot load',
    );
  });
});
