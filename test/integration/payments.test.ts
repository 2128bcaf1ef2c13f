import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { GatewayKind } from '../../lib/gateways/port.js';
import { flattenedReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { startTestStack, type TestStack } from '../support/stack.js';

interface Data<T> {
  success: true;
  data: T;
}
interface PaymentResult {
  paymentId: string;
  clientSecret: string | null;
  orderId: string | null;
  gateway: GatewayKind;
  receiptMetadata: { receiptId: string; transactionId: string };
}
interface ErrorBody {
  error: { code: string; details?: { fields?: { field: string }[] } };
}

const GATEWAY_TIMEOUT_MS = 1_000;

describe('payments over HTTP with the real Stripe and Square SDKs against the gateway sandbox', () => {
  let stack: TestStack;
  let merchant: { apiKey: string };
  let issuer: { apiKey: string };
  let user: OnboardedUser;

  beforeAll(async () => {
    // The stack's gateway calls time out on its clock (lib/gateways/stripe-client.ts, timed-fetch.ts):
    // only a move of the test's clock past this ends an attempt, so every attempt counted below is one
    // the SDKs made for the fault the test armed, never one the machine's load made. The SDKs make up
    // to 3 attempts.
    stack = await startTestStack({ env: { GATEWAY_TIMEOUT_MS: String(GATEWAY_TIMEOUT_MS) } });
    merchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    user = await onboardUser(stack, issuer.apiKey);
  });

  beforeEach(() => stack.sandbox!.reset());

  /** A hang the sandbox holds until the client closes the connection: the test's clock times it out. */
  const untilTheClientGivesUp = { ms: 600_000 };

  /** Sends `request`, and once the sandbox holds its gateway call, moves the clock past the timeout. */
  async function timedOut<T>(request: Promise<T>): Promise<T> {
    await stack.sandbox!.held();
    stack.clock.advance(GATEWAY_TIMEOUT_MS);
    return request;
  }

  afterAll(async () => {
    await stack?.close();
  });

  const paymentBody = (kind: GatewayKind, overrides: Record<string, unknown> = {}) => {
    const body = flattenedReceipt({ recipientHashedPan: user.hashedPan, ...overrides });
    return kind === 'gateway_a'
      ? { amount: body.totalAmount, ...body }
      : { cardNonce: 'cnon:card-nonce-ok', ...body };
  };

  const create = <T = Data<PaymentResult>>(
    gateway: string,
    body: unknown,
    headers: Record<string, string> = {},
  ) =>
    stack.request<T>('POST', `/api/v1/payments/${gateway}/create`, {
      apiKey: merchant.apiKey,
      body,
      headers,
    });

  const decryptPayment = (
    paymentId: string,
    gateway: string,
    accessTokenId: string,
    privateKey = user.privateKey,
    apiKey = issuer.apiKey,
  ) =>
    stack.request<Data<Record<string, unknown>>>('POST', '/api/v1/payments/decrypt', {
      apiKey,
      body: { paymentId, gateway, accessTokenId, privateKey },
    });

  it.each(['gateway_a', 'gateway_b'] as const)(
    'runs the five-step flow on %s and returns the receipt from payments/decrypt',
    async (kind) => {
      const body = paymentBody(kind);
      const created = await create(kind, body);
      expect(created.status).toBe(200);
      const result = created.json.data;
      expect(result).toMatchObject({
        gateway: kind,
        receiptMetadata: { receiptId: body.receiptId, transactionId: body.transactionId },
        // The local stage refuses live credentials, so no payment of it is live.
        livemode: false,
      });
      if (kind === 'gateway_a') {
        expect(result.paymentId).toMatch(/^pi_/);
        expect(result.clientSecret).toMatch(/_secret_/);
        expect(result.orderId).toBeNull();
      } else {
        expect(result.clientSecret).toBeNull();
        expect(result.orderId).toBeTruthy();
      }
      const token = await grantToken(stack, issuer.apiKey, user);
      const opened = await decryptPayment(result.paymentId, kind, token);
      expect(opened.status).toBe(200);
      expect(opened.headers.get('cache-control')).toBe('no-store');
      expect(opened.json.data).toMatchObject({
        receiptId: body.receiptId,
        merchant: { merchantId: body.merchantId, name: body.merchantName },
        transaction: { transactionId: body.transactionId },
        summary: { subtotal: 1425, totalTax: 123, total: 1548, currency: 'USD' },
      });
      // The stored mapping points at this payment.
      const mapping = await stack.request<Data<{ gatewayMetadata: { paymentId: string } }>>(
        'GET',
        `/api/v1/transactions/${body.transactionId}`,
        {
          apiKey: merchant.apiKey,
        },
      );
      expect(mapping.json.data.gatewayMetadata.paymentId).toBe(result.paymentId);
    },
  );

  it('charges exactly totalAmount on gateway_b, derived from the items plus tax', async () => {
    const body = paymentBody('gateway_b');
    const created = await create('gateway_b', body);
    expect(created.status).toBe(200);
    const gateway = await stack.deps.gateways.get('gateway_b');
    const payment = await gateway.retrievePayment(created.json.data.paymentId);
    expect(payment).toMatchObject({ amount: 1548, currency: 'USD', orderId: created.json.data.orderId });
  });

  it.each(['gateway_a', 'gateway_b'] as const)(
    'answers a retried create on %s with the first result and no second gateway call',
    async (kind) => {
      const body = paymentBody(kind);
      const first = await create(kind, body);
      expect(first.status).toBe(200);
      const callsAfterFirst = { ...stack.sandbox!.stats.requests };
      const again = await create(kind, body);
      expect(again.status).toBe(200);
      expect(again.json.data).toEqual(first.json.data);
      expect(stack.sandbox!.stats.paymentsCreated[kind]).toBe(1);
      expect(stack.sandbox!.stats.requests).toEqual(callsAfterFirst);
    },
  );

  it('refuses an Idempotency-Key reused for a different request with 409', async () => {
    const key = `pos-7-${randomUUID()}`;
    expect((await create('gateway_a', paymentBody('gateway_a'), { 'Idempotency-Key': key })).status).toBe(
      200,
    );
    const reused = await create<ErrorBody>('gateway_a', paymentBody('gateway_a'), { 'Idempotency-Key': key });
    expect([reused.status, reused.json.error.code]).toEqual([409, 'CONFLICT']);
  });

  it.each(['gateway_a', 'gateway_b'] as const)(
    'answers a create re-sent for the same receipt without an Idempotency-Key, changed, with a 409 naming the payment (first on %s)',
    async (kind) => {
      type Conflict = { error: { code: string; message: string; details: Record<string, unknown> } };
      const body = paymentBody(kind);
      const first = await create(kind, body);
      expect(first.status).toBe(200);
      const { paymentId } = first.json.data;
      // The till sends it again with a line renamed, and again on the other gateway: no key either time.
      const renamed = await create<Conflict>(kind, { ...body, merchantName: 'Corner Coffee (till 2)' });
      const other = kind === 'gateway_a' ? 'gateway_b' : 'gateway_a';
      const { amount: _amount, cardNonce: _nonce, ...receiptFields } = body as Record<string, unknown>;
      const elsewhere = await create<Conflict>(
        other,
        other === 'gateway_a'
          ? { ...receiptFields, amount: body.totalAmount }
          : { ...receiptFields, cardNonce: 'cnon:card-nonce-ok' },
      );
      for (const conflict of [renamed, elsewhere]) {
        expect([conflict.status, conflict.json.error.code]).toEqual([409, 'CONFLICT']);
        expect(conflict.json.error.details).toEqual({ field: 'receiptId', paymentId, paymentGateway: kind });
        expect(conflict.json.error.message).toContain(
          `This receipt already has a payment (${paymentId} on ${kind})`,
        );
        expect(conflict.json.error.message).toContain('one payment per receipt');
        expect(conflict.json.error.message).not.toMatch(/idempotency/i);
      }
      expect(stack.sandbox!.stats.paymentsCreated).toMatchObject({ [kind]: 1, [other]: 0 });
    },
  );

  it('names the payment of a reused Idempotency-Key, and blames the key only because it was sent', async () => {
    const key = `pos-8-${randomUUID()}`;
    const first = await create('gateway_b', paymentBody('gateway_b'), { 'Idempotency-Key': key });
    expect(first.status).toBe(200);
    const reused = await create<{ error: { message: string; details: Record<string, unknown> } }>(
      'gateway_b',
      paymentBody('gateway_b'),
      { 'Idempotency-Key': key },
    );
    expect(reused.status).toBe(409);
    expect(reused.json.error.details).toEqual({
      field: 'Idempotency-Key',
      paymentId: first.json.data.paymentId,
      paymentGateway: 'gateway_b',
    });
    expect(reused.json.error.message).toMatch(
      /^This Idempotency-Key was already used with a different request body/,
    );
  });

  it('makes one payment per receipt: another gateway or Idempotency-Key is 409 naming it, and charges nothing', async () => {
    const body = paymentBody('gateway_a');
    const first = await create('gateway_a', body, { 'Idempotency-Key': `pos-${randomUUID()}` });
    expect(first.status).toBe(200);
    const { amount: _amount, ...receiptFields } = body as Record<string, unknown>;
    const onSquare = await create<
      ErrorBody & { error: { message: string; details: Record<string, unknown> } }
    >('gateway_b', { ...receiptFields, cardNonce: 'cnon:card-nonce-ok' });
    expect([onSquare.status, onSquare.json.error.code]).toEqual([409, 'CONFLICT']);
    expect(onSquare.json.error.details).toMatchObject({
      paymentId: first.json.data.paymentId,
      paymentGateway: 'gateway_a',
    });
    const otherKey = await create<ErrorBody>('gateway_a', body, { 'Idempotency-Key': `pos-${randomUUID()}` });
    expect([otherKey.status, otherKey.json.error.code]).toEqual([409, 'CONFLICT']);
    expect(stack.sandbox!.stats.paymentsCreated).toMatchObject({ gateway_a: 1, gateway_b: 0 });
  });

  it.each(['gateway_a', 'gateway_b'] as const)(
    'refuses a transactionId mapped to another receipt on %s before it charges',
    async (kind) => {
      const first = paymentBody(kind);
      expect((await create(kind, first)).status).toBe(200);
      const clash = await create<ErrorBody>(kind, paymentBody(kind, { transactionId: first.transactionId }));
      expect([clash.status, clash.json.error.code]).toEqual([409, 'CONFLICT']);
      expect(stack.sandbox!.stats.paymentsCreated[kind]).toBe(1);
    },
  );

  it('recovers a Stripe payment whose response was lost after it was made: one payment, same id on retry', async () => {
    stack.sandbox!.faults.add({
      kind: 'hang',
      operation: 'stripe.paymentIntents.create',
      when: 'after-commit',
      ...untilTheClientGivesUp,
    });
    const body = paymentBody('gateway_a');
    const first = await timedOut(create('gateway_a', body));
    expect(first.status).toBe(200);
    // The SDK timed the held answer out and asked again under the same key: the stored result.
    const attempts = stack.sandbox!.attempts.filter((a) => a.operation === 'stripe.paymentIntents.create');
    expect(attempts.map((attempt) => attempt.fault)).toEqual(['hang', null]);
    expect(new Set(attempts.map((attempt) => attempt.idempotencyKey)).size).toBe(1);
    const again = await create('gateway_a', body);
    expect(again.json.data.paymentId).toBe(first.json.data.paymentId);
    expect(stack.sandbox!.stats.paymentsCreated.gateway_a).toBe(1);
  });

  it('recovers a Square payment whose response was lost: 502 first, then the same payment on retry', async () => {
    stack.sandbox!.faults.add({
      kind: 'hang',
      operation: 'square.payments.create',
      when: 'after-commit',
      ...untilTheClientGivesUp,
    });
    const body = paymentBody('gateway_b');
    const first = await timedOut(create<ErrorBody>('gateway_b', body));
    expect([first.status, first.json.error.code]).toEqual([502, 'GATEWAY_ERROR']);
    const retry = await create('gateway_b', body);
    expect(retry.status).toBe(200);
    expect(stack.sandbox!.stats.paymentsCreated.gateway_b).toBe(1);
    // Square's SDK does not retry a timeout: the held attempt, then the caller's retry, one key.
    const attempts = stack.sandbox!.attempts.filter((a) => a.operation === 'square.payments.create');
    expect(attempts.map((attempt) => attempt.fault)).toEqual(['hang', null]);
    expect(new Set(attempts.map((attempt) => attempt.idempotencyKey)).size).toBe(1);
    const gateway = await stack.deps.gateways.get('gateway_b');
    expect((await gateway.retrievePayment(retry.json.data.paymentId))?.pointers?.receiptId).toBe(
      body.receiptId,
    );
  });

  it('retries a gateway 500 to success', async () => {
    stack.sandbox!.faults.add({
      kind: 'status',
      operation: 'stripe.paymentIntents.create',
      status: 500,
      times: 1,
    });
    const created = await create('gateway_a', paymentBody('gateway_a'));
    expect(created.status).toBe(200);
    // Retried once, and charged once: no attempt times out while the clock stands still.
    expect(stack.sandbox!.stats.requests['stripe.paymentIntents.create']).toBe(2);
    expect(stack.sandbox!.stats.paymentsCreated.gateway_a).toBe(1);
  });

  it.each([
    ['gateway_a', 'stripe.paymentIntents.create'],
    ['gateway_b', 'square.orders.create'],
  ] as const)(
    'answers a persistently failing %s with 502 and leaves nothing that blocks a later retry',
    async (kind, operation) => {
      stack.sandbox!.faults.add({ kind: 'status', operation, status: 503, times: 'always' });
      const body = paymentBody(kind);
      const failed = await create<ErrorBody>(kind, body);
      expect([failed.status, failed.json.error.code]).toEqual([502, 'GATEWAY_ERROR']);
      expect(stack.sandbox!.stats.requests[operation]).toBe(3);
      stack.sandbox!.reset();
      const retried = await create(kind, body);
      expect(retried.status).toBe(200);
      expect(stack.sandbox!.stats.paymentsCreated[kind]).toBe(1);
    },
  );

  it.each([
    ['gateway_a', 'stripe.paymentIntents.create'],
    ['gateway_b', 'square.payments.create'],
  ] as const)('answers a decline on %s with 402 PAYMENT_DECLINED', async (kind, operation) => {
    stack.sandbox!.faults.add({ kind: 'decline', operation });
    const declined = await create<ErrorBody>(kind, paymentBody(kind));
    expect([declined.status, declined.json.error.code]).toEqual([402, 'PAYMENT_DECLINED']);
  });

  it('declines the sandbox declined nonce on gateway_b', async () => {
    const declined = await create<ErrorBody>(
      'gateway_b',
      paymentBody('gateway_b', { cardNonce: 'cnon:card-nonce-declined' }),
    );
    expect([declined.status, declined.json.error.code]).toEqual([402, 'PAYMENT_DECLINED']);
  });

  it('validates the gateway, the amount and the amounts adding up', async () => {
    const unknown = await create<ErrorBody>('paypal', paymentBody('gateway_a'));
    expect([unknown.status, unknown.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
    const { amount: _amount, ...withoutAmount } = paymentBody('gateway_a') as Record<string, unknown>;
    const missing = await create<ErrorBody>('gateway_a', withoutAmount);
    expect([missing.status, missing.json.error.details?.fields?.[0]?.field]).toEqual([400, 'amount']);
    const mismatch = await create<ErrorBody>('stripe', { ...paymentBody('gateway_a'), amount: 999 });
    expect([mismatch.status, mismatch.json.error.details?.fields?.[0]?.field]).toEqual([400, 'amount']);
    const sums = await create<ErrorBody>('square', paymentBody('gateway_b', { taxAmount: 1 }));
    expect(sums.status).toBe(400);
    expect(sums.json.error.details?.fields?.map((field) => field.field)).toContain('totalAmount');
    expect(stack.sandbox!.stats.paymentsCreated).toEqual({ gateway_a: 0, gateway_b: 0 });
  });

  it("refuses another user's token and a wrong key with the uniform 403, and unknown payments with 404", async () => {
    const created = await create('gateway_a', paymentBody('gateway_a'));
    const { paymentId } = created.json.data;
    const stranger = await onboardUser(stack, issuer.apiKey);
    const reference = withoutRequestIdentity(
      (await decryptPayment(paymentId, 'gateway_a', randomUUID())).text,
    );
    const strangerToken = await grantToken(stack, issuer.apiKey, stranger);
    const otherUser = await decryptPayment(paymentId, 'gateway_a', strangerToken, stranger.privateKey);
    expect(otherUser.status).toBe(403);
    expect(withoutRequestIdentity(otherUser.text)).toEqual(reference);
    const token = await grantToken(stack, issuer.apiKey, user);
    const wrongKey = await decryptPayment(paymentId, 'gateway_a', token, stranger.privateKey);
    expect(wrongKey.status).toBe(403);
    expect(withoutRequestIdentity(wrongKey.text)).toEqual(reference);
    const otherIssuer = await stack.apiKey(['issuer']);
    const foreignClient = await decryptPayment(
      paymentId,
      'gateway_a',
      token,
      user.privateKey,
      otherIssuer.apiKey,
    );
    expect(foreignClient.status).toBe(403);
    // A payment id the gateway does not know, and a payment that carries no receipt of ours.
    const unknown = await decryptPayment('pi_doesnotexist000000000000', 'gateway_a', token);
    expect([unknown.status, (unknown.json as unknown as ErrorBody).error.code]).toEqual([404, 'not_found']);
    const gateway = await stack.deps.gateways.get('gateway_a');
    const bare = await gateway.createPayment({
      idempotencyKey: randomUUID(),
      amount: 100,
      currency: 'USD',
      pointers: { receiptId: randomUUID(), transactionId: randomUUID(), merchantId: randomUUID() },
      lines: [{ name: 'x', quantity: 1, unitPrice: 100, totalPrice: 100 }],
      taxAmount: 0,
    });
    const noReceipt = await decryptPayment(bare.paymentId, 'gateway_a', token);
    expect([noReceipt.status, (noReceipt.json as unknown as ErrorBody).error.code]).toEqual([
      404,
      'not_found',
    ]);
    // The right payment id on the wrong gateway is not found either.
    expect((await decryptPayment(paymentId, 'gateway_b', token)).status).toBe(404);
    // And the genuine request still works.
    expect((await decryptPayment(paymentId, 'gateway_a', token)).status).toBe(200);
  });

  it("refuses a payment whose metadata copies another payment's receipt pointers", async () => {
    const body = paymentBody('gateway_a');
    const genuine = await create('gateway_a', body);
    expect(genuine.status).toBe(200);
    // Anyone can put any metadata on a payment of their own; the stored mapping names the real payment.
    const gateway = await stack.deps.gateways.get('gateway_a');
    const forged = await gateway.createPayment({
      idempotencyKey: randomUUID(),
      amount: 100,
      currency: 'USD',
      pointers: { receiptId: body.receiptId, transactionId: body.transactionId, merchantId: body.merchantId },
      lines: [{ name: 'x', quantity: 1, unitPrice: 100, totalPrice: 100 }],
      taxAmount: 0,
    });
    const token = await grantToken(stack, issuer.apiKey, user);
    const refused = await decryptPayment(forged.paymentId, 'gateway_a', token);
    expect([refused.status, (refused.json as unknown as ErrorBody).error.code]).toEqual([404, 'not_found']);
    expect((await decryptPayment(genuine.json.data.paymentId, 'gateway_a', token)).status).toBe(200);
  });

  it('requires all four payments/decrypt fields', async () => {
    const reply = await stack.request<ErrorBody>('POST', '/api/v1/payments/decrypt', {
      apiKey: issuer.apiKey,
      body: { paymentId: 'pi_1' },
    });
    expect(reply.status).toBe(400);
    expect(reply.json.error.code).toBe('INVALID_REQUEST');
    expect(reply.json.error.details?.fields?.map((field) => field.field)).toEqual(
      expect.arrayContaining(['gateway', 'accessTokenId', 'privateKey']),
    );
  });

  it('reports both gateways in health', async () => {
    const health = await stack.request<Data<{ dependencies: Record<string, { status: string }> }>>(
      'GET',
      '/api/v1/health',
    );
    expect(health.json.data.dependencies.gateway_a?.status).toBe('up');
    expect(health.json.data.dependencies.gateway_b?.status).toBe('up');
  });
});
