import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { amountProblems } from '../../lib/receipts/amounts.js';

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
