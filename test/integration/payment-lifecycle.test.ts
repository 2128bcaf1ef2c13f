import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { onboardUser, type OnboardedUser } from '../support/flow.js';
import {
  eventsSettled,
  fetchReceipt,
  pay,
  sandboxStripe,
  startReceiver,
  statusBecomes,
  type Kind,
  type Receiver,
} from '../support/lifecycle.js';
import { patience, pollUntil } from '../support/processes.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/**
 * A receipt follows its payment (issue 21): the status comes from the gateways' own signed events,
 * which the gateway sandbox sends exactly as Stripe and Square do.
 */
interface Data<T> {
  success: true;
  data: T;
}

describe('payment status from the gateways’ own events', () => {
  let stack: TestStack;
  let merchant: string;
  let issuer: string;
  let user: OnboardedUser;
  let receiver: Receiver;
  let webhookSecret: string;

  beforeAll(async () => {
    stack = await startTestStack();
    merchant = (await stack.apiKey(['merchant'])).apiKey;
    issuer = (await stack.apiKey(['issuer'])).apiKey;
    user = await onboardUser(stack, issuer);
    receiver = await startReceiver();
    const webhook = await stack.request<Data<{ secret: string }>>('POST', '/api/v1/webhooks', {
      apiKey: issuer,
      body: { url: receiver.url, events: ['receipt.updated', 'receipt.available'] },
    });
    expect(webhook.status).toBe(201);
    webhookSecret = webhook.json.data.secret;
  });

  afterAll(async () => {
    await receiver?.close();
    await stack?.close();
  });

  const updatesOf = (receiptId: string) =>
    receiver.events(webhookSecret, 'receipt.updated').filter((event) => event.data.receiptId === receiptId);

  it('gateway_a: pending at creation, succeeded once confirmed in the sandbox, and the issuer hears of it', async () => {
    const { paymentId, body } = await pay(stack, merchant, 'gateway_a', user.hashedPan);
    expect((await fetchReceipt(stack, issuer, body.receiptId)).paymentStatus).toBe('pending');
    const stripe = await sandboxStripe(stack);
    const confirmed = await stripe.paymentIntents.confirm(paymentId, { payment_method: 'pm_card_visa' });
    expect(confirmed.status).toBe('succeeded');
    await statusBecomes(stack, issuer, body.receiptId, 'succeeded');
    const [update] = await pollUntil(
      'receipt.updated at the issuer',
      async () => (updatesOf(body.receiptId).length > 0 ? updatesOf(body.receiptId) : undefined),
      { timeoutMs: patience(15_000), intervalMs: 50 },
    );
    expect(update?.data).toEqual({
      receiptId: body.receiptId,
      merchantId: body.merchantId,
      transactionId: body.transactionId,
      paymentStatus: 'succeeded',
      previousPaymentStatus: 'pending',
    });
  });

  it('gateway_b: succeeded at creation; its own payment events are verified and change nothing more', async () => {
    const { body } = await pay(stack, merchant, 'gateway_b', user.hashedPan);
    await statusBecomes(stack, issuer, body.receiptId, 'succeeded');
    await eventsSettled(stack);
    const events = stack.sandbox!.events.sent.filter((event) => event.gateway === 'gateway_b');
    expect(events.map((event) => [event.type, event.lastStatus])).toEqual(
      expect.arrayContaining([
        ['payment.created', 200],
        ['payment.updated', 200],
      ]),
    );
  });

  it.each(['gateway_a'] as Kind[])('%s: a declined confirmation ends failed, a cancel canceled', async (kind) => {
    const stripe = await sandboxStripe(stack);
    const declined = await pay(stack, merchant, kind, user.hashedPan);
    await expect(
      stripe.paymentIntents.confirm(declined.paymentId, { payment_method: 'pm_card_chargeDeclined' }),
    ).rejects.toMatchObject({ type: 'StripeCardError' });
    await statusBecomes(stack, issuer, declined.body.receiptId, 'failed');
    const canceled = await pay(stack, merchant, kind, user.hashedPan);
    await stripe.paymentIntents.cancel(canceled.paymentId);
    await statusBecomes(stack, issuer, canceled.body.receiptId, 'canceled');
  });

  it('refunds itemised through the API and the rest from the dashboard: the sale ends refunded', async () => {
    const { paymentId, body } = await pay(stack, merchant, 'gateway_a', user.hashedPan);
    const stripe = await sandboxStripe(stack);
    await stripe.paymentIntents.confirm(paymentId, { payment_method: 'pm_card_visa' });
    await statusBecomes(stack, issuer, body.receiptId, 'succeeded');
    const items = body.items as { lineItemId: string }[];
    const refund = await stack.request<Data<Record<string, unknown>>>(
      'POST',
      `/api/v1/payments/gateway_a/${paymentId}/refunds`,
      { apiKey: merchant, body: { refundId: randomUUID(), items: [{ lineItemId: items[0]!.lineItemId, quantity: 1 }] } },
    );
    expect(refund.status).toBe(201);
    expect(refund.json.data).toMatchObject({ amount: 450 + 39, status: 'succeeded', gateway: 'gateway_a' });
    await statusBecomes(stack, issuer, body.receiptId, 'partially_refunded');
    stack.sandbox!.dashboardRefund('gateway_a', paymentId);
    await statusBecomes(stack, issuer, body.receiptId, 'refunded');
    const list = await stack.request<Data<{ refunds: unknown[] }>>(
      'GET',
      `/api/v1/payments/gateway_a/${paymentId}/refunds`,
      { apiKey: merchant },
    );
    expect(list.json.data.refunds).toHaveLength(2);
  });
});
