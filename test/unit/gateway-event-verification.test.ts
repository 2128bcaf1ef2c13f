import { createHmac, randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { SquareClient, WebhooksHelper } from 'square';
import Stripe from 'stripe';
import { InvalidSignatureError } from '../../lib/gateways/vocabulary.js';
import { SQUARE_EVENT_MAX_AGE_SECONDS, SquareGateway } from '../../lib/gateways/square.js';
import { StripeGateway } from '../../lib/gateways/stripe.js';
import { EVENT_TOLERANCE_SECONDS, type SignedEvent } from '../../lib/gateways/port.js';

/**
 * The adapters' webhook verification, with the providers' own SDKs on both sides: Stripe's
 * generateTestHeaderString signs, constructEvent verifies; Square's documented HMAC signs, its
 * WebhooksHelper verifies. No network: verifying an event calls no API.
 */
const stripeSecret = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const squareKey = 'square-signature-key-for-tests';
const notificationUrl = 'https://receipts.example.com/api/v1/gateways/gateway_b/events';
const now = new Date('2026-11-21T09:15:00Z');
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

const stripeGateway = new StripeGateway(new Stripe('sk_test_unit'), {
  webhookSecret: async () => stripeSecret,
});
const squareGateway = new SquareGateway(new SquareClient({ token: 'unit' }), 'LUNIT', {
  webhooks: {
    helper: WebhooksHelper,
    signatureKey: async () => squareKey,
    notificationUrl: async () => notificationUrl,
  },
});

const stripeEvent = (type: string, object: Record<string, unknown>, created = now) =>
  JSON.stringify({
    id: `evt_${randomUUID()}`,
    object: 'event',
    created: seconds(created),
    type,
    data: { object },
  });

const stripeSigned = (body: string, at = now, secret = stripeSecret): SignedEvent => ({
  rawBody: body,
  headers: {
    'stripe-signature': Stripe.webhooks.generateTestHeaderString({
      payload: body,
      secret,
      timestamp: seconds(at),
    }),
  },
  receivedAt: now,
});

const squareEvent = (
  type: string,
  kind: 'payment' | 'refund',
  object: Record<string, unknown>,
  created = now,
) =>
  JSON.stringify({
    merchant_id: 'M',
    type,
    event_id: randomUUID(),
    created_at: created.toISOString(),
    data: { type: kind, id: object.id, object: { [kind]: object } },
  });

const squareSigned = (body: string, key = squareKey, url = notificationUrl): SignedEvent => ({
  rawBody: body,
  headers: {
    'x-square-hmacsha256-signature': createHmac('sha256', key)
      .update(url + body)
      .digest('base64'),
  },
  receivedAt: now,
});

const refused = (promise: Promise<unknown>) => expect(promise).rejects.toBeInstanceOf(InvalidSignatureError);

describe('gateway_a: stripe.webhooks.constructEvent', () => {
  const succeeded = stripeEvent('payment_intent.succeeded', { id: 'pi_1', status: 'succeeded' });

  it('reads a signed event into facts', async () => {
    const event = await stripeGateway.verifyEvent(stripeSigned(succeeded));
    expect(event).toMatchObject({ type: 'payment_intent.succeeded', createdAt: now });
    expect(event.facts).toEqual([{ kind: 'payment', paymentId: 'pi_1', state: 'succeeded' }]);
  });

  it('refuses another secret, a changed body, no header, and a signature older than 300 s', async () => {
    await refused(stripeGateway.verifyEvent(stripeSigned(succeeded, now, `whsec_${'A'.repeat(43)}=`)));
    await refused(
      stripeGateway.verifyEvent({ ...stripeSigned(succeeded), rawBody: succeeded.replace('pi_1', 'pi_2') }),
    );
    await refused(stripeGateway.verifyEvent({ ...stripeSigned(succeeded), headers: {} }));
    const old = new Date(now.getTime() - (EVENT_TOLERANCE_SECONDS + 1) * 1000);
    await refused(stripeGateway.verifyEvent(stripeSigned(succeeded, old)));
    const justInTime = new Date(now.getTime() - (EVENT_TOLERANCE_SECONDS - 1) * 1000);
    await expect(stripeGateway.verifyEvent(stripeSigned(succeeded, justInTime))).resolves.toBeDefined();
  });

  it('says what each followed event type means, and nothing for the others', async () => {
    const factsOf = async (type: string, object: Record<string, unknown>) =>
      (await stripeGateway.verifyEvent(stripeSigned(stripeEvent(type, object)))).facts;
    expect(
      await factsOf('payment_intent.payment_failed', { id: 'pi_1', status: 'requires_payment_method' }),
    ).toEqual([{ kind: 'payment', paymentId: 'pi_1', state: 'failed' }]);
    expect(await factsOf('payment_intent.canceled', { id: 'pi_1', status: 'canceled' })).toEqual([
      { kind: 'payment', paymentId: 'pi_1', state: 'canceled' },
    ]);
    const refund = {
      id: 're_1',
      amount: 250,
      currency: 'usd',
      status: 'succeeded',
      payment_intent: 'pi_1',
      metadata: { refundId: 'r-1' },
      created: seconds(now),
    };
    expect(await factsOf('refund.updated', refund)).toEqual([
      {
        kind: 'refund',
        refund: {
          providerRefundId: 're_1',
          references: { providerIds: { paymentIntentId: 'pi_1', refundId: 're_1' } },
          paymentId: 'pi_1',
          amount: 250,
          currency: 'USD',
          state: 'succeeded',
          refundId: 'r-1',
          createdAt: now.toISOString(),
        },
      },
    ]);
    // A charge without its refunds (API versions since 2022-11-15): the payment's refunds are to be read.
    expect(await factsOf('charge.refunded', { id: 'ch_1', payment_intent: 'pi_1' })).toEqual([
      { kind: 'refunds-changed', paymentId: 'pi_1' },
    ]);
    expect(await factsOf('customer.created', { id: 'cus_1' })).toEqual([]);
  });
});

describe("gateway_b: the square SDK's WebhooksHelper", () => {
  const refund = {
    id: 'PAY_rf1',
    status: 'COMPLETED',
    amount_money: { amount: 300, currency: 'USD' },
    payment_id: 'PAY',
    created_at: now.toISOString(),
  };
  const body = squareEvent('refund.updated', 'refund', refund);

  it('reads a signed event into facts', async () => {
    const event = await squareGateway.verifyEvent(squareSigned(body));
    expect(event.facts).toEqual([
      {
        kind: 'refund',
        refund: {
          providerRefundId: 'PAY_rf1',
          references: { providerIds: { paymentId: 'PAY', refundId: 'PAY_rf1' } },
          paymentId: 'PAY',
          amount: 300,
          currency: 'USD',
          state: 'succeeded',
          refundId: null,
          createdAt: now.toISOString(),
        },
      },
    ]);
    const payment = await squareGateway.verifyEvent(
      squareSigned(squareEvent('payment.updated', 'payment', { id: 'PAY', status: 'CANCELED' })),
    );
    expect(payment.facts).toEqual([{ kind: 'payment', paymentId: 'PAY', state: 'canceled' }]);
  });

  it('refuses another key, another notification URL, a changed body and no header', async () => {
    await refused(squareGateway.verifyEvent(squareSigned(body, 'another-key')));
    await refused(squareGateway.verifyEvent(squareSigned(body, squareKey, 'https://evil.example.com/hook')));
    await refused(
      squareGateway.verifyEvent({ ...squareSigned(body), rawBody: body.replace('300', '30000') }),
    );
    await refused(squareGateway.verifyEvent({ ...squareSigned(body), headers: {} }));
  });

  it("takes Square's own redelivery of an hour-old event, and refuses one older than Square goes on retrying", async () => {
    const hourOld = squareEvent('refund.updated', 'refund', refund, new Date(now.getTime() - 3_600_000));
    await expect(squareGateway.verifyEvent(squareSigned(hourOld))).resolves.toBeDefined();
    const stale = squareEvent(
      'refund.updated',
      'refund',
      refund,
      new Date(now.getTime() - (SQUARE_EVENT_MAX_AGE_SECONDS + 1) * 1000),
    );
    await refused(squareGateway.verifyEvent(squareSigned(stale)));
  });
});
