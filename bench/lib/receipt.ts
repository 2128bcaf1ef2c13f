import { randomUUID } from 'node:crypto';
import type { DigitalReceipt } from '../../lib/receipts/schemas.js';
import { sampleReceipt } from '../../test/support/fixtures.js';

/**
 * The receipt every section encrypts: the test fixture (every field of the spec filled in, ~1.6 KB)
 * plus one more line item, which brings it to the ~2 KB a typical three-line card receipt serialises to.
 */
export function benchReceipt(overrides: Partial<DigitalReceipt> = {}): DigitalReceipt {
  const base = sampleReceipt();
  const extra = {
    lineItemId: randomUUID(),
    sku: 'BN-250',
    name: 'House blend whole beans',
    description: '250 g bag, medium roast, roasted this week',
    quantity: 1,
    unitPrice: 1450,
    totalPrice: 1450,
    category: 'Retail',
    discounts: [{ name: 'Member price', type: 'fixed' as const, value: 0, amount: 0 }],
    taxes: [{ name: 'Sales tax', rate: 0.08625, amount: 125 }],
  };
  const items = [...base.items, extra];
  const subtotal = items.reduce((sum, item) => sum + item.totalPrice, 0);
  const totalTax = base.summary.totalTax + 125;
  return {
    ...base,
    items,
    summary: {
      ...base.summary,
      subtotal,
      totalTax,
      total: subtotal + totalTax + (base.summary.tipAmount ?? 0),
      itemCount: base.summary.itemCount + 1,
    },
    ...overrides,
  };
}
