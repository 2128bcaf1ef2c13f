import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { Context } from 'aws-lambda';
import type { Caller } from '../../lib/api-keys/authenticator.js';
import { openEnvelope } from '../../lib/crypto/envelope.js';
import type { GatewayKind } from '../../lib/gateways/port.js';
import { requireTable } from '../../lib/kernel/config.js';
import {
  ConflictError,
  ForbiddenError,
  InvalidRequestError,
  NotFoundError,
} from '../../lib/kernel/errors.js';
import { GatewayError, PaymentDeclinedError } from '../../lib/gateways/vocabulary.js';
import { createPaymentWithReceipt, type PaymentResult } from '../../lib/payments/create.js';
import { idempotent } from '../../lib/payments/idempotency.js';
import { createPaymentBody, type CreatePaymentBody } from '../../lib/payments/schemas.js';
import { getReceipt } from '../../lib/receipts/inbox.js';
import { getTransaction } from '../../lib/transactions/transactions.js';
import { flattenedReceipt, gatewayFields, newHashedPan } from '../support/fixtures.js';
import {
  registerCardholder,
  request,
  startUseCases,
  storeReceipt,
  type Cardholder,
  type UseCases,
} from './support.js';

/**
 * Payment creation's decisions, through the real stripe and square SDKs against the gateway
 * sandbox: what is checked before the gateway is called (so a refusal never leaves a charge), one
 * payment per (merchant client, receiptId), escrow when the card has no user, and idempotency.
 */
