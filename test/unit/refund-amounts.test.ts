import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { BasisLine, RefundedLine } from '../../lib/db/payments.js';
import {
  amountRefund,
  itemisedRefund,
  lineTaxShares,
  shareByWeight,
  type Refunded,
  type SaleAmounts,
} from '../../lib/payments/refund-amounts.js';
import { saleStatus } from '../../lib/payments/lifecycle.js';
import type { RefundRecord } from '../../lib/db/payments.js';

const line = (lineItemId: string, quantity: number, unitPrice: number, tax: number): BasisLine => ({
  lineItemId,
  name: lineItemId,
  quantity,
  unitPrice,
  totalPrice: Math.round(quantity * unitPrice),
  tax,
});

const saleOf = (lines: BasisLine[]): SaleAmounts => {
  const subtotal = lines.reduce((sum, entry) => sum + entry.totalPrice, 0);
  const totalTax = lines.reduce((sum, entry) => sum + entry.tax, 0);
  return { lines, subtotal, totalTax, total: subtotal + totalTax };
};

const nothing: Refunded = { lines: [], tax: 0, amount: 0 };
const after = (refunded: Refunded, lines: RefundedLine[], tax: number, amount: number): Refunded => ({
  lines: [...refunded.lines, ...lines],
  tax: refunded.tax + tax,
  amount: refunded.amount + amount,
});

describe('the tax share of each sale line', () => {
  it('is the tax a line lists, and the rest of the tax shared by price among the lines that list none', () => {
    // The fixture: coffee 900 lists 78; croissant 525 lists none; the receipt's tax is 123.
    expect(lineTaxShares([{ totalPrice: 900, taxes: [{ amount: 78 }] }, { totalPrice: 525 }], 123)).toEqual([
      78, 45,
    ]);
    expect(
      lineTaxShares([{ totalPrice: 100 }, { totalPrice: 100 }, { totalPrice: 100 }], 100).reduce(
        (a, b) => a + b,
      ),
    ).toBe(100);
  });

  it('shares the whole tax by price when the listed amounts exceed it', () => {
    expect(lineTaxShares([{ totalPrice: 300, taxes: [{ amount: 500 }] }, { totalPrice: 100 }], 40)).toEqual([
      30, 10,
    ]);
  });

  it('always adds up to the receipt’s tax exactly', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            totalPrice: fc.integer({ min: 0, max: 100_000 }),
            listed: fc.option(fc.integer({ min: 0, max: 5_000 }), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        fc.integer({ min: 0, max: 50_000 }),
        (lines, totalTax) => {
          const shares = lineTaxShares(
            lines.map((entry) => ({
              totalPrice: entry.totalPrice,
              ...(entry.listed === undefined ? {} : { taxes: [{ amount: entry.listed }] }),
            })),
            totalTax,
          );
          expect(shares.reduce((a, b) => a + b, 0)).toBe(totalTax);
          expect(shares.every((share) => share >= 0)).toBe(true);
        },
      ),
    );
  });

  it('splits by largest remainder', () => {
    expect(shareByWeight(10, [1, 1, 1])).toEqual([4, 3, 3]);
    expect(shareByWeight(5, [0, 0])).toEqual([3, 2]);
  });
});

