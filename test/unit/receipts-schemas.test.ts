import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { encryptBody } from '../../lib/receipts/requests.js';
import { createPaymentBody } from '../../lib/payments/schemas.js';
import { mockItems, toDigitalReceipt } from '../../lib/receipts/flattened.js';
import { paymentGatewayKind, transactionGatewaySchema } from '../../lib/kernel/fields.js';
import { digitalReceiptSchema } from '../../lib/receipts/schemas.js';
import { flattenedReceipt, sampleReceipt } from '../support/fixtures.js';

const fieldsOf = (result: { success: boolean; error?: { issues: { path: PropertyKey[] }[] } }) =>
  (result.error?.issues ?? []).map((issue) => issue.path.map(String).join('.'));

describe('receipt schemas follow the spec tables', () => {
  it('accepts the full sample receipt and round-trips it unchanged', () => {
    const receipt = sampleReceipt();
    expect(digitalReceiptSchema.parse(receipt)).toEqual(receipt);
  });

  it.each([
    ['receiptId', { receiptId: 'not-a-uuid' }],
    ['createdAt', { createdAt: 'yesterday' }],
    ['summary.currency', { summary: { ...sampleReceipt().summary, currency: 'usd' } }],
    ['summary.subtotal', { summary: { ...sampleReceipt().summary, subtotal: 1 } }],
  ])('refuses a bad %s', (field, override) => {
    expect(fieldsOf(digitalReceiptSchema.safeParse(sampleReceipt(override)))).toContain(field);
  });

  it('enforces expiryMonth 1–12, percentage discounts 0–100, enums and integer money', () => {
    const receipt = sampleReceipt();
    const bad = {
      ...receipt,
      transaction: {
        ...receipt.transaction,
        paymentMethod: 'cheque',
        cardDetails: { expiryMonth: 13, brand: 'diners' },
      },
      items: [{ ...receipt.items[0]!, unitPrice: 4.5, discounts: [{ type: 'percentage', value: 101 }] }],
    };
    expect(fieldsOf(digitalReceiptSchema.safeParse(bad))).toEqual(
      expect.arrayContaining([
        'transaction.paymentMethod',
        'transaction.cardDetails.expiryMonth',
        'transaction.cardDetails.brand',
        'items.0.unitPrice',
        'items.0.discounts.0.value',
      ]),
    );
  });

  it('refuses unknown fields at any depth, so nothing unchecked is encrypted or stored', () => {
    const parsed = digitalReceiptSchema.safeParse({
      ...sampleReceipt(),
      isAdmin: true,
      merchant: { ...sampleReceipt().merchant, clientId: 'x' },
    });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => [issue.code, issue.path.join('.')])).toEqual(
      expect.arrayContaining([
        ['unrecognized_keys', ''],
        ['unrecognized_keys', 'merchant'],
      ]),
    );
  });

  it('maps gateway aliases to the neutral names', () => {
    expect(paymentGatewayKind.parse('stripe')).toBe('gateway_a');
    expect(paymentGatewayKind.parse('square')).toBe('gateway_b');
    expect(transactionGatewaySchema.parse('other')).toBe('other');
    expect(paymentGatewayKind.safeParse('other').success).toBe(false);
  });
});

