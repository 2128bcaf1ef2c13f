import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { lineGross } from '@receipt-service/receipt-core';
import { expectedLineTotal } from '../../lib/receipts/amounts.js';

describe("a line's quantity × unitPrice, rounded half away from zero", () => {
  it.each([
    // Doubles make these 13744.499999999998 and 16021.499999999998: the property test found both.
    [2.55, 5390, 13745],
    [2.913, 5500, 16022],
    [1.5, 333, 500],
    [0.735, 1899, 1396],
    [3, 250, 750],
    [-1.5, 333, -500],
    [2.5, -3, -8],
    [1e-7, 5_000_000, 1],
    [1e21, 2, 2e21],
  ])('%p × %p is %p', (quantity, unitPrice, expected) => {
    expect(lineGross(quantity, unitPrice)).toBe(expected);
  });

  it('agrees with integer arithmetic for every weight in grams at every price', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (grams, price) => {
          expect(lineGross(grams / 1000, price)).toBe(Math.floor((grams * price + 500) / 1000));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('is the rule a line is checked by', () => {
    expect(expectedLineTotal({ quantity: 2.55, unitPrice: 5390, totalPrice: 13745 })).toBe(13745);
    expect(
      expectedLineTotal({ quantity: 2.55, unitPrice: 5390, totalPrice: 0, discounts: [{ amount: 45 }] }),
    ).toBe(13700);
  });
});
