import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  generateSigningKey,
  refundBasisOf,
  signReceipt,
  toRefundReceipt,
  verifyReceiptSignature,
  type DigitalReceipt,
} from '@receipt-service/receipt-core';
import { encryptBody } from '../../lib/receipts/requests.js';
import { createPaymentBody } from '../../lib/payments/schemas.js';
import { toDigitalReceipt, type FlattenedReceipt } from '../../lib/receipts/flattened.js';
import { digitalReceiptSchema } from '../../lib/receipts/schemas.js';
import { parseInput } from '../../lib/http/validation.js';
import { flattenedReceipt, flattenedReceipt12 } from '../support/fixtures.js';
import { arbitraryReceipt, FIXTURES, oneRate, twoRatesAndDiscount } from '../sdk/formats-fixtures.js';

/**
 * DigitalReceipt 1.2 as the service takes it (DECISIONS, round 4, "Standard formats"): both request
 * forms carry every field 1.2 adds, the tax breakdown must agree with the lines (a disagreement names
 * the field and the amount it must be), and refunds keep each line's VAT category.
 */

const nested = (receipt: unknown) => ({
  receipt,
  recipientIdentifier: { type: 'email', value: 'buyer@example.com' },
});
const problems = (input: unknown) => {
  const result = parseInput(encryptBody, input);
  return result.success ? [] : result.fields;
};
const clone = <T>(value: T): T => structuredClone(value);