describe('payments: a receipt stored, charged and mapped, or nothing charged', () => {
  let useCases: UseCases;
  let merchant: Caller;
  let issuer: Caller;
  let cardholder: Cardholder;

  beforeAll(async () => {
    useCases = await startUseCases({ gateways: true });
    [merchant, issuer] = await Promise.all([useCases.caller(['merchant']), useCases.caller(['issuer'])]);
    cardholder = await registerCardholder(useCases.deps, issuer);
  });

  beforeEach(() => useCases.sandbox!.reset());

  afterAll(() => useCases?.close());

  const sandbox = () => useCases.sandbox!;

  /** A valid request body as the route's schema makes it, for this gateway. */
  function body(kind: GatewayKind, overrides: Record<string, unknown> = {}): CreatePaymentBody {
    const fields = flattenedReceipt(overrides);
    return createPaymentBody.parse({ ...fields, ...gatewayFields(kind, fields) });
  }

  /** A request's reservation key, as the handler derives it from the client and its idempotency key. */
  const reservationKey = (caller: Caller, idempotencyKey: string) =>
    createHash('sha256').update(`${caller.clientId}:${idempotencyKey}`).digest('hex');

  const pay = (
    kind: GatewayKind,
    paymentBody: CreatePaymentBody,
    options: { caller?: Caller; key?: string } = {},
  ): Promise<PaymentResult> => {
    const caller = options.caller ?? merchant;
    return createPaymentWithReceipt(useCases.deps, {
      kind,
      body: paymentBody,
      caller,
      requestId: request().requestId,
      reservationKey: reservationKey(caller, options.key ?? `receipt:${paymentBody.receiptId}`),
    });
  };

  const gatewayCalls = () => sandbox().attempts.filter((attempt) => attempt.operation.endsWith('.create'));
  const paymentsMade = () =>
    sandbox().stats.paymentsCreated.gateway_a + sandbox().stats.paymentsCreated.gateway_b;

  it.each(['gateway_a', 'gateway_b'] as const)(
    "%s: charges the receipt's total with pointers to it, wraps it for the card's user and maps the transaction",
    async (kind) => {
      const paymentBody = body(kind, { recipientHashedPan: cardholder.hashedPan });

      const result = await pay(kind, paymentBody);

      const pointers = {
        receiptId: paymentBody.receiptId,
        transactionId: paymentBody.transactionId,
        merchantId: paymentBody.merchantId,
      };
      expect(result).toMatchObject({ gateway: kind, receiptMetadata: { ...pointers, isEscrowed: false } });
      const charged = await (await useCases.deps.gateways.get(kind)).retrievePayment(result.paymentId);
      expect(charged).toMatchObject({ amount: paymentBody.totalAmount, currency: 'USD', pointers });
      expect(paymentsMade()).toBe(1);

      const { envelope, mapping } = await getReceipt(useCases.deps, paymentBody.receiptId, issuer);
      expect(envelope).toMatchObject({ isEscrowed: false, keyId: cardholder.keyId });
      expect(JSON.parse(openEnvelope(envelope, cardholder.privateKey).toString('utf8'))).toMatchObject({
        receiptId: paymentBody.receiptId,
        summary: { total: paymentBody.totalAmount },
      });
      expect(mapping).toMatchObject({ transactionId: paymentBody.transactionId, paymentGateway: kind });
      const merchantView = await getTransaction(useCases.deps, paymentBody.transactionId, merchant);
      expect(merchantView.gatewayMetadata).toMatchObject({ paymentId: result.paymentId });
    },
  );

  it('escrows the receipt when no user has the card, or no card is named, and still charges', async () => {
    for (const recipient of [{ recipientHashedPan: newHashedPan() }, {}]) {
      const paymentBody = body('gateway_a', recipient);
      const result = await pay('gateway_a', paymentBody);
      expect(result.receiptMetadata.isEscrowed).toBe(true);
      const { envelope } = await getReceipt(useCases.deps, paymentBody.receiptId, merchant);
      expect(envelope).toMatchObject({ isEscrowed: true, escrowKeyId: useCases.deps.escrow.keyId });
    }
    expect(paymentsMade()).toBe(2);
  });

  it('refuses a merchantId another merchant client owns before the gateway is called, storing nothing', async () => {
    const owner = await useCases.caller(['merchant']);
    const owned = await storeReceipt(useCases.deps, owner, undefined);
    const paymentBody = body('gateway_a', { merchantId: owned.receipt.merchant.merchantId });

    await expect(pay('gateway_a', paymentBody)).rejects.toBeInstanceOf(ForbiddenError);

    expect(gatewayCalls()).toEqual([]);
    await expect(getReceipt(useCases.deps, paymentBody.receiptId, merchant)).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(getTransaction(useCases.deps, paymentBody.transactionId, merchant)).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });

  it('checks the amount before anything: gateway_a must charge exactly totalAmount', async () => {
    const paymentBody = { ...body('gateway_a'), amount: 1547 };

    const refused = await pay('gateway_a', paymentBody).catch((error: unknown) => error);

    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect((refused as InvalidRequestError).details).toMatchObject({ fields: [{ field: 'amount' }] });
    expect(gatewayCalls()).toEqual([]);
    await expect(getReceipt(useCases.deps, paymentBody.receiptId, merchant)).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });

  it('makes one payment per receipt: another request for it, by another key or gateway, is refused naming it', async () => {
    const paymentBody = body('gateway_a');
    const first = await pay('gateway_a', paymentBody);

    for (const [kind, key] of [
      ['gateway_a', 'another-idempotency-key'],
      ['gateway_b', `receipt:${paymentBody.receiptId}`],
    ] as const) {
      const again = { ...paymentBody, ...gatewayFields(kind, paymentBody) };
      const refused = await pay(kind, again, { key }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ConflictError);
      expect((refused as ConflictError).details).toEqual({
        field: 'receiptId',
        paymentGateway: 'gateway_a',
        paymentId: first.paymentId,
      });
    }
    expect(paymentsMade()).toBe(1);
    expect(gatewayCalls()).toHaveLength(1);
  });

  it("refuses a transactionId already mapped to another of the client's receipts, charging nothing", async () => {
    const first = body('gateway_a');
    await pay('gateway_a', first);

    const other = body('gateway_a', { transactionId: first.transactionId });
    const refused = await pay('gateway_a', other).catch((error: unknown) => error);

    expect(refused).toBeInstanceOf(ConflictError);
    expect((refused as ConflictError).details).toEqual({ field: 'transactionId' });
    expect(paymentsMade()).toBe(1);
    expect(gatewayCalls()).toHaveLength(1);
    // Another merchant client has its own transaction ids: the same one is free there.
    const elsewhere = await useCases.caller(['merchant']);
    const theirs = { ...other, merchantId: randomUUID() };
    await expect(pay('gateway_a', theirs, { caller: elsewhere })).resolves.toMatchObject({
      gateway: 'gateway_a',
    });
  });

  it('replays a completed request: the same request again returns the first payment and charges nothing more', async () => {
    const paymentBody = body('gateway_b');
    const first = await pay('gateway_b', paymentBody);

    const again = await pay('gateway_b', paymentBody);

    expect(again).toEqual(first);
    expect(sandbox().stats.paymentsCreated.gateway_b).toBe(1);
    expect(sandbox().stats.ordersCreated).toBe(1);
  });

  it('lets the same request carry on after the gateway failed, charging once; another request meanwhile is refused', async () => {
    sandbox().faults.add({
      kind: 'status',
      operation: 'stripe.paymentIntents.create',
      status: 503,
      times: 'always',
    });
    const paymentBody = body('gateway_a');

    await expect(pay('gateway_a', paymentBody)).rejects.toBeInstanceOf(GatewayError);
    expect(paymentsMade()).toBe(0);

    // The receipt is reserved for that request: a different one cannot start a second payment.
    const other = await pay('gateway_a', paymentBody, { key: 'a-different-request' }).catch(
      (error: unknown) => error,
    );
    expect(other).toBeInstanceOf(ConflictError);
    expect((other as ConflictError).details).toMatchObject({ field: 'receiptId', paymentId: null });

    sandbox().faults.clear();
    const result = await pay('gateway_a', paymentBody);
    expect(paymentsMade()).toBe(1);
    const mapping = await getTransaction(useCases.deps, paymentBody.transactionId, merchant);
    expect(mapping.gatewayMetadata).toMatchObject({ paymentId: result.paymentId });
  });

  it('charges nothing when the card is declined', async () => {
    sandbox().faults.add({ kind: 'decline', operation: 'stripe.paymentIntents.create' });

    await expect(pay('gateway_a', body('gateway_a'))).rejects.toBeInstanceOf(PaymentDeclinedError);

    expect(paymentsMade()).toBe(0);
  });

  it("leaves the sale receipt at its payment's state, written again only when the payment's state differs, and failed after a decline", async () => {
    const statusOf = async (receiptId: string) =>
      (await useCases.deps.repos.receipts.get({ merchantClientId: merchant.clientId, receiptId }))
        ?.paymentStatus;
    const stateOf = async (kind: GatewayKind, paymentId: string) =>
      (await useCases.deps.repos.payments.getPayment(kind, paymentId))?.state;
    // issue 40: the sale is written again only when the payment's state is not the one it was stored with.
    for (const kind of ['gateway_a', 'gateway_b'] as const) {
      const paymentBody = body(kind);
      const result = await pay(kind, paymentBody);
      expect(await statusOf(paymentBody.receiptId)).toBe(await stateOf(kind, result.paymentId));
    }
    // A declined one stays failed: the gateway replays its decline to the same request made again.
    const declined = body('gateway_a');
    sandbox().faults.add({ kind: 'decline', operation: 'stripe.paymentIntents.create' });
    await expect(pay('gateway_a', declined)).rejects.toBeInstanceOf(PaymentDeclinedError);
    expect(await statusOf(declined.receiptId)).toBe('failed');
  });

  describe('behind the idempotency store, as the handler runs it', () => {
    const context = { getRemainingTimeInMillis: () => 30_000 } as unknown as Context;
    const once = () =>
      idempotent<Parameters<typeof createPaymentWithReceipt>[1], PaymentResult>(
        useCases.deps.dynamo,
        requireTable(useCases.deps.config, 'idempotency'),
        (input) => createPaymentWithReceipt(useCases.deps, input),
      );
    const input = (paymentBody: CreatePaymentBody, key: string) => ({
      key,
      body: { kind: 'gateway_a', ...paymentBody },
      payload: {
        kind: 'gateway_a' as const,
        body: paymentBody,
        caller: merchant,
        requestId: request().requestId,
        reservationKey: reservationKey(merchant, key),
      },
    });

    it('answers a repeat with the stored result without calling the gateway, and a changed body under the same key with a conflict', async () => {
      const key = `${merchant.clientId}:${randomUUID()}`;
      const paymentBody = body('gateway_a');
      const first = await once().run(input(paymentBody, key), context);
      const calls = gatewayCalls().length;

      // A second function instance (a new wrapper) finds the stored result.
      await expect(once().run(input(paymentBody, key), context)).resolves.toEqual(first);
      expect(gatewayCalls()).toHaveLength(calls);

      const changed = { ...paymentBody, merchantName: 'Another name' };
      const refused = await once()
        .run(input(changed, key), context)
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ConflictError);
      expect((refused as ConflictError).details).toEqual({ field: 'Idempotency-Key' });
      expect(gatewayCalls()).toHaveLength(calls);
      expect(paymentsMade()).toBe(1);
    });
  });
});
