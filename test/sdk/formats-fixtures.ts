import fc from 'fast-check';
import type { DigitalReceipt12, TaxCategory } from '@receipt-service/receipt-core';
import type { UblBuyer } from '@receipt-service/receipt-core';

/*
 * The receipts issue 37 names, as DigitalReceipt 1.2 receipts of a Finnish café (EUR, VAT 14 % and 25.5 %),
 * paid by card: a sale with one rate; two rates, a line discount and a document allowance; quantities by
 * weight; a receipt with a receipt code; an itemised refund and a full refund. Their breakdowns follow
 * DECISIONS' rule (per category and rate, tax = round half up of taxable × rate).
 */

const merchant: DigitalReceipt12['merchant'] = {
  merchantId: '0b6f8f3e-3c59-4d8b-9d0e-3c1a2b4c5d6e',
  name: 'Corner Café',
  legalName: 'Kahvila Kulma Oy',
  vatId: 'FI12345671',
  endpoint: { scheme: '0088', id: '6412345000012' },
  address: { street: 'Mannerheimintie 1', city: 'Helsinki', postalCode: '00100', country: 'FI' },
  contactEmail: 'kuitit@example.fi',
};

const transaction = (transactionId: string): DigitalReceipt12['transaction'] => ({
  transactionId,
  datetime: '2026-11-21T22:15:00Z',
  // Already 22 November in Helsinki: the invoice's date is the local one.
  timezone: 'Europe/Helsinki',
  paymentMethod: 'card',
  cardDetails: { last4: '4242', brand: 'visa' },
});

const food = (amount: number) => [{ name: 'ALV 14 %', rate: 0.14, category: 'S' as const, amount }];
const general = (amount: number) => [{ name: 'ALV 25.5 %', rate: 0.255, category: 'S' as const, amount }];

export const buyer: UblBuyer = {
  name: 'Acme Consulting Oy',
  endpoint: { scheme: '0088', id: '6419876000023' },
  address: { country: 'FI', city: 'Espoo' },
  reference: 'EXP-2026-0042',
  vatId: 'FI23456782',
};

export const oneRate: DigitalReceipt12 = {
  version: '1.2',
  receiptId: '11111111-1111-4111-8111-111111111111',
  type: 'sale',
  merchant,
  transaction: transaction('11111111-0000-4000-8000-000000000001'),
  items: [
    {
      lineItemId: 'a1111111-1111-4111-8111-111111111111',
      sku: 'FW-12',
      name: 'Flat white',
      quantity: 2,
      unitPrice: 400,
      totalPrice: 800,
      taxes: food(112),
    },
    {
      lineItemId: 'a2222222-2222-4222-8222-222222222222',
      name: 'Cinnamon bun',
      quantity: 1,
      unitPrice: 350,
      totalPrice: 350,
      taxes: food(49),
    },
  ],
  summary: {
    subtotal: 1150,
    totalTax: 161,
    totalDiscount: 0,
    total: 1311,
    currency: 'EUR',
    itemCount: 3,
    taxBreakdown: [{ category: 'S', rate: 0.14, taxableAmount: 1150, taxAmount: 161 }],
  },
  createdAt: '2026-11-21T22:15:02Z',
};

export const twoRatesAndDiscount: DigitalReceipt12 = {
  version: '1.2',
  receiptId: '22222222-2222-4222-8222-222222222222',
  merchant,
  transaction: transaction('22222222-0000-4000-8000-000000000002'),
  items: [
    {
      lineItemId: 'b1111111-1111-4111-8111-111111111111',
      name: 'Oat latte',
      quantity: 2,
      unitPrice: 450,
      totalPrice: 800,
      discounts: [{ name: 'Happy hour', type: 'fixed', amount: 100 }],
      taxes: food(112),
    },
    {
      lineItemId: 'b2222222-2222-4222-8222-222222222222',
      name: 'Travel mug',
      gtin: '4006381333931',
      quantity: 1,
      unitPrice: 1990,
      totalPrice: 1990,
      // The line's share of its rate's tax, after the loyalty voucher.
      taxes: general(456),
    },
  ],
  allowances: [{ amount: 200, reason: 'Loyalty voucher', category: 'S', rate: 0.255 }],
  summary: {
    subtotal: 2790,
    totalTax: 568,
    totalDiscount: 300,
    tipAmount: 150,
    total: 3308,
    currency: 'EUR',
    itemCount: 3,
    taxBreakdown: [
      { category: 'S', rate: 0.14, taxableAmount: 800, taxAmount: 112 },
      { category: 'S', rate: 0.255, taxableAmount: 1790, taxAmount: 456 },
    ],
  },
  createdAt: '2026-11-21T22:15:02Z',
};

