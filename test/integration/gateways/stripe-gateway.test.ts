import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ConflictError, InvalidRequestError } from '../../../lib/kernel/errors.js';
import { GatewayError, PaymentDeclinedError } from '../../../lib/gateways/vocabulary.js';
import type { PaymentGateway } from '../../../lib/gateways/port.js';
import { validateStripeMetadata } from '../../../lib/gateways/stripe.js';
import { startGatewaySandbox, type GatewaySandbox } from '../../../local/gateway-sandbox/index.js';
import {
  attemptsOf,
  clockedGateways,
  NEVER_MS,
  oneKey,
  paymentRequest,
  pointers,
  sandboxGateways,
} from './support.js';

const CREATE = 'stripe.paymentIntents.create';
const RETRIEVE = 'stripe.paymentIntents.retrieve';

describe('StripeGateway (gateway_a) with the real stripe SDK against the sandbox', () => {
  let sandbox: GatewaySandbox;
  let gateway: PaymentGateway;

  beforeAll(async () => {
    sandbox = await startGatewaySandbox();
    gateway = (await sandboxGateways(sandbox.url)).stripe;
  });
  afterAll(() => sandbox.stop());
  beforeEach(() => sandbox.reset());

  it("confirms at create with a payment method and reads the charge's network references", async () => {
    const first = await gateway.createPayment(paymentRequest({ paymentMethod: 'pm_card_mastercard' }));
    const second = await gateway.createPayment(paymentRequest({ paymentMethod: 'pm_card_visa' }));

    expect(first).toMatchObject({
      status: 'succeeded',
      state: 'succeeded',
      clientSecret: expect.any(String),
    });
    expect(first.references).toEqual({
      network: 'mastercard',
      authorizationCode: expect.stringMatching(/^[A-Z0-9]{6}$/),
      networkTransactionId: expect.stringMatching(/^\d{15}$/),
      last4: '4444',
      statementDescriptor: 'RECEIPTS SANDBOX',
      providerIds: { paymentIntentId: first.paymentId, chargeId: expect.stringMatching(/^ch_/) },
    });
    // Each charge has its own.
    expect(second.references?.authorizationCode).not.toBe(first.references?.authorizationCode);
    expect(second.references?.networkTransactionId).not.toBe(first.references?.networkTransactionId);
    // A refund carries the acquirer reference number the network gives it.
    const refund = await gateway.refund({
      paymentId: first.paymentId,
      amount: 100,
      currency: 'USD',
      idempotencyKey: 'refund-references',
      refundId: 'r-1',
    });
    expect(refund.references).toEqual({
      acquirerReferenceNumber: expect.stringMatching(/^\d{23}$/),
      providerIds: {
        paymentIntentId: first.paymentId,
        chargeId: first.references?.providerIds.chargeId,
        refundId: refund.providerRefundId,
      },
    });
  });

  it('creates a PaymentIntent carrying the pointers and reads them back', async () => {
    const request = paymentRequest({ amount: 4_250, currency: 'eur' });
    const created = await gateway.createPayment(request);

    expect(created).toEqual({
      paymentId: expect.stringMatching(/^pi_/),
      clientSecret: expect.stringMatching(new RegExp(`^${created.paymentId}_secret_`)),
      orderId: null,
      status: 'requires_payment_method',
      state: 'pending',
      amount: 4_250,
      currency: 'EUR',
      // The intent's own answer: the sandbox is a test-mode account.
      livemode: false,
      // Nothing is charged until the intent is confirmed: no network references yet.
      references: null,
    });
    await expect(gateway.retrievePayment(created.paymentId)).resolves.toEqual({
      paymentId: created.paymentId,
      orderId: null,
      amount: 4_250,
      currency: 'EUR',
      status: 'requires_payment_method',
      state: 'pending',
      pointers: request.pointers,
    });
    expect(sandbox.stats.paymentsCreated.gateway_a).toBe(1);
  });

  it('returns the first payment when the same receipt is sent again', async () => {
    const request = paymentRequest();
    const first = await gateway.createPayment(request);
    const second = await gateway.createPayment({ ...request });

    expect(second.paymentId).toBe(first.paymentId);
    expect(sandbox.stats.requests[CREATE]).toBe(2);
    expect(sandbox.stats.paymentsCreated.gateway_a).toBe(1);
  });

  it('refuses to reuse a receipt key for a different amount', async () => {
    const request = paymentRequest();
    await gateway.createPayment(request);

    await expect(gateway.createPayment({ ...request, amount: request.amount + 1 })).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(sandbox.stats.paymentsCreated.gateway_a).toBe(1);
  });

  it('lets the SDK retry a 500 into success', async () => {
    sandbox.faults.add({ kind: 'status', operation: CREATE, status: 500, times: 1 });

    const created = await gateway.createPayment(paymentRequest());

    expect(created.paymentId).toMatch(/^pi_/);
    expect(sandbox.stats.requests[CREATE]).toBe(2);
    expect(sandbox.stats.paymentsCreated.gateway_a).toBe(1);
  });

  it('gives up with GatewayError after three attempts when the API keeps failing', async () => {
    sandbox.faults.add({ kind: 'status', operation: CREATE, status: 503, times: 'always' });

    await expect(gateway.createPayment(paymentRequest())).rejects.toBeInstanceOf(GatewayError);
    expect(sandbox.stats.requests[CREATE]).toBe(3);
    expect(sandbox.stats.paymentsCreated.gateway_a).toBe(0);
  });

  it('recovers a payment whose response was lost after it was committed, without charging twice', async () => {
    const impatient = await clockedGateways(sandbox.url);
    sandbox.faults.add({ kind: 'hang', operation: CREATE, when: 'after-commit', ms: NEVER_MS, times: 1 });
    const request = paymentRequest();

    const creating = impatient.stripe.createPayment(request);
    await impatient.timeOut(sandbox);
    const created = await creating;

    // The SDK timed out on the held answer and retried with the same Idempotency-Key, which got the
    // stored result: two attempts, one key.
    const attempts = attemptsOf(sandbox, CREATE);
    expect(attempts.map((attempt) => attempt.fault)).toEqual(['hang', null]);
    oneKey(attempts);
    expect(sandbox.stats.paymentsCreated.gateway_a).toBe(1);
    await expect(gateway.createPayment(request)).resolves.toEqual(created);
    expect((await gateway.retrievePayment(created.paymentId))?.pointers).toEqual(request.pointers);
  });

  it('surfaces a lost response as GatewayError when retries are off, and a later retry finds the payment', async () => {
    const impatient = await clockedGateways(sandbox.url, { maxAttempts: 1 });
    sandbox.faults.add({ kind: 'hang', operation: CREATE, when: 'after-commit', ms: NEVER_MS, times: 1 });
    const request = paymentRequest();

    const creating = impatient.stripe.createPayment(request);
    await impatient.timeOut(sandbox);
    await expect(creating).rejects.toBeInstanceOf(GatewayError);
    expect(attemptsOf(sandbox, CREATE).map((attempt) => attempt.fault)).toEqual(['hang']);
    expect(sandbox.stats.paymentsCreated.gateway_a).toBe(1);

    // The caller's retry, at the service's own timeout: one attempt, the same key, the same payment.
    const { stripe: noRetries } = await sandboxGateways(sandbox.url, { maxAttempts: 1 });
    const retried = await noRetries.createPayment(request);
    expect(attemptsOf(sandbox, CREATE).map((attempt) => attempt.fault)).toEqual(['hang', null]);
    oneKey(attemptsOf(sandbox, CREATE));
    expect(sandbox.stats.paymentsCreated.gateway_a).toBe(1);
    expect((await gateway.retrievePayment(retried.paymentId))?.pointers).toEqual(request.pointers);
  });

  it('maps a card decline to PaymentDeclinedError', async () => {
    sandbox.faults.add({ kind: 'decline', operation: CREATE, times: 1 });

    const failure = gateway.createPayment(paymentRequest());

    await expect(failure).rejects.toBeInstanceOf(PaymentDeclinedError);
    await expect(failure).rejects.toMatchObject({ status: 402, details: { declineCode: 'generic_decline' } });
    expect(sandbox.stats.paymentsCreated.gateway_a).toBe(0);
  });

  it('returns null for a payment the provider does not have', async () => {
    await expect(gateway.retrievePayment('pi_0000000000000000000000')).resolves.toBeNull();
    expect(sandbox.stats.requests[RETRIEVE]).toBe(1);
    // Not an intent id at all: answered without a request, so it can never reach the API as a path.
    await expect(gateway.retrievePayment('../v1/charges')).resolves.toBeNull();
    expect(sandbox.stats.requests[RETRIEVE]).toBe(1);
  });

  it('rejects pointers beyond the metadata limits before calling the provider', async () => {
    const tooLong = { ...pointers(), merchantId: 'm'.repeat(501) };

    await expect(gateway.createPayment(paymentRequest({ pointers: tooLong }))).rejects.toBeInstanceOf(
      InvalidRequestError,
    );
    await expect(
      gateway.createPayment(paymentRequest({ pointers: { ...pointers(), receiptId: '' } })),
    ).rejects.toThrow('limits');
    expect(sandbox.stats.requests[CREATE]).toBe(0);
  });

  it('checks every Stripe metadata limit', () => {
    const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
    expect(() => validateStripeMetadata(many)).toThrow(InvalidRequestError);
    expect(() => validateStripeMetadata({ ['k'.repeat(41)]: 'v' })).toThrow(InvalidRequestError);
    expect(() => validateStripeMetadata({ 'a[b]': 'v' })).toThrow(InvalidRequestError);
    expect(() => validateStripeMetadata({ key: 'v'.repeat(501) })).toThrow(InvalidRequestError);
    expect(() =>
      validateStripeMetadata({ ...Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'])) }),
    ).not.toThrow();
    expect(() => validateStripeMetadata({ ['k'.repeat(40)]: 'v'.repeat(500) })).not.toThrow();
  });

  it('reports health, and GatewayError when the API is unreachable', async () => {
    await expect(gateway.checkHealth()).resolves.toBeUndefined();

    const gone = await startGatewaySandbox();
    const { stripe: orphan } = await sandboxGateways(gone.url);
    await gone.stop();
    await expect(orphan.checkHealth()).rejects.toBeInstanceOf(GatewayError);
  });
});
