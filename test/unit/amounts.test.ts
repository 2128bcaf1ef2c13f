import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { amountProblems, expectedLineTotal } from '../../lib/receipts/amounts.js';
import { digitalReceiptSchema } from '../../lib/receipts/schemas.js';
import { sampleReceipt } from '../support/fixtures.js';

describe('the amount-consistency rule', () => {
  it('accepts lines that add up to the subtotal and a total of subtotal plus tax', () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(100_000), { minLength: 1, maxLength: 20 }),
        fc.nat(10_000),
        (prices, tax) => {
          const subtotal = prices.reduce((sum, price) => sum + price, 0);
          const lines = prices.map((totalPrice) => ({ totalPrice }));
          expect(amountProblems({ lines, subtotal, tax, total: subtotal + tax })).toEqual([]);
        },
      ),
    );
  });

  it('names the subtotal and the total, with the value each would need', () => {
    expect(
      amountProblems({
        lines: [{ totalPrice: 450 }, { totalPrice: 525 }],
        subtotal: 900,
        tax: 78,
        total: 1000,
      }),
    ).toEqual([
      { amount: 'subtotal', expected: 975 },
      { amount: 'total', expected: 978 },
    ]);
  });

  it('skips the subtotal check without lines and the total check without tax', () => {
    expect(amountProblems({ lines: [], subtotal: 900 })).toEqual([]);
  });
});

describe('line totals', () => {
  it('rounds fractional quantities half away from zero and subtracts discounts', () => {
    expect(expectedLineTotal({ quantity: 1.5, unitPrice: 333, totalPrice: 0 })).toBe(500);
    expect(
      expectedLineTotal({ quantity: 2, unitPrice: 450, totalPrice: 0, discounts: [{ amount: 100 }] }),
    ).toBe(800);
  });

  it('does not guess a percentage discount that gives no amount', () => {
    expect(
      expectedLineTotal({ quantity: 2, unitPrice: 450, totalPrice: 0, discounts: [{}] }),
    ).toBeUndefined();
  });
});

describe('receipt content the issuer app will show', () => {
  const receipt = (merchant: Record<string, unknown>) =>
    digitalReceiptSchema.safeParse(sampleReceipt({ merchant: { ...sampleReceipt().merchant, ...merchant } }));
  const messages = (result: ReturnType<typeof receipt>) =>
    (result.error?.issues ?? []).map((issue) => `${issue.path.join('.')}: ${issue.message}`);

  it.each(['javascript:alert(document.cookie)', 'http://example.com/logo.png', 'data:image/png;base64,AAAA'])(
    'refuses the logo %s',
    (logoUrl) => {
      expect(messages(receipt({ logoUrl }))).toEqual(['merchant.logoUrl: must be an https URL']);
    },
  );

  it('accepts an https logo, and checks e-mail and country codes', () => {
    expect(receipt({ logoUrl: 'https://example.com/logo.png' }).success).toBe(true);
    expect(messages(receipt({ contactEmail: 'not-an-email' }))).toHaveLength(1);
    expect(messages(receipt({ address: { country: 'USA' } }))).toEqual([
      'merchant.address.country: must be an ISO 3166-1 alpha-2 country code such as US',
    ]);
    expect(messages(receipt({ address: { country: 'XX' } }))).toEqual([
      'merchant.address.country: is not an ISO 3166-1 country code',
    ]);
  });

  it('refuses a line whose total is not its quantity times its price', () => {
    const base = sampleReceipt();
    const items = [{ ...base.items[0]!, totalPrice: base.items[0]!.totalPrice + 1 }, ...base.items.slice(1)];
    const result = digitalReceiptSchema.safeParse({
      ...base,
      items,
      summary: { ...base.summary, subtotal: base.summary.subtotal + 1 },
    });
    expect(messages(result)).toEqual([expect.stringMatching(/^items\.0\.totalPrice: must equal quantity/)]);
  });
});