export const byWeight: DigitalReceipt12 = {
  version: '1.2',
  receiptId: '33333333-3333-4333-8333-333333333333',
  merchant,
  transaction: transaction('33333333-0000-4000-8000-000000000003'),
  items: [
    {
      lineItemId: 'c1111111-1111-4111-8111-111111111111',
      name: 'Gouda, by weight',
      quantity: 0.735,
      unitCode: 'KGM',
      unitPrice: 1899,
      totalPrice: 1396,
      taxes: food(196),
    },
    {
      lineItemId: 'c2222222-2222-4222-8222-222222222222',
      name: 'Bananas',
      quantity: 1.2,
      unitCode: 'KGM',
      unitPrice: 199,
      totalPrice: 239,
      taxes: food(33),
    },
  ],
  summary: {
    subtotal: 1635,
    totalTax: 229,
    totalDiscount: 0,
    total: 1864,
    currency: 'EUR',
    itemCount: 2,
    taxBreakdown: [{ category: 'S', rate: 0.14, taxableAmount: 1635, taxAmount: 229 }],
  },
  createdAt: '2026-11-21T22:15:02Z',
};

export const withReceiptCode: DigitalReceipt12 = {
  ...oneRate,
  receiptId: '44444444-4444-4444-8444-444444444444',
  transaction: transaction('44444444-0000-4000-8000-000000000004'),
  receiptCode: { value: 'RC2026112100042', symbology: 'code128' },
  fiscal: { scheme: 'AT-RKSV', data: '_R1-AT1_K1_42_2026-11-21T23:15:00_13,11_0,00_0,00_0,00_0,00_...' },
};

/** One of the two flat whites of `oneRate` given back. */
export const itemisedRefund: DigitalReceipt12 = {
  version: '1.2',
  receiptId: '55555555-5555-4555-8555-555555555555',
  type: 'refund',
  relatedReceiptId: oneRate.receiptId,
  merchant,
  transaction: { ...transaction('55555555-0000-4000-8000-000000000005'), datetime: '2026-11-23T09:00:00Z' },
  items: [
    {
      lineItemId: 'a1111111-1111-4111-8111-111111111111',
      sku: 'FW-12',
      name: 'Flat white',
      quantity: 1,
      unitPrice: 400,
      totalPrice: 400,
      taxes: food(56),
    },
  ],
  summary: {
    subtotal: 400,
    totalTax: 56,
    totalDiscount: 0,
    total: 456,
    currency: 'EUR',
    itemCount: 1,
    taxBreakdown: [{ category: 'S', rate: 0.14, taxableAmount: 400, taxAmount: 56 }],
  },
  notes: 'Returned: wrong order',
  metadata: { refundId: 'refund-0001' },
  createdAt: '2026-11-23T09:00:01Z',
};

/** All of `twoRatesAndDiscount` given back but the tip, which the card's refund does not return. */
export const fullRefund: DigitalReceipt12 = {
  ...twoRatesAndDiscount,
  receiptId: '66666666-6666-4666-8666-666666666666',
  type: 'refund',
  relatedReceiptId: twoRatesAndDiscount.receiptId,
  transaction: { ...transaction('66666666-0000-4000-8000-000000000006'), datetime: '2026-11-23T09:05:00Z' },
  summary: { ...twoRatesAndDiscount.summary, tipAmount: null, total: 3158 },
  metadata: { refundId: 'refund-0002' },
  createdAt: '2026-11-23T09:05:01Z',
};

export const FIXTURES = {
  oneRate,
  twoRatesAndDiscount,
  byWeight,
  withReceiptCode,
  itemisedRefund,
  fullRefund,
} as const;

/** A rate as an integer count of millionths, so that tax is computed without floating point. */
const millionths = (rate: number): number => Math.round(rate * 1_000_000);

/**
 * The VAT breakdown DECISIONS defines for a receipt: per category and rate, the lines' totalPrice less
 * allowances plus charges of that category and rate, and its tax rounded half up, in exact integers.
 */
export function breakdownOf(
  receipt: DigitalReceipt12,
): NonNullable<DigitalReceipt12['summary']['taxBreakdown']> {
  const groups = new Map<string, { category: TaxCategory; rate: number; taxableAmount: number }>();
  const add = (category: TaxCategory, rate: number, amount: number) => {
    const key = `${category} ${rate}`;
    const group = groups.get(key) ?? { category, rate, taxableAmount: 0 };
    group.taxableAmount += amount;
    groups.set(key, group);
  };
  for (const item of receipt.items) add(item.taxes![0]!.category!, item.taxes![0]!.rate!, item.totalPrice);
  for (const allowance of receipt.allowances ?? [])
    add(allowance.category, allowance.rate, -allowance.amount);
  for (const charge of receipt.charges ?? []) add(charge.category, charge.rate, charge.amount);
  return [...groups.values()].map((group) => ({
    ...group,
    taxAmount: Math.floor((group.taxableAmount * millionths(group.rate) + 500_000) / 1_000_000),
  }));
}