describe('itemised refunds', () => {
  const sale = saleOf([line('coffee', 2, 450, 78), line('croissant', 1, 525, 45)]);

  it('gives back each line’s part of its price and tax', () => {
    expect(itemisedRefund(sale, nothing, [{ lineItemId: 'coffee', quantity: 1 }])).toEqual({
      lines: [{ lineItemId: 'coffee', quantity: 1, amount: 450, tax: 39 }],
      subtotal: 450,
      tax: 39,
      amount: 489,
    });
  });

  it('rounds on the running total: three thirds of a line give back exactly the line', () => {
    const third = saleOf([line('cheese', 3, 333, 100)]);
    let refunded = nothing;
    const amounts: number[] = [];
    for (let step = 0; step < 3; step += 1) {
      const refund = itemisedRefund(third, refunded, [{ lineItemId: 'cheese', quantity: 1 }]);
      amounts.push(refund.amount);
      refunded = after(refunded, refund.lines, refund.tax, refund.amount);
    }
    expect(refunded.amount).toBe(third.total);
    expect(refunded.tax).toBe(100);
    expect(amounts).toEqual([366, 367, 366]);
  });

  it('refunds every sale exactly in any split of its lines', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            quantity: fc.integer({ min: 1, max: 6 }),
            unitPrice: fc.integer({ min: 0, max: 10_000 }),
            tax: fc.integer({ min: 0, max: 2_000 }),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        fc.integer({ min: 0, max: 1_000_000 }),
        (specs, seed) => {
          const basis = saleOf(
            specs.map((spec, index) => line(`l${index}`, spec.quantity, spec.unitPrice, spec.tax)),
          );
          let refunded = nothing;
          let state = seed;
          // Refund one unit of a pseudo-randomly chosen line at a time until everything is back.
          const left = new Map(basis.lines.map((entry) => [entry.lineItemId, entry.quantity]));
          while ([...left.values()].some((quantity) => quantity > 0)) {
            const open = [...left].filter(([, quantity]) => quantity > 0);
            state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
            const [lineItemId] = open[state % open.length]!;
            const refund = itemisedRefund(basis, refunded, [{ lineItemId, quantity: 1 }]);
            expect(refund.amount).toBeGreaterThanOrEqual(0);
            refunded = after(refunded, refund.lines, refund.tax, refund.amount);
            left.set(lineItemId, left.get(lineItemId)! - 1);
          }
          expect([refunded.amount, refunded.tax]).toEqual([basis.total, basis.totalTax]);
        },
      ),
    );
  });

  it('refuses a line that is not the sale’s, named twice, or asked for beyond what is left', () => {
    const refused = (items: { lineItemId: string; quantity: number }[], refunded = nothing) => {
      try {
        itemisedRefund(sale, refunded, items);
      } catch (error) {
        return (error as { details: { fields: { field: string }[] } }).details.fields.map(
          (field) => field.field,
        );
      }
      return [];
    };
    expect(refused([{ lineItemId: 'tea', quantity: 1 }])).toEqual(['items.0.lineItemId']);
    expect(
      refused([
        { lineItemId: 'coffee', quantity: 1 },
        { lineItemId: 'coffee', quantity: 1 },
      ]),
    ).toEqual(['items.1.lineItemId']);
    expect(refused([{ lineItemId: 'croissant', quantity: 2 }])).toEqual(['items.0.quantity']);
    const oneCoffeeBack = after(
      nothing,
      [{ lineItemId: 'coffee', quantity: 1, amount: 450, tax: 39 }],
      39,
      489,
    );
    expect(refused([{ lineItemId: 'coffee', quantity: 2 }], oneCoffeeBack)).toEqual(['items.0.quantity']);
    expect(refused([{ lineItemId: 'coffee', quantity: 1 }], oneCoffeeBack)).toEqual([]);
  });
});

describe('refunds of an amount', () => {
  const sale = saleOf([line('coffee', 2, 450, 78), line('croissant', 1, 525, 45)]);

  it('carry tax in the sale’s proportion, and the refund that empties the payment all that is left', () => {
    expect(amountRefund(sale, nothing, 500)).toEqual({ lines: [], subtotal: 460, tax: 40, amount: 500 });
    const rest = amountRefund(sale, after(nothing, [], 40, 500), sale.total - 500);
    expect(rest).toEqual({ lines: [], subtotal: 1425 - 460, tax: 123 - 40, amount: sale.total - 500 });
  });
});

describe('the sale status', () => {
  const refund = (amount: number, state: RefundRecord['state']) => ({ amount, state }) as RefundRecord;

  it('is the payment’s until succeeded refunds add up to part or all of it', () => {
    expect(saleStatus('succeeded', 1000, [])).toBe('succeeded');
    expect(saleStatus('succeeded', 1000, [refund(400, 'pending')])).toBe('succeeded');
    expect(saleStatus('succeeded', 1000, [refund(400, 'succeeded'), refund(100, 'failed')])).toBe(
      'partially_refunded',
    );
    expect(saleStatus('pending', 1000, [refund(400, 'succeeded'), refund(600, 'succeeded')])).toBe(
      'refunded',
    );
  });
});