describe('the nested form of a 1.2 receipt', () => {
  it.each(Object.entries(FIXTURES))('accepts the formats fixture %s, every 1.2 field kept', (_, receipt) => {
    const parsed = encryptBody.parse(nested(receipt));
    expect(parsed).toMatchObject({ form: 'nested', receipt: JSON.parse(JSON.stringify(receipt)) });
  });

  it("accepts any receipt whose breakdown the formats tests' own implementation of the rule computes", () => {
    fc.assert(
      fc.property(arbitraryReceipt(), (receipt) => {
        expect(problems(nested(receipt))).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });

  it('refuses a breakdown that disagrees, naming the field and the amount it must be', () => {
    const receipt = clone(twoRatesAndDiscount);
    receipt.summary.taxBreakdown![1]!.taxAmount = 460;
    receipt.summary.totalTax = 572;
    receipt.summary.total = 3312;
    expect(problems(nested(receipt))).toEqual([
      {
        field: 'receipt.summary.taxBreakdown.1.taxAmount',
        message: 'must be 456 (within one minor unit): 1790 × 0.255, rounded half up',
      },
    ]);

    const taxable = clone(twoRatesAndDiscount);
    taxable.summary.taxBreakdown![1]!.taxableAmount = 1990;
    expect(problems(nested(taxable))).toEqual([
      expect.objectContaining({
        field: 'receipt.summary.taxBreakdown.1.taxableAmount',
        message: expect.stringMatching(/^must be 1790: /),
      }),
    ]);
  });

  it('takes a tax within one minor unit of the rounded product, but not two', () => {
    const receipt = clone(twoRatesAndDiscount);
    receipt.summary.taxBreakdown![1]!.taxAmount = 457;
    receipt.summary.totalTax = 569;
    receipt.summary.total = 3309;
    expect(problems(nested(receipt))).toEqual([]);
    receipt.summary.taxBreakdown![1]!.taxAmount = 458;
    receipt.summary.totalTax = 570;
    receipt.summary.total = 3310;
    expect(problems(nested(receipt)).map((problem) => problem.field)).toEqual([
      'receipt.summary.taxBreakdown.1.taxAmount',
    ]);
  });

  it('refuses a breakdown missing a rate, one that does not add up to totalTax, and line taxes without category', () => {
    const missing = clone(twoRatesAndDiscount);
    missing.summary.taxBreakdown = [missing.summary.taxBreakdown![0]!];
    expect(problems(nested(missing)).map((problem) => problem.field)).toEqual(
      expect.arrayContaining(['receipt.summary.taxBreakdown', 'receipt.summary.totalTax']),
    );
    const uncategorised = clone(oneRate);
    delete uncategorised.items[0]!.taxes![0]!.category;
    expect(problems(nested(uncategorised))).toContainEqual({
      field: 'receipt.items.0.taxes.0.category',
      message: 'is required when the receipt gives a tax breakdown',
    });
  });

  it('checks the total and totalDiscount against allowances and charges', () => {
    const receipt = clone(twoRatesAndDiscount);
    receipt.summary.total = 3508;
    receipt.summary.totalDiscount = 100;
    expect(problems(nested(receipt))).toEqual([
      {
        field: 'receipt.summary.total',
        message: 'must equal subtotal − allowances + charges + totalTax + tipAmount (3308)',
      },
      {
        field: 'receipt.summary.totalDiscount',
        message: 'must report the allowances and the line discounts (300)',
      },
    ]);
  });

  it('refuses a GTIN or an EAN-13 receipt code with a wrong check digit, and fiscal data over 4 KB', () => {
    const receipt = clone(FIXTURES.withReceiptCode);
    receipt.items[0]!.gtin = '4006381333932';
    receipt.receiptCode = { value: '4006381333932', symbology: 'ean13' };
    receipt.fiscal = { scheme: 'DE-TSE', data: 'x'.repeat(4097) };
    expect(problems(nested(receipt)).map((problem) => problem.field)).toEqual([
      'receipt.items.0.gtin',
      'receipt.receiptCode.value',
      'receipt.fiscal.data',
    ]);
    receipt.items[0]!.gtin = '4006381333931';
    receipt.receiptCode = { value: '4006381333931', symbology: 'ean13' };
    receipt.fiscal = { scheme: 'DE-TSE', data: '€'.repeat(1365) };
    expect(problems(nested(receipt))).toEqual([]);
  });
});

describe('the flattened form of a 1.2 receipt', () => {
  const parsed = () => encryptBody.parse(flattenedReceipt12()) as unknown as FlattenedReceipt;

  it('maps every 1.2 field into the receipt, which the receipt schema accepts', () => {
    const receipt = toDigitalReceipt(parsed(), new Date('2026-11-21T10:15:00Z'));
    expect(digitalReceiptSchema.parse(receipt)).toEqual(receipt);
    expect(receipt).toMatchObject({
      version: '1.2',
      merchant: {
        legalName: 'Kahvila Kulma Oy',
        vatId: 'FI12345671',
        endpoint: { scheme: '0088', id: '6412345000012' },
        address: { country: 'FI' },
      },
      items: [
        { taxes: [{ category: 'S', rate: 0.14 }] },
        { unitCode: 'C62', gtin: '4006381333931', taxes: [{ category: 'S', rate: 0.255 }] },
        { unitCode: 'KGM' },
      ],
      allowances: [{ amount: 200, reason: 'Loyalty voucher', category: 'S', rate: 0.255 }],
      charges: [{ amount: 50, reason: 'Paper bag', category: 'S', rate: 0.255 }],
      summary: {
        subtotal: 4286,
        totalTax: 790,
        totalDiscount: 200,
        total: 4926,
        taxBreakdown: [
          { category: 'S', rate: 0.14, taxableAmount: 2296, taxAmount: 321 },
          { category: 'S', rate: 0.255, taxableAmount: 1840, taxAmount: 469 },
        ],
      },
      receiptCode: { value: 'RC2026112100042', symbology: 'code128' },
      fiscal: { scheme: 'AT-RKSV' },
    });
    // The nested form takes the receipt the flattened one makes.
    expect(problems(nested(receipt))).toEqual([]);
  });

  it('defaults the version to 1.2 when a 1.2 field is given, and keeps 1.0 and 1.1 requests as they were', () => {
    const { version: _version, ...rest } = flattenedReceipt12();
    expect(toDigitalReceipt(encryptBody.parse(rest) as never, new Date()).version).toBe('1.2');
    const { version: _v, ...old } = flattenedReceipt();
    const receipt = toDigitalReceipt(encryptBody.parse(old) as never, new Date());
    expect(receipt.version).toBe('1.1');
    expect(Object.keys(receipt).sort()).toEqual(
      ['createdAt', 'items', 'merchant', 'receiptId', 'summary', 'transaction', 'version'].sort(),
    );
    expect(toDigitalReceipt(encryptBody.parse(flattenedReceipt()) as never, new Date()).version).toBe('1.0');
  });

  it('refuses a breakdown that disagrees and a total that leaves out the allowances, in both flattened bodies', () => {
    const body = flattenedReceipt12({
      taxBreakdown: [
        { category: 'S', rate: 0.14, taxableAmount: 2296, taxAmount: 321 },
        { category: 'S', rate: 0.255, taxableAmount: 1840, taxAmount: 507 },
      ],
      taxAmount: 828,
      totalAmount: 4964,
    });
    const expected = { field: 'taxBreakdown.1.taxAmount', message: expect.stringMatching(/^must be 469 /) };
    expect(problems(body)).toEqual([expected]);
    const payment = parseInput(createPaymentBody, { ...body, amount: 4964 });
    expect(payment.success ? [] : payment.fields).toEqual([expected]);

    expect(problems(flattenedReceipt12({ totalAmount: 5076 }))).toEqual([
      {
        field: 'totalAmount',
        message: 'must equal subtotal − allowances + charges + taxAmount (4926)',
      },
    ]);
  });
});

describe('a 1.2 receipt signed and refunded', () => {
  it("is covered by the merchant's signature: a changed receipt code does not verify", async () => {
    const key = await generateSigningKey({ algorithm: 'EdDSA' });
    const receipt = toDigitalReceipt(parsed12());
    const jws = await signReceipt(receipt, key.privateKey, key.kid);
    const sealed = { ...receipt, merchantSignature: { kid: key.kid, jws } };
    await expect(verifyReceiptSignature(sealed, key.publicJwk)).resolves.toMatchObject({ kid: key.kid });
    const changed = { ...sealed, receiptCode: { value: 'RC2026112100043', symbology: 'code128' as const } };
    await expect(verifyReceiptSignature(changed, key.publicJwk)).rejects.toThrow();
  });

  it("keeps each refunded line's VAT category and rate, and recomputes the breakdown", () => {
    const refund = toRefundReceipt(oneRate as DigitalReceipt, {
      refundId: 'refund-0001',
      items: [{ lineItemId: 'a1111111-1111-4111-8111-111111111111', quantity: 1 }],
      refundDate: '2026-11-23T09:00:01Z',
    });
    expect(refund).toMatchObject({
      version: '1.2',
      type: 'refund',
      merchant: { vatId: 'FI12345671', legalName: 'Kahvila Kulma Oy' },
      items: [{ quantity: 1, totalPrice: 400, taxes: [{ category: 'S', rate: 0.14, amount: 56 }] }],
      summary: {
        subtotal: 400,
        totalTax: 56,
        total: 456,
        taxBreakdown: [{ category: 'S', rate: 0.14, taxableAmount: 400, taxAmount: 56 }],
      },
    });
    expect(refund.receiptCode).toBeUndefined();
    expect(digitalReceiptSchema.parse(refund)).toEqual(refund);
  });

  it('gives back what the card paid: allowances and charges spread over their rate, the tip aside', () => {
    const sale = twoRatesAndDiscount as DigitalReceipt;
    const basis = refundBasisOf(sale);
    expect(basis.subtotal).toBe(2590);
    expect(basis.total).toBe(sale.summary.total - (sale.summary.tipAmount ?? 0));
    const refund = toRefundReceipt(sale, {
      refundId: 'refund-0002',
      items: sale.items.map(({ lineItemId, quantity }) => ({ lineItemId, quantity })),
      refundDate: '2026-11-23T09:05:01Z',
    });
    expect(refund.summary).toMatchObject({
      subtotal: 2590,
      totalTax: 568,
      total: 3158,
      taxBreakdown: [
        { category: 'S', rate: 0.14, taxableAmount: 800, taxAmount: 112 },
        { category: 'S', rate: 0.255, taxableAmount: 1790, taxAmount: 456 },
      ],
    });
    expect(digitalReceiptSchema.parse(refund)).toEqual(refund);
  });
});

function parsed12(): FlattenedReceipt {
  return encryptBody.parse(flattenedReceipt12()) as unknown as FlattenedReceipt;
}
