import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Tracer } from '@aws-lambda-powertools/tracer';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import { flattenedReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser, type OnboardedUser } from '../support/flow.js';
import { logsWhile } from '../support/logs.js';
import { startTestStack, type HttpReply, type TestStack } from '../support/stack.js';

interface Data<T> {
  success: true;
  data: T;
}
type Line = Record<string, unknown>;

const CORRELATION_NAMES = ['requestId', 'route', 'clientId', 'receiptId'];

/**
 * Every log line a request writes carries its correlation keys, and each request's trace is annotated
 * with them, on the local stack over HTTP. The stack is given a real Powertools Tracer: there is no
 * X-Ray here, so its annotations are observed on the object itself.
 */
describe('correlation keys on log lines and trace annotations', () => {
  let stack: TestStack;
  const tracer = new Tracer({ serviceName: 'receipt-service-test' });
  const annotate = jest.spyOn(tracer, 'putAnnotation');
  let merchant: { apiKey: string; clientId: string };
  let issuer: { apiKey: string; clientId: string };
  let user: OnboardedUser;

  beforeAll(async () => {
    // DEBUG: every line the handlers write, not only the access and metric lines.
    stack = await startTestStack({ logLevel: 'DEBUG', tracer });
    // Its own logger and no requests: its lines would only get in the way of a request's.
    await stack.dispatcher.stop();
    merchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    user = await onboardUser(stack, issuer.apiKey);
  });

  afterAll(async () => {
    stack?.dispatcher.start();
    await stack?.close();
  });

  /**
   * One request with its log lines and its trace annotations. The test makes one request at a time,
   * so what the stack writes meanwhile is this request's.
   */
  async function observed<T>(
    work: () => Promise<HttpReply<T>>,
  ): Promise<{ reply: HttpReply<T>; lines: Line[]; annotations: Record<string, unknown> }> {
    annotate.mockClear();
    const { value: reply, text } = await logsWhile(work);
    const lines = text
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Line);
    const annotations = Object.fromEntries(annotate.mock.calls.map(([name, value]) => [name, value]));
    return { reply, lines, annotations };
  }

  /** Ids only: none of the request's secrets in any annotation. */
  const expectOnlyIds = (annotations: Record<string, unknown>, secrets: string[]) => {
    expect(Object.keys(annotations).every((name) => CORRELATION_NAMES.includes(name))).toBe(true);
    for (const value of Object.values(annotations)) {
      for (const secret of secrets) expect(String(value)).not.toContain(secret);
    }
  };

  it('puts request id, client id, route and receipt id on every line of an encrypt, and on its trace', async () => {
    const body = flattenedReceipt({ recipientHashedPan: user.hashedPan });
    const { reply, lines, annotations } = await observed(() =>
      stack.request<Data<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
        apiKey: merchant.apiKey,
        body,
      }),
    );
    expect(reply.status).toBe(200);
    const requestId = reply.headers.get('x-request-id');
    const keys = {
      requestId,
      clientId: merchant.clientId,
      route: 'encrypt-receipt',
      receiptId: body.receiptId,
    };
    // The access line and the metric lines at least.
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines.map((line) => line.message)).toContain('request');
    for (const line of lines) expect(line).toMatchObject(keys);
    expect(annotations).toEqual(keys);
    expectOnlyIds(annotations, [user.hashedPan, merchant.apiKey]);
  });

  it('keeps the token id, key and envelope out of a decrypt’s keys, lines and trace', async () => {
    const encrypted = await stack.request<Data<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body: flattenedReceipt({ recipientHashedPan: user.hashedPan }),
    });
    const envelope = encrypted.json.data;
    const tokenId = await grantToken(stack, issuer.apiKey, user);
    const { reply, lines, annotations } = await observed(() =>
      stack.request('POST', '/api/v1/receipts/decrypt', {
        apiKey: issuer.apiKey,
        body: { envelope, accessTokenId: tokenId, privateKey: user.privateKey },
      }),
    );
    expect(reply.status).toBe(200);
    const keys = {
      requestId: reply.headers.get('x-request-id'),
      clientId: issuer.clientId,
      route: 'decrypt-receipt',
      receiptId: envelope.receiptId,
    };
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const line of lines) {
      expect(line).toMatchObject(keys);
      expect(JSON.stringify(line)).not.toContain(tokenId);
    }
    expect(annotations).toEqual(keys);
    expectOnlyIds(annotations, [tokenId, user.privateKey, envelope.ciphertext, issuer.apiKey]);
  });

  it('names the receipt of a path parameter, and no receipt where a request names none', async () => {
    const receiptId = randomUUID();
    const fetched = await observed(() =>
      stack.request('GET', `/api/v1/receipts/${receiptId}`, { apiKey: issuer.apiKey }),
    );
    expect(fetched.reply.status).toBe(404);
    for (const line of fetched.lines)
      expect(line).toMatchObject({ clientId: issuer.clientId, route: 'get-receipt', receiptId });
    expect(fetched.annotations).toMatchObject({ route: 'get-receipt', receiptId });

    const listed = await observed(() =>
      stack.request('GET', `/api/v1/users/${user.userId}/receipts`, { apiKey: issuer.apiKey }),
    );
    expect(listed.reply.status).toBe(200);
    expect(listed.lines.length).toBeGreaterThanOrEqual(1);
    for (const line of listed.lines) {
      expect(line).toMatchObject({ clientId: issuer.clientId, route: 'list-user-receipts' });
      expect(line).not.toHaveProperty('receiptId');
    }
    expect(Object.keys(listed.annotations).sort()).toEqual(['clientId', 'requestId', 'route']);
  });

  it('starts every request clean: an unauthenticated one carries no client id of the request before', async () => {
    await observed(() =>
      stack.request('GET', `/api/v1/receipts/${randomUUID()}`, { apiKey: merchant.apiKey }),
    );
    const { reply, lines, annotations } = await observed(() =>
      stack.request('GET', `/api/v1/receipts/${randomUUID()}`, { apiKey: 'rk_not_a_key_at_all_000000' }),
    );
    expect(reply.status).toBe(401);
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const line of lines) {
      expect(line).toMatchObject({ requestId: reply.headers.get('x-request-id'), route: 'get-receipt' });
      expect(line).not.toHaveProperty('clientId');
      expect(line).not.toHaveProperty('receiptId');
    }
    expect(Object.keys(annotations).sort()).toEqual(['requestId', 'route']);
  });

  it('keeps each request its own keys when the local server serves several at once', async () => {
    // Lambda runs one invocation per instance; the local server runs them together in one process,
    // each with a logger of its own (local/invocation-scope.ts), so no line borrows another's keys.
    const { value: replies, text } = await logsWhile(() =>
      Promise.all(
        Array.from({ length: 12 }, (_, index) => {
          const caller = index % 2 === 0 ? merchant : issuer;
          return stack
            .request('GET', `/api/v1/receipts/${randomUUID()}`, { apiKey: caller.apiKey })
            .then((reply) => ({ reply, caller }));
        }),
      ),
    );
    const byRequest = new Map(
      replies.map(({ reply, caller }) => [reply.headers.get('x-request-id'), caller]),
    );
    const lines = text
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Line)
      .filter((line) => line.route === 'get-receipt');
    expect(lines.length).toBeGreaterThanOrEqual(replies.length);
    for (const line of lines) {
      const caller = byRequest.get(String(line.requestId));
      expect(caller).toBeDefined();
      expect(line.clientId).toBe(caller!.clientId);
    }
  });
});
