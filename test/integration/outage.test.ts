import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ErrorBody } from '../../lib/http/error-envelope.js';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../local/dynamodb-local.js';
import { patience } from '../support/processes.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/** DynamoDB going away under a running service: a 503 that says so, never a 500. */
describe('a DynamoDB outage', () => {
  let ddb: DynamoDbLocal;
  let stack: TestStack;
  let issuer: { apiKey: string };

  beforeAll(async () => {
    // Its own DynamoDB Local, since this test stops it.
    ddb = await startDynamoDbLocal({ readyTimeoutMs: patience(60_000) });
    stack = await startTestStack({ dynamoDbEndpoint: ddb.endpoint });
    issuer = await stack.apiKey(['issuer']);
    expect(
      (await stack.request('POST', '/api/v1/onboarding/generate-keys', { apiKey: issuer.apiKey })).status,
    ).toBe(200);
    // Health loads the gateway SDKs on its first call. On a loaded machine that load alone can outlast
    // the function's timeout (a 503 without details), so it happens here, before the outage.
    await stack.request('GET', '/api/v1/health');
    await ddb.stop();
  }, 120_000);

  afterAll(async () => {
    await stack?.close();
    await ddb?.stop();
  });

  it('is reported by health as 503 naming DynamoDB, with the rate-limit headers', async () => {
    stack.clock.advance(60_000);
    const reply = await stack.request<ErrorBody>('GET', '/api/v1/health');
    // The whole body in one assertion, so that a failure shows which 503 it was.
    expect({ status: reply.status, body: reply.json }).toMatchObject({
      status: 503,
      body: {
        error: { code: 'service_unavailable', details: { dependencies: { dynamodb: { status: 'down' } } } },
      },
    });
    expect(reply.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
    expect(reply.headers.get('retry-after')).toBe('1');
  });

  it('answers keyed calls 503 service_unavailable, for a cached key and an unknown one alike', async () => {
    for (const apiKey of [issuer.apiKey, `rk_${'1'.repeat(32)}_${'A'.repeat(43)}`]) {
      const reply = await stack.request<ErrorBody>('POST', '/api/v1/onboarding/generate-keys', { apiKey });
      expect(reply.status).toBe(503);
      expect(reply.json.error.code).toBe('service_unavailable');
      expect(reply.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
    }
  });
});
