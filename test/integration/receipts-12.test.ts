import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { DigitalReceipt12 } from '@receipt-service/receipt-core';
import { flattenedReceipt, flattenedReceipt12 } from '../support/fixtures.js';
import { grantToken, onboardUser, type OnboardedUser } from '../support/flow.js';
import {
  fetchReceipt,
  pay,
  sandboxStripe,
  statusBecomes,
  type Kind,
  type Paid,
} from '../support/lifecycle.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { twoRatesAndDiscount } from '../sdk/formats-fixtures.js';

/**
 * DigitalReceipt 1.2 over HTTP (issue 37; DECISIONS, round 4, "Standard formats"): a 1.2 receipt paid
 * on each gateway (the real Stripe and Square SDKs against the sandbox) opens with every field 1.2
 * adds, its refund keeps the lines' VAT; a breakdown that disagrees with the lines is 400 naming the
 * field and the amount, and nothing is charged; 1.0 receipts are sealed as before.
 */

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; message: string; details?: { fields?: { field: string; message: string }[] } };
}

describe('DigitalReceipt 1.2 over HTTP', () => {
  let stack: TestStack;
  let merchant: string;
  let issuer: string;
  let user: OnboardedUser;
  let token: string | undefined;

  beforeAll(async () => {
    stack = await startTestStack();
    merchant = (await stack.apiKey(['merchant'])).apiKey;
    issuer = (await stack.apiKey(['issuer'])).apiKey;
    user = await onboardUser(stack, issuer);
  });

  afterAll(async () => {
    await stack?.close();
  });

  async function open(receiptId: string): Promise<DigitalReceipt12> {
    const { envelope } = await fetchReceipt(stack, issuer, receiptId);
    // One token for the file's decrypts: a user holds at most five at once.
    token ??= await grantToken(stack, issuer, user);
    const opened = await stack.request<Data<DigitalReceipt12>>('POST', '/api/v1/receipts/decrypt', {
      apiKey: issuer,
      body: { envelope, accessTokenId: token, privateKey: user.privateKey },
    });
    expect(opened.status).toBe(200);
    return opened.json.data;
  }

  async function paid(kind: Kind, overrides: Record<string, unknown>): Promise<Paid> {
    const payment = await pay(stack, merchant, kind, user.hashedPan, overrides);
    if (kind === 'gateway_a') {
      const stripe = await sandboxStripe(stack);
      await stripe.paymentIntents.confirm(payment.paymentId, { payment_method: 'pm_card_visa' });
    }
    await statusBecomes(stack, merchant, payment.body.receiptId, 'succeeded');
    return payment;
  }

  it.each<Kind>(['gateway_a', 'gateway_b'])(
    'seals a 1.2 receipt paid on %s with every new field, charges its total, and refunds a line with its VAT',
    async (kind) => {
      const request = flattenedReceipt12();
      const sale = await paid(kind, request);
      const gateway = await stack.deps.gateways.get(kind);
      // The total less the allowance plus the charge and the tax: what the card paid on either gateway.
      expect(await gateway.retrievePayment(sale.paymentId)).toMatchObject({ amount: 4926, currency: 'EUR' });

      const receipt = await open(request.receiptId);
      const items = request.items as { lineItemId: string }[];
      expect(receipt).toMatchObject({
        version: '1.2',
        merchant: {
          name: 'Corner Café',
          legalName: 'Kahvila Kulma Oy',
          vatId: 'FI12345671',
          endpoint: { scheme: '0088', id: '6412345000012' },
          address: { country: 'FI' },
        },
        items: [
          { lineItemId: items[0]!.lineItemId, taxes: [{ category: 'S', rate: 0.14, amount: 126 }] },
          {
            lineItemId: items[1]!.lineItemId,
            unitCode: 'C62',
            gtin: '4006381333931',
            taxes: [{ category: 'S', rate: 0.255, amount: 469 }],
          },
          { lineItemId: items[2]!.lineItemId, quantity: 0.735, unitCode: 'KGM' },
        ],
        allowances: [{ amount: 200, reason: 'Loyalty voucher', category: 'S', rate: 0.255 }],
        charges: [{ amount: 50, reason: 'Paper bag', category: 'S', rate: 0.255 }],
        summary: {
          subtotal: 4286,
          totalTax: 790,
          totalDiscount: 200,
          total: 4926,
          currency: 'EUR',
          taxBreakdown: [
            { category: 'S', rate: 0.14, taxableAmount: 2296, taxAmount: 321 },
            { category: 'S', rate: 0.255, taxableAmount: 1840, taxAmount: 469 },
          ],
        },
        receiptCode: { value: 'RC2026112100042', symbology: 'code128' },
        fiscal: request.fiscal as DigitalReceipt12['fiscal'],
      });

      // The mug, net of the voucher and the bag it shares a rate with (1990 − 200 + 50), and its tax.
      const refunded = await stack.request<Data<{ amount: number; receiptId: string }> & ErrorBody>(
        'POST',
        `/api/v1/payments/${kind}/${sale.paymentId}/refunds`,
        {
          apiKey: merchant,
          body: { refundId: randomUUID(), items: [{ lineItemId: items[1]!.lineItemId, quantity: 1 }] },
        },
      );
      expect(refunded.status).toBe(201);
      expect(refunded.json.data.amount).toBe(1840 + 469);
      const refundReceipt = await open(refunded.json.data.receiptId);
      expect(refundReceipt).toMatchObject({
        version: '1.2',
        type: 'refund',
        relatedReceiptId: request.receiptId,
        merchant: { vatId: 'FI12345671', legalName: 'Kahvila Kulma Oy' },
        items: [
          {
            lineItemId: items[1]!.lineItemId,
            gtin: '4006381333931',
            totalPrice: 1840,
            taxes: [{ category: 'S', rate: 0.255, amount: 469 }],
          },
        ],
        summary: {
          subtotal: 1840,
          totalTax: 469,
          total: 2309,
          taxBreakdown: [{ category: 'S', rate: 0.255, taxableAmount: 1840, taxAmount: 469 }],
        },
      });
      expect(refundReceipt.receiptCode).toBeUndefined();
    },
  );

  it('refuses a breakdown that disagrees with its lines with 400 naming the field and the amount, charging nothing', async () => {
    const before = { ...stack.sandbox!.stats.paymentsCreated };
    const body = flattenedReceipt12({
      recipientHashedPan: user.hashedPan,
      taxBreakdown: [
        { category: 'S', rate: 0.14, taxableAmount: 2296, taxAmount: 321 },
        { category: 'S', rate: 0.255, taxableAmount: 1840, taxAmount: 507 },
      ],
      taxAmount: 828,
      totalAmount: 4964,
    });
    for (const [kind, extra] of [
      ['gateway_a', { amount: 4964 }],
      ['gateway_b', { cardNonce: 'cnon:card-nonce-ok' }],
    ] as const) {
      const refused = await stack.request<ErrorBody>('POST', `/api/v1/payments/${kind}/create`, {
        apiKey: merchant,
        body: { ...body, ...extra },
      });
      expect([refused.status, refused.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
      expect(refused.json.error.details?.fields).toEqual([
        {
          field: 'taxBreakdown.1.taxAmount',
          message: 'must be 469 (within one minor unit): 1840 × 0.255, rounded half up',
        },
      ]);
    }
    expect(stack.sandbox!.stats.paymentsCreated).toEqual(before);
    const missing = await fetchReceiptStatus(body.receiptId);
    expect(missing).toBe(404);

    // The nested form names the field inside the receipt.
    const receipt = structuredClone(twoRatesAndDiscount);
    receipt.receiptId = randomUUID();
    receipt.summary.taxBreakdown![1]!.taxableAmount = 1990;
    const nested = await stack.request<ErrorBody>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant,
      body: {
        receipt,
        recipientIdentifier: { type: 'email', value: 'buyer@example.com' },
        recipientHashedPan: user.hashedPan,
      },
    });
    expect(nested.status).toBe(400);
    expect(nested.json.error.details?.fields).toEqual([
      {
        field: 'receipt.summary.taxBreakdown.1.taxableAmount',
        message:
          "must be 1790: the lines' totalPrice less allowances plus charges of category S at rate 0.255",
      },
    ]);
  });

  it('seals a nested 1.2 receipt as sent', async () => {
    const receipt = { ...structuredClone(twoRatesAndDiscount), receiptId: randomUUID() };
    receipt.merchant = { ...receipt.merchant, merchantId: randomUUID() };
    receipt.transaction = { ...receipt.transaction, transactionId: randomUUID() };
    const sealed = await stack.request<Data<unknown>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant,
      body: {
        receipt,
        recipientIdentifier: { type: 'email', value: 'buyer@example.com' },
        recipientHashedPan: user.hashedPan,
      },
    });
    expect(sealed.status).toBe(200);
    expect(await open(receipt.receiptId)).toEqual(receipt);
  });

  it('still takes a 1.0 receipt and seals it as before: no 1.2 field appears', async () => {
    const request = flattenedReceipt();
    const sale = await paid('gateway_a', request);
    const receipt = await open(sale.body.receiptId);
    expect(receipt.version).toBe('1.0');
    // The card network's references may follow the charge; nothing else is added.
    expect(
      Object.keys(receipt)
        .filter((key) => key !== 'cardTransaction')
        .sort(),
    ).toEqual(['createdAt', 'items', 'merchant', 'receiptId', 'summary', 'transaction', 'version'].sort());
    expect(Object.keys(receipt.merchant).sort()).toEqual(
      ['address', 'contactEmail', 'merchantId', 'name', 'taxId'].sort(),
    );
    expect(receipt.summary).toEqual({
      subtotal: 1425,
      totalTax: 123,
      totalDiscount: 0,
      total: 1548,
      currency: 'USD',
      itemCount: 2,
    });
  });

  async function fetchReceiptStatus(receiptId: string): Promise<number> {
    const reply = await stack.request('GET', `/api/v1/receipts/${receiptId}`, { apiKey: issuer });
    return reply.status;
  }
});