describe('encrypt request forms', () => {
  it('tells the nested form from the flattened one by shape', () => {
    const nested = encryptBody.parse({
      receipt: sampleReceipt(),
      recipientIdentifier: { type: 'email', value: 'a@b.c' },
    });
    expect(nested.form).toBe('nested');
    const flattened = encryptBody.parse(flattenedReceipt());
    expect(flattened.form).toBe('flattened');
  });

  it("refuses a request's own cardTransaction: the network's references are the service's to seal", () => {
    const forged = encryptBody.safeParse({
      receipt: {
        ...sampleReceipt(),
        cardTransaction: { gateway: 'gateway_a', authorizationCode: 'A1B2C3', providerIds: {} },
      },
      recipientIdentifier: { type: 'email', value: 'a@b.c' },
    });
    expect(fieldsOf(forged)).toEqual(['receipt.cardTransaction']);
    // The flattened forms have no such field at all; a gateway_a payment method id is checked for shape.
    expect(encryptBody.safeParse({ ...flattenedReceipt(), cardTransaction: {} }).success).toBe(false);
    expect(
      fieldsOf(createPaymentBody.safeParse({ ...flattenedReceipt(), paymentMethodId: 'card_1' })),
    ).toEqual(['paymentMethodId']);
  });

  it('names the fields of the form the caller meant', () => {
    const nested = encryptBody.safeParse({ receipt: { receiptId: 'x' } });
    expect(fieldsOf(nested)).toEqual(expect.arrayContaining(['receipt.receiptId', 'recipientIdentifier']));
    const flattened = encryptBody.safeParse({ merchantName: 'x' });
    expect(fieldsOf(flattened)).toEqual(
      expect.arrayContaining(['receiptId', 'merchantId', 'transactionId', 'subtotal']),
    );
  });

  it('applies the amount rules: subtotal = Σ totalPrice, totalAmount = subtotal + taxAmount', () => {
    expect(encryptBody.safeParse(flattenedReceipt()).success).toBe(true);
    expect(fieldsOf(encryptBody.safeParse(flattenedReceipt({ subtotal: 1 })))).toEqual(
      expect.arrayContaining(['subtotal', 'totalAmount']),
    );
    expect(fieldsOf(encryptBody.safeParse(flattenedReceipt({ items: [] })))).toContain('items');
    expect(fieldsOf(createPaymentBody.safeParse({ ...flattenedReceipt(), amount: 1.5 }))).toContain('amount');
  });

  it('defaults currency to USD, version to 1.1 and paymentMethod to card', () => {
    const { currency: _c, version: _v, paymentMethod: _p, ...rest } = flattenedReceipt();
    const parsed = encryptBody.parse(rest);
    expect(parsed).toMatchObject({ currency: 'USD', paymentMethod: 'card' });
    // The version follows from the fields given: 1.1 without any of DigitalReceipt 1.2's.
    expect(toDigitalReceipt(parsed as Parameters<typeof toDigitalReceipt>[0], new Date()).version).toBe(
      '1.1',
    );
  });
});

describe('flattened receipt → DigitalReceipt', () => {
  it('builds merchant, transaction, card details, items and summary that the receipt schema accepts', () => {
    const input = encryptBody.parse(flattenedReceipt());
    if (input.form !== 'flattened') throw new Error('expected the flattened form');
    const receipt = toDigitalReceipt(input, new Date('2026-11-21T10:00:00Z'));
    expect(digitalReceiptSchema.parse(receipt)).toEqual(receipt);
    expect(receipt).toMatchObject({
      merchant: { name: 'Corner Coffee Roasters', address: { postalCode: '94105' }, taxId: 'US-94-1234567' },
      transaction: { datetime: '2026-11-21T09:15:00Z', cardDetails: { last4: '4242', brand: 'visa' } },
      summary: {
        subtotal: 1425,
        totalTax: 123,
        totalDiscount: 0,
        total: 1548,
        currency: 'USD',
        itemCount: 2,
      },
      createdAt: '2026-11-21T10:00:00.000Z',
    });
  });

  it.each([0, 1, 2, 3, 999, 123_457])(
    'generates mock items that add up exactly to a subtotal of %i, the same on every call',
    (subtotal) => {
      const receiptId = randomUUID();
      const items = mockItems(receiptId, subtotal);
      expect(items.reduce((sum, item) => sum + item.totalPrice, 0)).toBe(subtotal);
      expect(items.every((item) => item.totalPrice >= 0 && item.name.length > 0)).toBe(true);
      expect(mockItems(receiptId, subtotal)).toEqual(items);
      expect(
        digitalReceiptSchema.safeParse(
          sampleReceipt({ items, summary: { ...sampleReceipt().summary, subtotal } }),
        ).success,
      ).toBe(true);
    },
  );
});
