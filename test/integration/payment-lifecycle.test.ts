import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import Stripe from 'stripe';
import { requireTable } from '../../lib/kernel/config.js';
import type { LogTelemetry } from '../../lib/kernel/telemetry.js';
import { generateDeviceKey, openEnvelope } from '@receipt-service/sdk';
import { flattenedReceipt, newHashedPan } from '../support/fixtures.js';
import { grantToken, onboardUser, type OnboardedUser } from '../support/flow.js';
import {
  eventsSettled,
  fetchReceipt,
  pay,
  sandboxStripe,
  startReceiver,
  statusBecomes,
  type Kind,
  type Paid,
  type Receiver,
} from '../support/lifecycle.js';
import { patience, pollUntil } from '../support/processes.js';
import { startTestStack, type HttpReply, type TestStack } from '../support/stack.js';

/**
 * A receipt follows its payment (issue 21): its status from the gateways' own signed events, which the
 * gateway sandbox sends exactly as Stripe and Square do; refunds through the API and from the
 * providers' dashboards, each with a refund receipt sealed for the cardholder.
 */
interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}
interface Refund {
  refundId: string;
  paymentId: string;
  gateway: Kind;
  amount: number;
  currency: string;
  status: string;
  receiptId: string | null;
  createdAt: string;
}
interface EventAnswer {
  received: true;
  eventId: string;
  type: string;
  outcome: 'applied' | 'unchanged' | 'ignored' | 'duplicate';
}

const kinds: Kind[] = ['gateway_a', 'gateway_b'];
/** The fixture's sale: 2 × 450 (tax listed 78) and 525 (tax unlisted: the other 45), total 1548. */
const SALE_TOTAL = 1548;
const ONE_FLAT_WHITE = 450 + 39;