const VAT_RATES = [
  { category: 'S', rate: 0.14 },
  { category: 'S', rate: 0.255 },
  { category: 'S', rate: 0.1 },
  { category: 'Z', rate: 0 },
] as const;

/**
 * Random DigitalReceipt 1.2 sales and refunds of `merchant` that DECISIONS' rules accept: one to four lines
 * of any of four VAT rates, counted or weighed, some discounted, with or without a document allowance, a
 * charge and a tip; names with the characters XML escapes. Their breakdown and totals are breakdownOf's.
 */
export const arbitraryReceipt = (): fc.Arbitrary<DigitalReceipt12> =>
  fc
    .record({
      lines: fc.array(
        fc.record({
          vat: fc.constantFrom(...VAT_RATES),
          grams: fc.option(fc.integer({ min: 1, max: 5000 }), { nil: undefined }),
          units: fc.integer({ min: 1, max: 12 }),
          unitPrice: fc.integer({ min: 1, max: 20_000 }),
          discountPercent: fc.constantFrom(0, 0, 10, 33),
          name: fc
            .string({
              minLength: 1,
              maxLength: 24,
              unit: fc.constantFrom('a', 'Ö', '€', '&', '<', '>', '"', "'", ' ', '🥐'),
            })
            .filter((name) => name.trim() !== ''),
          gtin: fc.boolean(),
        }),
        { minLength: 1, maxLength: 4 },
      ),
      allowancePercent: fc.constantFrom(0, 0, 5, 100),
      charge: fc.option(fc.integer({ min: 1, max: 500 }), { nil: undefined }),
      tip: fc.option(fc.integer({ min: 1, max: 1000 }), { nil: undefined }),
      refund: fc.boolean(),
      index: fc.integer({ min: 0, max: 9999 }),
    })
    .map(({ lines, allowancePercent, charge, tip, refund, index }) => {
      const items = lines.map((line, at) => {
        const quantity = line.grams !== undefined ? line.grams / 1000 : line.units;
        const gross =
          line.grams !== undefined
            ? Math.floor((line.grams * line.unitPrice + 500) / 1000)
            : line.units * line.unitPrice;
        const discount = Math.floor((gross * line.discountPercent) / 100);
        return {
          lineItemId: `d0000000-0000-4000-8000-${String(at).padStart(12, '0')}`,
          name: line.name,
          ...(line.gtin ? { gtin: '4006381333931' } : {}),
          quantity,
          ...(line.grams !== undefined ? { unitCode: 'KGM' } : {}),
          unitPrice: line.unitPrice,
          totalPrice: gross - discount,
          ...(discount > 0
            ? { discounts: [{ name: 'Offer', type: 'percentage' as const, amount: discount }] }
            : {}),
          taxes: [{ name: 'VAT', category: line.vat.category, rate: line.vat.rate }],
        };
      });
      const first = lines[0]!.vat;
      const firstTaxable = items
        .filter((_, at) => lines[at]!.vat === first)
        .reduce((total, item) => total + item.totalPrice, 0);
      const allowance = Math.floor((firstTaxable * allowancePercent) / 100);
      const receipt: DigitalReceipt12 = {
        version: '1.2',
        receiptId: `e0000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
        ...(refund ? { type: 'refund' as const, relatedReceiptId: oneRate.receiptId } : {}),
        merchant,
        transaction: transaction('f0000000-0000-4000-8000-000000000000'),
        items,
        ...(allowance > 0 ? { allowances: [{ amount: allowance, reason: 'Voucher', ...first }] } : {}),
        ...(charge !== undefined ? { charges: [{ amount: charge, reason: 'Bag <paper>', ...first }] } : {}),
        summary: {
          subtotal: 0,
          totalTax: 0,
          totalDiscount: 0,
          total: 0,
          currency: 'EUR',
          itemCount: items.length,
        },
        createdAt: '2026-11-21T22:15:02Z',
      };
      const taxBreakdown = breakdownOf(receipt);
      const subtotal = items.reduce((total, item) => total + item.totalPrice, 0);
      const totalTax = taxBreakdown.reduce((total, entry) => total + entry.taxAmount, 0);
      const tipAmount = refund ? 0 : (tip ?? 0);
      receipt.summary = {
        subtotal,
        totalTax,
        totalDiscount:
          allowance + items.reduce((total, item) => total + (item.discounts?.[0]?.amount ?? 0), 0),
        ...(tipAmount > 0 ? { tipAmount } : {}),
        total: subtotal - allowance + (charge ?? 0) + totalTax + tipAmount,
        currency: 'EUR',
        itemCount: items.length,
        taxBreakdown,
      };
      return receipt;
    });
