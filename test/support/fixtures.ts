import { createHash, randomUUID } from 'node:crypto';
import type { DigitalReceipt } from '../../lib/receipts/schemas.js';

export const hashPan = (pan: string): string => createHash('sha256').update(pan).digest('hex');

/** A random, valid-looking card number's hash, unique per call. */
export const newHashedPan = (): string => hashPan(`4111${Math.floor(Math.random() * 1e12)}${randomUUID()}`);

/** A full DigitalReceipt with every field of the spec's tables filled in. */
export function sampleReceipt(overrides: Partial<DigitalReceipt> = {}): DigitalReceipt {
  return {
    version: '1.0',
    receiptId: randomUUID(),
    merchant: {
      merchantId: randomUUID(),
      name: 'Corner Coffee Roasters',
      address: {
        street: '12 Market St',
        city: 'San Francisco',
        state: 'CA',
        postalCode: '94105',
        country: 'US',
      },
      taxId: 'US-94-1234567',
      logoUrl: 'https://example.com/logo.png',
      contactPhone: '+1-415-555-0100',
      contactEmail: 'receipts@example.com',
    },
    transaction: {
      transactionId: randomUUID(),
      datetime: '2026-11-21T09:15:00Z',
      timezone: 'America/Los_Angeles',
      paymentMethod: 'card',
      cardDetails: { last4: '4242', brand: 'visa', expiryMonth: 12, expiryYear: 2029 },
      authorizationCode: 'A1B2C3',
    },
    items: [
      {
        lineItemId: randomUUID(),
        sku: 'FW-12',
        name: 'Flat white',
        description: '12 oz, oat milk',
        quantity: 2,
        unitPrice: 450,
        totalPrice: 900,
        category: 'Beverages',
        discounts: [{ name: 'Loyalty', type: 'percentage', value: 0, amount: 0 }],
        taxes: [{ name: 'Sales tax', rate: 0.08625, amount: 78 }],
      },
      {
        lineItemId: randomUUID(),
        sku: null,
        name: 'Almond croissant',
        description: null,
        quantity: 1,
        unitPrice: 525,
        totalPrice: 525,
        category: 'Bakery',
        taxes: [{ name: 'Sales tax', rate: 0.08625, amount: 45 }],
      },
    ],
    summary: {
      subtotal: 1425,
      totalTax: 123,
      totalDiscount: 0,
      tipAmount: 200,
      total: 1748,
      currency: 'USD',
      itemCount: 3,
    },
    notes: 'Thank you!',
    returnPolicy: 'Returns within 30 days with receipt.',
    loyaltyInfo: { programName: 'Bean Club', pointsEarned: 17, pointsBalance: 342, memberNumber: 'BC-0042' },
    metadata: { register: 'POS-2', cashier: 'Sam' },
    createdAt: '2026-11-21T09:15:05Z',
    ...overrides,
  };
}

/** The flattened-form fields for endpoint 3 and the flattened encrypt form. */
export type FlattenedFixture = Record<string, unknown> & {
  receiptId: string;
  merchantId: string;
  merchantName: string;
  transactionId: string;
  totalAmount: number;
};

export function flattenedReceipt(overrides: Record<string, unknown> = {}): FlattenedFixture {
  return {
    version: '1.0',
    receiptId: randomUUID(),
    merchantId: randomUUID(),
    merchantName: 'Corner Coffee Roasters',
    merchantStreet: '12 Market St',
    merchantCity: 'San Francisco',
    merchantState: 'CA',
    merchantPostalCode: '94105',
    merchantCountry: 'US',
    merchantTaxId: 'US-94-1234567',
    merchantContactEmail: 'receipts@example.com',
    transactionId: randomUUID(),
    transactionDate: '2026-11-21T09:15:00Z',
    transactionTimezone: 'America/Los_Angeles',
    paymentMethod: 'card',
    cardLast4: '4242',
    cardBrand: 'visa',
    currency: 'USD',
    subtotal: 1425,
    taxAmount: 123,
    totalAmount: 1548,
    items: [
      {
        lineItemId: randomUUID(),
        name: 'Flat white',
        quantity: 2,
        unitPrice: 450,
        totalPrice: 900,
        category: 'Beverages',
        taxes: [{ name: 'Sales tax', rate: 0.08625, amount: 78 }],
      },
      {
        lineItemId: randomUUID(),
        name: 'Almond croissant',
        quantity: 1,
        unitPrice: 525,
        totalPrice: 525,
        category: 'Bakery',
      },
    ],
    ...overrides,
  } as FlattenedFixture;
}

