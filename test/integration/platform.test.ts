import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ErrorBody } from '../../lib/http/error-envelope.js';
import { tiers } from '../../lib/kernel/tiers.js';
import { captureLogs, expectNoSecretsInEachTestsLogs, type LogCapture } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';

type ErrorEnvelope = ErrorBody;

const expectEnvelope = (json: unknown, code: string) => {
  const body = json as ErrorEnvelope;
  expect(body.success).toBe(false);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(Number.isNaN(Date.parse(body.error.timestamp))).toBe(false);
  expect(body.error.request_id).toMatch(/^[0-9a-f-]{36}$/);
  expect(JSON.stringify(body)).not.toMatch(/at .*\.(ts|js):\d+/);
};

describe('platform: authentication, limits and the request pipeline over HTTP', () => {
  let stack: TestStack;
  let logs: LogCapture;
  let merchant: { apiKey: string; keyId: string };
  let issuer: { apiKey: string; keyId: string };

  beforeAll(async () => {
    logs = captureLogs();
    stack = await startTestStack({
      // Only the service's per-minute budgets matter here; the edge figures are API Gateway's.
      tiers: {
        free: { ...tiers.free, requestsPerMinute: { general: 3, keyGeneration: 2, payments: 4 } },
        standard: {
          ...tiers.standard,
          requestsPerMinute: { general: 1000, keyGeneration: 1000, payments: 1000 },
        },
        enterprise: {
          ...tiers.enterprise,
          requestsPerMinute: { general: 1000, keyGeneration: 1000, payments: 1000 },
        },
      },
    });
    merchant = await stack.apiKey(['merchant'], 'standard');
    issuer = await stack.apiKey(['issuer'], 'standard');
  });

  afterAll(async () => {
    await stack?.close();
    logs.restore();
  });

  // Each test's own log lines, checked as it ends: no API key, nor its secret part alone.
  expectNoSecretsInEachTestsLogs(() =>
    [merchant, issuer].flatMap((client, index) => [
      [`API key #${index}`, client.apiKey] as const,
      [`API key secret #${index}`, client.apiKey.slice(-43)] as const,
    ]),
  );

  it('answers health without a key, with every dependency up', async () => {
    const reply = await stack.request<{
      success: boolean;
      data: { status: string; dependencies: Record<string, { status: string }> };
    }>('GET', '/api/v1/health');
    expect(reply.status).toBe(200);
    expect(reply.json.data.status).toBe('ok');
    expect(Object.keys(reply.json.data.dependencies)).toEqual(
      expect.arrayContaining(['dynamodb', 'escrowKey', 'gateway_a', 'gateway_b']),
    );
    expect(reply.headers.get('x-request-id')).toBeTruthy();
    expect(reply.headers.get('x-ratelimit-limit')).toBe('10000');
  });

  it('answers 503 service_unavailable naming the dependency that is down, and recovers', async () => {
    stack.clock.advance(11_000);
    stack.sandbox!.faults.add({
      kind: 'status',
      operation: 'square.locations.get',
      status: 500,
      times: 'always',
    });
    const down = await stack.request<ErrorEnvelope>('GET', '/api/v1/health');
    expect(down.status).toBe(503);
    expectEnvelope(down.json, 'service_unavailable');
    expect(down.json.error.details).toMatchObject({
      status: 'degraded',
      dependencies: { gateway_b: { status: 'down' }, dynamodb: { status: 'up' } },
    });
    stack.sandbox!.reset();
    // One report is reused for a few seconds, so a burst of health calls is one round of checks.
    expect((await stack.request('GET', '/api/v1/health')).status).toBe(503);
    stack.clock.advance(11_000);
    expect((await stack.request('GET', '/api/v1/health')).status).toBe(200);
  });

  it('refuses a missing, malformed or wrong API key with 401 unauthorized', async () => {
    const wrongSecret = `${issuer.apiKey.slice(0, -4)}AAAA`;
    for (const apiKey of [undefined, 'not-a-key', wrongSecret, `rk_${'0'.repeat(32)}_${'A'.repeat(43)}`]) {
      const reply = await stack.request('POST', '/api/v1/keys/grant-access', {
        ...(apiKey ? { apiKey } : {}),
        body: {},
      });
      expect(reply.status).toBe(401);
      expectEnvelope(reply.json, 'unauthorized');
      expect(reply.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
    }
  });

  it('refuses a merchant key on an issuer route with 403 forbidden', async () => {
    const reply = await stack.request('POST', '/api/v1/keys/grant-access', {
      apiKey: merchant.apiKey,
      body: {},
    });
    expect(reply.status).toBe(403);
    expectEnvelope(reply.json, 'forbidden');
  });

  it('stops honouring a revoked key once the cache lifetime has passed', async () => {
    const revocable = await stack.apiKey(['issuer'], 'standard');
    const call = () =>
      stack.request('POST', '/api/v1/onboarding/generate-keys', { apiKey: revocable.apiKey });
    expect((await call()).status).toBe(200);
    await stack.deps.repos.apiKeys.update(revocable.keyId, {
      status: 'revoked',
      revokedAt: stack.clock.now().toISOString(),
    });
    stack.clock.advance((stack.config.apiKeyCacheTtlSeconds + 1) * 1000);
    const refused = await call();
    expect(refused.status).toBe(401);
    expectEnvelope(refused.json, 'unauthorized');
  });

  it('counts down the tier limit and answers 429 with the rate-limit headers past it', async () => {
    const limited = await stack.apiKey(['issuer'], 'free');
    stack.clock.set(Math.ceil(stack.clock.now().getTime() / 60_000) * 60_000 + 1_000);
    const remaining: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      const reply = await stack.request('POST', '/api/v1/keys/grant-access', {
        apiKey: limited.apiKey,
        body: {},
      });
      expect(reply.status).toBe(400);
      remaining.push(reply.headers.get('x-ratelimit-remaining') ?? '');
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limitedReply = await stack.request('POST', '/api/v1/keys/grant-access', {
      apiKey: limited.apiKey,
      body: {},
    });
    expect(limitedReply.status).toBe(429);
    expectEnvelope(limitedReply.json, 'rate_limit_exceeded');
    expect(limitedReply.headers.get('x-ratelimit-limit')).toBe('3');
    expect(limitedReply.headers.get('x-ratelimit-remaining')).toBe('0');
    const reset = Number(limitedReply.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThan(stack.clock.now().getTime() / 1000);
    expect(Number(limitedReply.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    stack.clock.advance(60_000);
    const nextWindow = await stack.request('POST', '/api/v1/keys/grant-access', {
      apiKey: limited.apiKey,
      body: {},
    });
    expect(nextWindow.status).toBe(400);
  });

  it('keeps a budget per endpoint group: spending one leaves the others whole', async () => {
    const issuerKey = await stack.apiKey(['issuer'], 'free');
    const merchantKey = await stack.apiKey(['merchant'], 'free');
    stack.clock.set(Math.ceil(stack.clock.now().getTime() / 60_000) * 60_000 + 1_000);
    const budget = (reply: { headers: Headers }) => [
      reply.headers.get('x-ratelimit-limit'),
      reply.headers.get('x-ratelimit-remaining'),
    ];
    const generate = () =>
      stack.request('POST', '/api/v1/onboarding/generate-keys', { apiKey: issuerKey.apiKey });

    // Key generation: 2 a minute on this tier, then 429 while the general budget is untouched.
    const generated = [await generate(), await generate()];
    expect(generated.map((reply) => reply.status)).toEqual([200, 200]);
    expect(generated.map(budget)).toEqual([
      ['2', '1'],
      ['2', '0'],
    ]);
    const refused = await generate();
    expect(refused.status).toBe(429);
    expectEnvelope(refused.json, 'rate_limit_exceeded');
    expect(budget(refused)).toEqual(['2', '0']);
    const general = await stack.request('POST', '/api/v1/keys/grant-access', {
      apiKey: issuerKey.apiKey,
      body: {},
    });
    expect(general.status).toBe(400);
    expect(budget(general)).toEqual(['3', '2']);

    // Payments have their own budget (4), counted apart from the merchant's other calls (3).
    const payment = await stack.request('POST', '/api/v1/payments/gateway_a/create', {
      apiKey: merchantKey.apiKey,
      body: {},
    });
    expect(payment.status).toBe(400);
    expect(budget(payment)).toEqual(['4', '3']);
    const transaction = await stack.request('GET', '/api/v1/transactions/unknown-transaction', {
      apiKey: merchantKey.apiKey,
    });
    expect(budget(transaction)).toEqual(['3', '2']);
    // Neither group is reached through the other: the refused group stays refused until its window ends.
    expect((await generate()).status).toBe(429);
    stack.clock.advance(60_000);
    expect((await generate()).status).toBe(200);
  });

  it.each([
    [
      'malformed JSON',
      { rawBody: '{"userId": ', headers: { 'Content-Type': 'application/json' } },
      400,
      'INVALID_REQUEST',
    ],
    [
      'a non-JSON content type',
      { rawBody: 'userId=1', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } },
      415,
      'unsupported_media_type',
    ],
    ['an oversize body', { body: { userId: 'x'.repeat(130 * 1024) } }, 413, 'payload_too_large'],
    ['a JSON array', { body: [1, 2] }, 400, 'INVALID_REQUEST'],
    [
      'a __proto__ key',
      { rawBody: '{"__proto__": {"admin": true}}', headers: { 'Content-Type': 'application/json' } },
      400,
      'INVALID_REQUEST',
    ],
  ])('answers %s with its documented status and the envelope', async (_name, options, status, code) => {
    const reply = await stack.request('POST', '/api/v1/keys/grant-access', {
      apiKey: issuer.apiKey,
      ...options,
    });
    expect(reply.status).toBe(status);
    expectEnvelope(reply.json, code);
  });

  it('names every bad field in a validation error', async () => {
    const reply = await stack.request<ErrorEnvelope>('POST', '/api/v1/keys/grant-access', {
      apiKey: issuer.apiKey,
      body: { userId: 'nope', keyId: 42 },
    });
    expect(reply.status).toBe(400);
    const fields = (reply.json.error.details?.fields as { field: string }[]).map((entry) => entry.field);
    expect(fields).toEqual(expect.arrayContaining(['userId', 'keyId']));
  });

  it('answers an unknown route 404 and a wrong method 405, in the envelope', async () => {
    const unknown = await stack.request('GET', '/api/v1/nothing-here', { apiKey: issuer.apiKey });
    expect(unknown.status).toBe(404);
    expectEnvelope(unknown.json, 'not_found');
    const wrongMethod = await stack.request('GET', '/api/v1/keys/grant-access', { apiKey: issuer.apiKey });
    expect(wrongMethod.status).toBe(405);
    expectEnvelope(wrongMethod.json, 'method_not_allowed');
    expect(wrongMethod.headers.get('allow')).toBe('POST');
  });

  it('sends security headers and no-store on every response', async () => {
    const reply = await stack.request('GET', '/api/v1/health');
    expect(reply.headers.get('cache-control')).toBe('no-store');
    expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
    expect(reply.headers.get('strict-transport-security')).toContain('max-age=');
  });
});