describe('receipts that follow their payments', () => {
  let stack: TestStack;
  let merchant: string;
  let merchantClientId: string;
  let otherMerchant: string;
  let issuer: string;
  let user: OnboardedUser;
  let receiver: Receiver;
  let webhookSecret: string;
  let merchantReceiver: Receiver;
  let merchantWebhookSecret: string;

  beforeAll(async () => {
    stack = await startTestStack();
    ({ apiKey: merchant, clientId: merchantClientId } = await stack.apiKey(['merchant']));
    otherMerchant = (await stack.apiKey(['merchant'])).apiKey;
    issuer = (await stack.apiKey(['issuer'])).apiKey;
    user = await onboardUser(stack, issuer);
    receiver = await startReceiver();
    merchantReceiver = await startReceiver();
    webhookSecret = await subscribe(issuer, receiver, ['receipt.updated', 'receipt.available']);
    merchantWebhookSecret = await subscribe(merchant, merchantReceiver, ['receipt.updated']);
  });

  afterAll(async () => {
    await receiver?.close();
    await merchantReceiver?.close();
    await stack?.close();
  });

  async function subscribe(apiKey: string, at: Receiver, events: string[]): Promise<string> {
    const webhook = await stack.request<Data<{ secret: string }>>('POST', '/api/v1/webhooks', {
      apiKey,
      body: { url: at.url, events },
    });
    expect(webhook.status).toBe(201);
    return webhook.json.data.secret;
  }

  const events = (at: Receiver, secret: string, type: string, receiptId: string) =>
    pollUntil(
      `${type} for ${receiptId}`,
      async () => {
        const found = at.events(secret, type).filter((event) => event.data.receiptId === receiptId);
        return found.length > 0 ? found : undefined;
      },
      { timeoutMs: patience(15_000), intervalMs: 50 },
    );

  /** A payment the cardholder's card paid: gateway_a's intent confirmed in the sandbox with pm_card_visa. */
  async function paid(kind: Kind, hashedPan: string | undefined = user.hashedPan): Promise<Paid> {
    const payment = await pay(stack, merchant, kind, hashedPan);
    if (kind === 'gateway_a') {
      const stripe = await sandboxStripe(stack);
      await stripe.paymentIntents.confirm(payment.paymentId, { payment_method: 'pm_card_visa' });
    }
    await statusBecomes(stack, merchant, payment.body.receiptId, 'succeeded');
    return payment;
  }

  const refund = (kind: Kind, paymentId: string, body: Record<string, unknown>, apiKey = merchant) =>
    stack.request<Data<Refund> & ErrorBody>('POST', `/api/v1/payments/${kind}/${paymentId}/refunds`, {
      apiKey,
      body,
    });

  const refunds = (kind: Kind, paymentId: string, apiKey = merchant) =>
    stack.request<Data<{ refunds: Refund[] }> & ErrorBody>(
      'GET',
      `/api/v1/payments/${kind}/${paymentId}/refunds`,
      {
        apiKey,
      },
    );

  const itemsOf = (payment: Paid) => payment.body.items as { lineItemId: string; name: string }[];

  /** Opens a receipt as the cardholder does on the specification's path: a token and receipts/decrypt. */
  async function decryptAsCardholder(receiptId: string, cardholder = user) {
    const { envelope } = await fetchReceipt(stack, issuer, receiptId);
    const token = await grantToken(stack, issuer, cardholder);
    const opened = await stack.request<Data<Record<string, unknown>>>('POST', '/api/v1/receipts/decrypt', {
      apiKey: issuer,
      body: { envelope, accessTokenId: token, privateKey: cardholder.privateKey },
    });
    expect(opened.status).toBe(200);
    return opened.json.data;
  }

  const postEvent = (kind: Kind, body: string, headers: Record<string, string>) =>
    stack.request<Data<EventAnswer> & ErrorBody>('POST', `/api/v1/gateways/${kind}/events`, {
      rawBody: body,
      headers: { 'Content-Type': 'application/json', ...headers },
    });

  /** A provider event signed with `secret` (the real one, or not), as the provider would sign it. */
  function signed(kind: Kind, body: string, secret: string, timestamp?: number): Record<string, string> {
    if (kind === 'gateway_a') {
      return {
        'Stripe-Signature': Stripe.webhooks.generateTestHeaderString({
          payload: body,
          secret,
          timestamp: timestamp ?? Math.floor(stack.clock.now().getTime() / 1000),
        }),
      };
    }
    const url = `${stack.url}/api/v1/gateways/gateway_b/events`;
    return {
      'X-Square-HmacSha256-Signature': createHmac('sha256', secret)
        .update(url + body)
        .digest('base64'),
    };
  }

  const secretOf = (kind: Kind) =>
    kind === 'gateway_a' ? stack.sandbox!.webhookSecrets.stripe : stack.sandbox!.webhookSecrets.square;

  /** A refund event for `paymentId`, in each provider's own shape. */
  function refundEvent(
    kind: Kind,
    paymentId: string,
    amount: number,
    createdAt = stack.clock.now(),
    currency = 'USD',
  ): string {
    if (kind === 'gateway_a') {
      return JSON.stringify({
        id: `evt_${randomUUID().replaceAll('-', '')}`,
        object: 'event',
        created: Math.floor(createdAt.getTime() / 1000),
        type: 'refund.created',
        data: {
          object: {
            id: `re_${randomUUID().replaceAll('-', '')}`,
            object: 'refund',
            amount,
            currency: currency.toLowerCase(),
            status: 'succeeded',
            payment_intent: paymentId,
            metadata: {},
            created: Math.floor(createdAt.getTime() / 1000),
          },
        },
      });
    }
    const refundId = `${paymentId}_${randomUUID().replaceAll('-', '')}`;
    return JSON.stringify({
      merchant_id: 'MLSANDBOX',
      type: 'refund.updated',
      event_id: randomUUID(),
      created_at: createdAt.toISOString(),
      data: {
        type: 'refund',
        id: refundId,
        object: {
          refund: {
            id: refundId,
            status: 'COMPLETED',
            amount_money: { amount, currency },
            payment_id: paymentId,
            created_at: createdAt.toISOString(),
          },
        },
      },
    });
  }

  describe('payment status', () => {
    it('gateway_a: pending at creation, succeeded once confirmed in the sandbox; issuer and merchant hear of it', async () => {
      const { paymentId, body } = await pay(stack, merchant, 'gateway_a', user.hashedPan);
      expect((await fetchReceipt(stack, issuer, body.receiptId)).paymentStatus).toBe('pending');
      const stripe = await sandboxStripe(stack);
      const confirmed = await stripe.paymentIntents.confirm(paymentId, { payment_method: 'pm_card_visa' });
      expect(confirmed.status).toBe('succeeded');
      await statusBecomes(stack, issuer, body.receiptId, 'succeeded');
      const expected = {
        receiptId: body.receiptId,
        merchantId: body.merchantId,
        transactionId: body.transactionId,
        paymentStatus: 'succeeded',
        previousPaymentStatus: 'pending',
      };
      expect((await events(receiver, webhookSecret, 'receipt.updated', body.receiptId))[0]?.data).toEqual(
        expected,
      );
      expect(
        (await events(merchantReceiver, merchantWebhookSecret, 'receipt.updated', body.receiptId))[0]?.data,
      ).toEqual(expected);

      // The same status in the inbox, the envelope fetch by payment and the transaction mapping.
      const inbox = await stack.request<Data<{ receipts: { receiptId: string; paymentStatus: string }[] }>>(
        'GET',
        `/api/v1/users/${user.userId}/receipts?limit=100`,
        { apiKey: issuer },
      );
      expect(
        inbox.json.data.receipts.find((entry) => entry.receiptId === body.receiptId)?.paymentStatus,
      ).toBe('succeeded');
      const byPayment = await stack.request<Data<{ paymentStatus: string }>>(
        'GET',
        `/api/v1/payments/gateway_a/${paymentId}/receipt`,
        { apiKey: issuer },
      );
      expect(byPayment.json.data.paymentStatus).toBe('succeeded');
      const mapping = await stack.request<Data<{ paymentStatus: string }>>(
        'GET',
        `/api/v1/transactions/${body.transactionId}`,
        { apiKey: merchant },
      );
      expect(mapping.json.data.paymentStatus).toBe('succeeded');
    });

    it('gateway_b: succeeded at creation; its own signed payment events are verified and change nothing more', async () => {
      const { body } = await pay(stack, merchant, 'gateway_b', user.hashedPan);
      await statusBecomes(stack, issuer, body.receiptId, 'succeeded');
      expect(
        (await events(receiver, webhookSecret, 'receipt.updated', body.receiptId))[0]?.data,
      ).toMatchObject({
        paymentStatus: 'succeeded',
        previousPaymentStatus: 'pending',
      });
      await eventsSettled(stack);
      const squareEvents = stack.sandbox!.events.sent.filter((event) => event.gateway === 'gateway_b');
      expect(squareEvents.map((event) => [event.type, event.lastStatus])).toEqual(
        expect.arrayContaining([
          ['payment.created', 200],
          ['payment.updated', 200],
        ]),
      );
      expect((await fetchReceipt(stack, issuer, body.receiptId)).paymentStatus).toBe('succeeded');
    });

    it('gateway_a: a declined confirmation is failed, a later payment of the intent succeeded; a cancel is canceled', async () => {
      const stripe = await sandboxStripe(stack);
      const declined = await pay(stack, merchant, 'gateway_a', user.hashedPan);
      await expect(
        stripe.paymentIntents.confirm(declined.paymentId, { payment_method: 'pm_card_chargeDeclined' }),
      ).rejects.toMatchObject({ type: 'StripeCardError' });
      await statusBecomes(stack, issuer, declined.body.receiptId, 'failed');
      // A failed attempt leaves the intent open: the customer's next card pays it.
      await stripe.paymentIntents.confirm(declined.paymentId, { payment_method: 'pm_card_visa' });
      await statusBecomes(stack, issuer, declined.body.receiptId, 'succeeded');

      const canceled = await pay(stack, merchant, 'gateway_a', user.hashedPan);
      await stripe.paymentIntents.cancel(canceled.paymentId);
      await statusBecomes(stack, issuer, canceled.body.receiptId, 'canceled');
    });

    it('gateway_b: a card declined at creation leaves its receipt failed', async () => {
      const body = flattenedReceipt({ recipientHashedPan: user.hashedPan });
      const declined = await stack.request<ErrorBody>('POST', '/api/v1/payments/gateway_b/create', {
        apiKey: merchant,
        body: { ...body, cardNonce: 'cnon:card-nonce-declined' },
      });
      expect([declined.status, declined.json.error.code]).toEqual([402, 'PAYMENT_DECLINED']);
      expect((await fetchReceipt(stack, merchant, body.receiptId)).paymentStatus).toBe('failed');
    });
  });

  describe('refunds and refund receipts', () => {
    it.each(kinds)(
      '%s: an itemised refund through the API and the rest from the dashboard give two refund receipts; the sale ends refunded',
      async (kind) => {
        const sale = await paid(kind);
        const before = stack.sandbox!.stats.refundsCreated[kind];
        const [flatWhite] = itemsOf(sale);
        const refundId = randomUUID();
        const first = await refund(kind, sale.paymentId, {
          refundId,
          items: [{ lineItemId: flatWhite!.lineItemId, quantity: 1 }],
          reason: 'One coffee was cold',
        });
        expect(first.status).toBe(201);
        expect(first.json.data).toMatchObject({
          refundId,
          paymentId: sale.paymentId,
          gateway: kind,
          amount: ONE_FLAT_WHITE,
          currency: 'USD',
          // Square settles a card refund a moment after it is made; its event says so.
          status: kind === 'gateway_a' ? 'succeeded' : 'pending',
          receiptId: expect.any(String),
        });
        await statusBecomes(stack, issuer, sale.body.receiptId, 'partially_refunded');

        const dashboard = stack.sandbox!.dashboardRefund(kind, sale.paymentId);
        expect(dashboard.status).toBe(200);
        await statusBecomes(stack, issuer, sale.body.receiptId, 'refunded');
        const listed = await pollUntil(
          'both refunds settled',
          async () => {
            const reply = await refunds(kind, sale.paymentId);
            return reply.json.data.refunds.every((entry) => entry.status === 'succeeded') ? reply : undefined;
          },
          { timeoutMs: patience(15_000), intervalMs: 50 },
        );
        expect(listed.json.data.refunds.map((entry) => entry.amount)).toEqual([
          ONE_FLAT_WHITE,
          SALE_TOTAL - ONE_FLAT_WHITE,
        ]);
        const [api, fromDashboard] = listed.json.data.refunds;
        expect(api?.refundId).toBe(refundId);

        // Both refund receipts decrypt for the cardholder, name the sale and hold positive amounts.
        const itemised = await decryptAsCardholder(api!.receiptId!);
        expect(itemised).toMatchObject({
          version: '1.1',
          type: 'refund',
          relatedReceiptId: sale.body.receiptId,
          merchant: { merchantId: sale.body.merchantId, name: sale.body.merchantName },
          items: [
            {
              lineItemId: flatWhite!.lineItemId,
              name: 'Flat white',
              quantity: 1,
              unitPrice: 450,
              totalPrice: 450,
              taxes: [{ amount: 39 }],
            },
          ],
          summary: { subtotal: 450, totalTax: 39, total: ONE_FLAT_WHITE, currency: 'USD', itemCount: 1 },
          notes: 'One coffee was cold',
          metadata: { refundId },
        });
        const rest = await decryptAsCardholder(fromDashboard!.receiptId!);
        expect(rest).toMatchObject({
          type: 'refund',
          relatedReceiptId: sale.body.receiptId,
          items: [],
          summary: { subtotal: 1425 - 450, totalTax: 123 - 39, total: SALE_TOTAL - ONE_FLAT_WHITE },
        });
        const fetched = await fetchReceipt(stack, issuer, api!.receiptId!);
        expect(fetched).toMatchObject({ relatedReceiptId: sale.body.receiptId, paymentStatus: 'succeeded' });
        const available = await events(receiver, webhookSecret, 'receipt.available', api!.receiptId!);
        expect(available[0]?.data).toMatchObject({ receiptId: api!.receiptId, userId: user.userId });
        // Deliveries are at least once and not ordered (each has its own retry schedule), and a refund
        // receipt can be stored before the provider's next event completes the refund: wait for updates
        // naming both refund receipts and for the one that says refunded (the poll fails if it never comes).
        const updates = await pollUntil(
          'receipt.updated naming both refunds, and one saying refunded',
          async () => {
            const found = receiver
              .events(webhookSecret, 'receipt.updated')
              .filter((event) => event.data.receiptId === sale.body.receiptId);
            const named = new Set(found.map((event) => event.data.refundReceiptId));
            const refunded = found.some((event) => event.data.paymentStatus === 'refunded');
            return named.has(api!.receiptId) && named.has(fromDashboard!.receiptId) && refunded
              ? found
              : undefined;
          },
          { timeoutMs: patience(15_000), intervalMs: 50 },
        );
        expect(updates.map((event) => event.data.paymentStatus)).toContain('refunded');

        // A third refund finds nothing left: refused before the gateway is asked.
        const third = await refund(kind, sale.paymentId, { refundId: randomUUID(), amount: 1 });
        expect([third.status, third.json.error.code]).toEqual([400, 'REFUND_EXCEEDS_PAYMENT']);
        expect(third.json.error.details).toMatchObject({ refundable: 0, requested: 1 });
        expect(stack.sandbox!.stats.refundsCreated[kind]).toBe(before + 2);

        // The same refundId again is the first refund; with another body it is a conflict.
        const again = await refund(kind, sale.paymentId, {
          refundId,
          items: [{ lineItemId: flatWhite!.lineItemId, quantity: 1 }],
          reason: 'One coffee was cold',
        });
        expect(again.status).toBe(201);
        expect(again.json.data).toEqual({ ...first.json.data, status: 'succeeded' });
        const reused = await refund(kind, sale.paymentId, { refundId, amount: 5 });
        expect([reused.status, reused.json.error.code]).toEqual([409, 'CONFLICT']);
        expect(stack.sandbox!.stats.refundsCreated[kind]).toBe(before + 2);
      },
    );

    it.each(kinds)(
      "%s: another merchant's refund of the payment is the 404 of an unknown payment",
      async (kind) => {
        const sale = await paid(kind);
        const before = { ...stack.sandbox!.stats.requests };
        const foreign = await refund(
          kind,
          sale.paymentId,
          { refundId: randomUUID(), amount: 100 },
          otherMerchant,
        );
        const unknown = await refund(kind, `${sale.paymentId}x`, { refundId: randomUUID(), amount: 100 });
        expect([foreign.status, foreign.json.error.code]).toEqual([404, 'not_found']);
        expect(foreign.json.error.message).toBe(unknown.json.error.message);
        expect((await refunds(kind, sale.paymentId, otherMerchant)).status).toBe(404);
        expect(
          (await refund(kind, sale.paymentId, { refundId: randomUUID(), amount: 100 }, issuer)).status,
        ).toBe(403);
        expect((await refunds(kind, sale.paymentId)).json.data.refunds).toEqual([]);
        // No gateway was asked anything: the refusals came before it.
        expect(stack.sandbox!.stats.requests).toEqual(before);
      },
    );

    it('derives an itemised amount from the lines and their tax share, and refuses what does not fit', async () => {
      const sale = await paid('gateway_a');
      const [flatWhite, croissant] = itemsOf(sale);
      const disagree = await refund('gateway_a', sale.paymentId, {
        refundId: randomUUID(),
        amount: 450,
        items: [{ lineItemId: flatWhite!.lineItemId, quantity: 1 }],
      });
      expect([disagree.status, disagree.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
      expect(disagree.json.error.details).toMatchObject({ fields: [{ field: 'amount' }] });
      const notALine = await refund('gateway_a', sale.paymentId, {
        refundId: randomUUID(),
        items: [{ lineItemId: randomUUID(), quantity: 1 }],
      });
      expect(notALine.json.error.details).toMatchObject({ fields: [{ field: 'items.0.lineItemId' }] });
      const tooMany = await refund('gateway_a', sale.paymentId, {
        refundId: randomUUID(),
        items: [{ lineItemId: croissant!.lineItemId, quantity: 2 }],
      });
      expect(tooMany.json.error.details).toMatchObject({ fields: [{ field: 'items.0.quantity' }] });
      const neither = await refund('gateway_a', sale.paymentId, { refundId: randomUUID() });
      expect(neither.status).toBe(400);
      // The croissant lists no tax: it carries the tax the coffee does not list (123 − 78).
      const agreed = await refund('gateway_a', sale.paymentId, {
        refundId: randomUUID(),
        amount: 525 + 45,
        items: [{ lineItemId: croissant!.lineItemId, quantity: 1 }],
      });
      expect([agreed.status, agreed.json.data.amount]).toEqual([201, 570]);
      // Two coffees refunded one at a time give back exactly the line and its listed tax.
      for (const expected of [489, 489]) {
        const one = await refund('gateway_a', sale.paymentId, {
          refundId: randomUUID(),
          items: [{ lineItemId: flatWhite!.lineItemId, quantity: 1 }],
        });
        expect([one.status, one.json.data.amount]).toEqual([201, expected]);
      }
      await statusBecomes(stack, issuer, sale.body.receiptId, 'refunded');
    });

    it('refunds nothing of a payment not yet paid', async () => {
      const { paymentId } = await pay(stack, merchant, 'gateway_a', user.hashedPan);
      const early = await refund('gateway_a', paymentId, { refundId: randomUUID(), amount: 100 });
      expect([early.status, early.json.error.code]).toEqual([400, 'REFUND_EXCEEDS_PAYMENT']);
      expect(early.json.error.details).toMatchObject({ refundable: 0, paymentStatus: 'pending' });
    });

    it.each([
      ['gateway_a', 'stripe.refunds.create'],
      ['gateway_b', 'square.refunds.create'],
    ] as const)(
      '%s: a refund the gateway refuses or cannot reach stores nothing',
      async (kind, operation) => {
        const sale = await paid(kind);
        const before = stack.sandbox!.stats.refundsCreated[kind];
        stack.sandbox!.faults.add({ kind: 'decline', operation });
        const declined = await refund(kind, sale.paymentId, { refundId: randomUUID(), amount: 100 });
        expect([declined.status, declined.json.error.code]).toEqual([402, 'PAYMENT_DECLINED']);
        stack.sandbox!.faults.add({ kind: 'status', operation, status: 503, times: 'always' });
        const down = await refund(kind, sale.paymentId, { refundId: randomUUID(), amount: 100 });
        expect([down.status, down.json.error.code]).toEqual([502, 'GATEWAY_ERROR']);
        stack.sandbox!.faults.clear();
        expect((await refunds(kind, sale.paymentId)).json.data.refunds).toEqual([]);
        expect(stack.sandbox!.stats.refundsCreated[kind]).toBe(before);
        expect((await fetchReceipt(stack, merchant, sale.body.receiptId)).paymentStatus).toBe('succeeded');
        // Nothing was held back either: the whole payment can still be refunded.
        const whole = await refund(kind, sale.paymentId, { refundId: randomUUID(), amount: SALE_TOTAL });
        expect(whole.status).toBe(201);
      },
    );

    it('keeps no line, price or merchant of a sale in clear in the payments table', async () => {
      const sale = await paid('gateway_a');
      expect(
        (await refund('gateway_a', sale.paymentId, { refundId: randomUUID(), amount: 100 })).status,
      ).toBe(201);
      const scanned = await stack.deps.dynamo.doc.send(
        new ScanCommand({ TableName: requireTable(stack.config, 'payments') }),
      );
      const text = JSON.stringify(scanned.Items);
      expect(text).toContain(sale.paymentId);
      for (const secret of [
        'Flat white',
        'Almond croissant',
        'Corner Coffee',
        '12 Market St',
        user.hashedPan,
      ]) {
        expect(text).not.toContain(secret);
      }
      // The card's last four as a value of its own. Four digits turn up by chance inside the stored
      // ids and base64url ciphertexts (seen once in a full run), where they say nothing of the card.
      expect(text).not.toMatch(/(?<![\w-])4242(?![\w-])/);
    });

    it('holds no refund reason and no clientSecret in clear in any table, after the refund flows', async () => {
      // A gateway_a payment made as a till makes it, its clientSecret answered (and answered again).
      const body = flattenedReceipt({ recipientHashedPan: user.hashedPan });
      const create = () =>
        stack.request<Data<{ paymentId: string; clientSecret: string }>>(
          'POST',
          '/api/v1/payments/gateway_a/create',
          {
            apiKey: merchant,
            body: { amount: body.totalAmount, ...body },
          },
        );
      const created = await create();
      expect(created.json.data.clientSecret).toMatch(/^pi_.+_secret_/);
      expect((await create()).json.data.clientSecret).toBe(created.json.data.clientSecret);
      const stripe = await sandboxStripe(stack);
      await stripe.paymentIntents.confirm(created.json.data.paymentId, { payment_method: 'pm_card_visa' });
      await statusBecomes(stack, merchant, body.receiptId, 'succeeded');
      const reason = `Refund reason ${randomUUID()}`;
      const refunded = await refund('gateway_a', created.json.data.paymentId, {
        refundId: randomUUID(),
        amount: 100,
        reason,
      });
      expect(refunded.status).toBe(201);
      await eventsSettled(stack);
      const secretOfIntent = created.json.data.clientSecret.split('_secret_')[1]!;
      for (const table of Object.values(stack.config.tables)) {
        const items: unknown[] = [];
        let start: Record<string, unknown> | undefined;
        do {
          const page = await stack.deps.dynamo.doc.send(
            new ScanCommand({ TableName: table, ExclusiveStartKey: start }),
          );
          items.push(...(page.Items ?? []));
          start = page.LastEvaluatedKey;
        } while (start);
        const text = JSON.stringify(items);
        // The suite's reasons (this one, and the itemised refunds' above) and the secret, anywhere.
        expect({ table, reason: text.includes(reason) }).toEqual({ table, reason: false });
        expect({ table, reason: text.includes('One coffee was cold') }).toEqual({ table, reason: false });
        expect({ table, clientSecret: text.includes(secretOfIntent) }).toEqual({
          table,
          clientSecret: false,
        });
      }
    });

    it('seals refund receipts for a device key: the SDK opens both, the API’s and the dashboard’s, on the device', async () => {
      const device = await generateDeviceKey({ algorithm: 'ECDH-ES+A256KW' });
      const imported = await stack.request<Data<{ keyId: string; publicKey: string }>>(
        'POST',
        '/api/v1/onboarding/keys',
        { apiKey: issuer, body: { publicKey: device.publicKey } },
      );
      expect(imported.status).toBe(201);
      const hashedPan = newHashedPan();
      const registered = await stack.request<Data<{ userId: string }>>(
        'POST',
        '/api/v1/onboarding/register',
        {
          apiKey: issuer,
          body: { hashedPan, publicKey: imported.json.data.publicKey, keyId: imported.json.data.keyId },
        },
      );
      expect(registered.status).toBe(200);
      for (const kind of kinds) {
        const sale = await paid(kind, hashedPan);
        const made = await refund(kind, sale.paymentId, { refundId: randomUUID(), amount: 500 });
        expect(made.status).toBe(201);
        stack.sandbox!.dashboardRefund(kind, sale.paymentId);
        await statusBecomes(stack, issuer, sale.body.receiptId, 'refunded');
        const [api, dashboard] = (await refunds(kind, sale.paymentId)).json.data.refunds;
        const open = async (receiptId: string) =>
          openEnvelope((await fetchReceipt(stack, issuer, receiptId)).envelope, device.privateKey);
        expect(await open(api!.receiptId!)).toMatchObject({
          type: 'refund',
          relatedReceiptId: sale.body.receiptId,
          summary: { total: 500, totalTax: 40, subtotal: 460 },
        });
        // The dashboard's refund takes the rest, and all the tax that is left.
        expect(await open(dashboard!.receiptId!)).toMatchObject({
          type: 'refund',
          relatedReceiptId: sale.body.receiptId,
          summary: { total: SALE_TOTAL - 500, totalTax: 123 - 40 },
        });
      }
    });
  });

  describe('escrow', () => {
    it.each(kinds)(
      '%s: the refund of an escrowed sale is escrowed, and released by the claim that releases the sale',
      async (kind) => {
        const hashedPan = newHashedPan();
        const sale = await paid(kind, hashedPan);
        const made = await refund(kind, sale.paymentId, { refundId: randomUUID(), amount: 300 });
        expect(made.status).toBe(201);
        const refundReceiptId = made.json.data.receiptId!;
        const escrowed = await fetchReceipt(stack, merchant, refundReceiptId);
        expect(escrowed).toMatchObject({
          envelope: { isEscrowed: true },
          relatedReceiptId: sale.body.receiptId,
        });

        const cardholder = await onboardUser(stack, issuer, hashedPan);
        // Nothing is the issuer's before the claim.
        expect(
          (await stack.request('GET', `/api/v1/receipts/${refundReceiptId}`, { apiKey: issuer })).status,
        ).toBe(404);
        const claimed = await stack.request<Data<{ released: number }>>('POST', '/api/v1/receipts/claim', {
          apiKey: issuer,
          body: {
            userId: cardholder.userId,
            transactions: [
              { amount: SALE_TOTAL, currency: 'USD', transactionDate: sale.body.transactionDate as string },
            ],
          },
        });
        expect([claimed.status, claimed.json.data.released]).toEqual([200, 1]);
        const released = await fetchReceipt(stack, issuer, refundReceiptId);
        expect(released.envelope).toMatchObject({ isEscrowed: false, keyId: cardholder.keyId });
        expect(await decryptAsCardholder(refundReceiptId, cardholder)).toMatchObject({
          type: 'refund',
          relatedReceiptId: sale.body.receiptId,
          summary: { total: 300 },
        });
        expect(await decryptAsCardholder(sale.body.receiptId, cardholder)).toMatchObject({
          receiptId: sale.body.receiptId,
        });
      },
    );
  });

  describe('gateway events that must change nothing', () => {
    it.each(kinds)('%s: the same event twice is applied once', async (kind) => {
      const sale = await paid(kind);
      stack.sandbox!.dashboardRefund(kind, sale.paymentId, 200);
      await statusBecomes(stack, issuer, sale.body.receiptId, 'partially_refunded');
      await eventsSettled(stack);
      const delivered = stack.sandbox!.events.sent.filter(
        (event) =>
          event.gateway === kind && event.type.startsWith('refund.') && event.body.includes(sale.paymentId),
      );
      expect(delivered.length).toBeGreaterThan(0);
      for (const event of delivered) {
        const repeat = await postEvent(kind, event.body, event.headers);
        expect([repeat.status, repeat.json.data.outcome]).toEqual([200, 'duplicate']);
      }
      expect((await refunds(kind, sale.paymentId)).json.data.refunds).toHaveLength(1);
      expect((await fetchReceipt(stack, issuer, sale.body.receiptId)).paymentStatus).toBe(
        'partially_refunded',
      );
    });

    it.each(kinds)(
      '%s: events delivered in reverse order end as in order: a late success cannot undo a refund',
      async (kind) => {
        const sale = await pay(stack, merchant, kind, user.hashedPan);
        await statusBecomes(
          stack,
          merchant,
          sale.body.receiptId,
          kind === 'gateway_a' ? 'pending' : 'succeeded',
        );
        await eventsSettled(stack);
        stack.sandbox!.events.hold();
        if (kind === 'gateway_a') {
          const stripe = await sandboxStripe(stack);
          await stripe.paymentIntents.confirm(sale.paymentId, { payment_method: 'pm_card_visa' });
        }
        expect(stack.sandbox!.dashboardRefund(kind, sale.paymentId).status).toBe(200);
        const held = stack
          .sandbox!.events.sent.filter((event) => !event.delivered)
          .map((event) => event.type);
        expect(held.length).toBeGreaterThanOrEqual(2);
        await stack.sandbox!.events.release('reverse');
        await eventsSettled(stack);
        expect((await fetchReceipt(stack, issuer, sale.body.receiptId)).paymentStatus).toBe('refunded');
        const [only] = (await refunds(kind, sale.paymentId)).json.data.refunds;
        expect(only).toMatchObject({
          amount: SALE_TOTAL,
          status: 'succeeded',
          receiptId: expect.any(String),
        });
      },
    );

    it.each(kinds)(
      '%s: a wrong or missing signature is 401 invalid_signature and changes nothing',
      async (kind) => {
        const sale = await paid(kind);
        const forged = refundEvent(kind, sale.paymentId, SALE_TOTAL);
        const wrongSecret = kind === 'gateway_a' ? `whsec_${randomUUID()}` : randomUUID();
        const answers: HttpReply<ErrorBody>[] = [
          await postEvent(kind, forged, signed(kind, forged, wrongSecret)),
          await postEvent(kind, forged, {}),
          // A genuine signature over another body.
          await postEvent(kind, forged.replace(`${SALE_TOTAL}`, '1'), signed(kind, forged, secretOf(kind))),
        ];
        for (const answer of answers) {
          expect([answer.status, answer.json.error.code]).toEqual([401, 'invalid_signature']);
          expect(answer.json.error.message).toBe(answers[0]!.json.error.message);
        }
        expect((await refunds(kind, sale.paymentId)).json.data.refunds).toEqual([]);
        expect((await fetchReceipt(stack, issuer, sale.body.receiptId)).paymentStatus).toBe('succeeded');
        // The same body signed with the real secret is applied: the refusal was the signature's.
        const genuine = await postEvent(kind, forged, signed(kind, forged, secretOf(kind)));
        expect([genuine.status, genuine.json.data.outcome]).toEqual([200, 'applied']);
        await statusBecomes(stack, issuer, sale.body.receiptId, 'refunded');
      },
    );

    it.each(kinds)(
      '%s: an event about a payment the service did not make is acknowledged and ignored',
      async (kind) => {
        const unknown = kind === 'gateway_a' ? 'pi_NotMadeByTheService0000' : 'NotMadeByTheService0000000';
        const body = refundEvent(kind, unknown, 100);
        const answer = await postEvent(kind, body, signed(kind, body, secretOf(kind)));
        expect([answer.status, answer.json.data.outcome]).toEqual([200, 'ignored']);
      },
    );

    it('counts verified events per gateway, not per sender', async () => {
      await eventsSettled(stack);
      const remaining = (reply: HttpReply<unknown>) => Number(reply.headers.get('x-ratelimit-remaining'));
      const post = (kind: Kind) => {
        const body = refundEvent(kind, `NotMadeByTheService${kind}`, 100);
        return postEvent(kind, body, signed(kind, body, secretOf(kind)));
      };
      const a1 = await post('gateway_a');
      const b1 = await post('gateway_b');
      const a2 = await post('gateway_a');
      const b2 = await post('gateway_b');
      expect(a1.headers.get('x-ratelimit-limit')).toBe('6000');
      // Each gateway's budget moved by its own events only.
      expect([remaining(a1) - remaining(a2), remaining(b1) - remaining(b2)]).toEqual([1, 1]);
    });

    /** The gateway's own budget as the service counts it (lib/db/rate-limits.ts, leases included). */
    const gatewayBudget = async (kind: Kind) => {
      const [state] = await stack.deps.rateLimiter.peek(
        [{ bucket: `route#gateway-events#${kind}`, limit: 6_000, windowSeconds: 60 }],
        stack.clock.now(),
      );
      return state!;
    };

    it('1,000 unsigned requests from one address spend nothing of the gateway and write no audit; then a verified event is applied', async () => {
      const sale = await paid('gateway_a');
      await eventsSettled(stack);
      // A fresh minute: earlier tests' refused requests from this address are in the last one.
      stack.clock.advance(60_000 - (stack.clock.now().getTime() % 60_000));
      const telemetry = stack.deps.telemetry as LogTelemetry;
      const budgetBefore = await gatewayBudget('gateway_a');
      const refusedBefore = telemetry.total('GatewayEventsRefused', { gateway: 'gateway_a' });
      const forged = refundEvent('gateway_a', sale.paymentId, SALE_TOTAL);
      const wrong = signed('gateway_a', forged, `whsec_${randomUUID()}`);
      const statuses: number[] = [];
      for (let batch = 0; batch < 20; batch++) {
        const answers = await Promise.all(
          Array.from({ length: 50 }, (_, index) => postEvent('gateway_a', forged, index % 2 ? wrong : {})),
        );
        statuses.push(...answers.map((answer) => answer.status));
      }
      // The address's allowance for requests that fail verification (60 a minute), then 429.
      expect(statuses.filter((status) => status === 401)).toHaveLength(60);
      expect(statuses.filter((status) => status === 429)).toHaveLength(940);
      expect(await gatewayBudget('gateway_a')).toEqual(budgetBefore);
      expect(telemetry.total('GatewayEventsRefused', { gateway: 'gateway_a' }) - refusedBefore).toBe(1_000);
      const audited = await stack.deps.audit.forClient('gateway_a', 1_000);
      expect(audited.filter((record) => record.outcome === 'failure')).toEqual([]);
      // The provider's own event, from the same address, is applied at once.
      const genuine = await postEvent(
        'gateway_a',
        forged,
        signed('gateway_a', forged, secretOf('gateway_a')),
      );
      expect([genuine.status, genuine.json.data.outcome]).toEqual([200, 'applied']);
      await statusBecomes(stack, issuer, sale.body.receiptId, 'refunded');
      // The next tests' refusals start in a minute of their own.
      stack.clock.advance(60_000);
    });

    it.each(kinds)(
      '%s: an event dated more than 300 s ahead is refused like a stale one and changes nothing',
      async (kind) => {
        const sale = await paid(kind);
        const ahead = new Date(stack.clock.now().getTime() + 7 * 86_400_000);
        const future = refundEvent(kind, sale.paymentId, 100, ahead);
        const now = refundEvent(kind, sale.paymentId, 100);
        const answers = [
          await postEvent(kind, future, signed(kind, future, secretOf(kind))),
          ...(kind === 'gateway_a'
            ? [
                // A signature time ahead, over an event of now.
                await postEvent(
                  kind,
                  now,
                  signed(kind, now, secretOf(kind), Math.floor(ahead.getTime() / 1000)),
                ),
              ]
            : []),
        ];
        for (const answer of answers) {
          expect([answer.status, answer.json.error.code]).toEqual([401, 'invalid_signature']);
        }
        // Just inside the tolerance: a provider's clock a little ahead is fine.
        const close = refundEvent(kind, sale.paymentId, 100, new Date(stack.clock.now().getTime() + 200_000));
        expect((await postEvent(kind, close, signed(kind, close, secretOf(kind)))).status).toBe(200);
        const recorded = (await refunds(kind, sale.paymentId)).json.data.refunds;
        expect(recorded.map((one) => one.amount)).toEqual([100]);
      },
    );

    it.each(kinds)(
      '%s: a refund event in another currency than its payment is refused, audited and counted, and changes nothing',
      async (kind) => {
        const sale = await paid(kind);
        const telemetry = stack.deps.telemetry as LogTelemetry;
        const before = telemetry.total('RefundCurrencyMismatches');
        const euros = refundEvent(kind, sale.paymentId, 100, stack.clock.now(), 'EUR');
        const answer = await postEvent(kind, euros, signed(kind, euros, secretOf(kind)));
        expect([answer.status, answer.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
        expect(answer.json.error.message).toContain('currency');
        expect(telemetry.total('RefundCurrencyMismatches') - before).toBe(1);
        expect((await refunds(kind, sale.paymentId)).json.data.refunds).toEqual([]);
        expect((await fetchReceipt(stack, issuer, sale.body.receiptId)).paymentStatus).toBe('succeeded');
        const audited = await stack.deps.audit.forClient(merchantClientId, 1_000);
        expect(
          audited.filter(
            (record) =>
              record.action === 'payment.refund' &&
              record.outcome === 'failure' &&
              record.reason?.includes('EUR'),
          ).length,
        ).toBeGreaterThanOrEqual(1);
      },
    );

    // Last: it moves the stack's clock on.
    it.each(kinds)(
      '%s: an event older than its tolerance is 401 invalid_signature, even when genuine',
      async (kind) => {
        const sale = await paid(kind);
        const old = kind === 'gateway_a' ? 301_000 : 24 * 3_600_000 + 301_000;
        const body = refundEvent(kind, sale.paymentId, 100, new Date(stack.clock.now().getTime() - old));
        const headers =
          kind === 'gateway_a'
            ? signed(kind, body, secretOf(kind), Math.floor((stack.clock.now().getTime() - old) / 1000))
            : signed(kind, body, secretOf(kind));
        const stale = await postEvent(kind, body, headers);
        expect([stale.status, stale.json.error.code]).toEqual([401, 'invalid_signature']);
        // A delivered event posted again once the clock has moved past the tolerance: stale too.
        await eventsSettled(stack);
        const [delivered] = stack.sandbox!.events.sent.filter(
          (event) => event.gateway === kind && event.body.includes(sale.paymentId),
        );
        stack.clock.advance(old + 1_000);
        const replayed = await postEvent(kind, delivered!.body, delivered!.headers);
        expect([replayed.status, replayed.json.error.code]).toEqual([401, 'invalid_signature']);
        expect((await refunds(kind, sale.paymentId)).json.data.refunds).toEqual([]);
        expect((await fetchReceipt(stack, issuer, sale.body.receiptId)).paymentStatus).toBe('succeeded');
      },
    );
  });
});