/**
 * What payments/{gateway}/create needs beside the receipt: gateway_a (Stripe) the amount to charge,
 * gateway_b (Square) a card nonce, here the local sandbox's test nonce.
 */
export const gatewayFields = (
  gateway: 'gateway_a' | 'gateway_b',
  body: Pick<FlattenedFixture, 'totalAmount'>,
): { amount: number } | { cardNonce: string } =>
  gateway === 'gateway_a' ? { amount: body.totalAmount } : { cardNonce: 'cnon:card-nonce-ok' };

/**
 * A flattened DigitalReceipt 1.2 request with every field 1.2 adds: a Finnish café's sale (EUR) at two
 * VAT rates, a weighed line, a GTIN, an allowance and a charge at 25.5 %, the breakdown DECISIONS'
 * rule gives (14 %: 2296 → 321; 25.5 %: 1990 − 200 + 50 = 1840 → 469), a receipt code and fiscal data.
 */
export function flattenedReceipt12(overrides: Record<string, unknown> = {}): FlattenedFixture {
  return flattenedReceipt({
    version: '1.2',
    merchantName: 'Corner Café',
    merchantStreet: 'Mannerheimintie 1',
    merchantCity: 'Helsinki',
    merchantState: undefined,
    merchantPostalCode: '00100',
    merchantCountry: 'FI',
    merchantTaxId: undefined,
    merchantLegalName: 'Kahvila Kulma Oy',
    merchantVatId: 'FI12345671',
    merchantEndpoint: { scheme: '0088', id: '6412345000012' },
    transactionTimezone: 'Europe/Helsinki',
    currency: 'EUR',
    subtotal: 4286,
    taxAmount: 790,
    totalAmount: 4926,
    items: [
      {
        lineItemId: randomUUID(),
        name: 'Oat latte',
        quantity: 2,
        unitPrice: 450,
        totalPrice: 900,
        taxes: [{ name: 'ALV 14 %', category: 'S', rate: 0.14, amount: 126 }],
      },
      {
        lineItemId: randomUUID(),
        name: 'Travel mug',
        quantity: 1,
        unitCode: 'C62',
        gtin: '4006381333931',
        unitPrice: 1990,
        totalPrice: 1990,
        taxes: [{ name: 'ALV 25.5 %', category: 'S', rate: 0.255, amount: 469 }],
      },
      {
        lineItemId: randomUUID(),
        name: 'Gouda, by weight',
        quantity: 0.735,
        unitCode: 'KGM',
        unitPrice: 1899,
        totalPrice: 1396,
        taxes: [{ name: 'ALV 14 %', category: 'S', rate: 0.14, amount: 195 }],
      },
    ],
    allowances: [{ amount: 200, reason: 'Loyalty voucher', category: 'S', rate: 0.255 }],
    charges: [{ amount: 50, reason: 'Paper bag', category: 'S', rate: 0.255 }],
    taxBreakdown: [
      { category: 'S', rate: 0.14, taxableAmount: 2296, taxAmount: 321 },
      { category: 'S', rate: 0.255, taxableAmount: 1840, taxAmount: 469 },
    ],
    receiptCode: { value: 'RC2026112100042', symbology: 'code128' },
    fiscal: { scheme: 'AT-RKSV', data: '_R1-AT1_K1_42_2026-11-21T10:15:00_13,11_0,00_0,00_0,00_0,00_' },
    ...overrides,
  });
}
