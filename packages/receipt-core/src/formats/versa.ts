/**
 * A receipt in Versa's published receipt schema (https://github.com/versa-protocol/schema), which US
 * spend-management apps read. docs/FORMATS.md maps each field and says what Versa leaves out.
 */
import { lineDiscount, ReceiptFormatError, type DigitalReceipt12 } from './receipt.js';

/** The receipt schema version this export writes. */
export const VERSA_SCHEMA_VERSION = '2.2.0';

const CARD_NETWORKS = ['amex', 'diners', 'discover', 'eftpos_au', 'jcb', 'mastercard', 'unionpay', 'visa'];

export interface VersaTax {
  amount: number;
  rate: number | null;
  name: string;
}

export interface VersaItem {
  description: string;
  amount: number;
  quantity: number | null;
  unit_cost: number | null;
  unit: string | null;
  group: string | null;
  unspsc: null;
  url: null;
  date: null;
  product_image_asset_id: null;
  taxes: VersaTax[];
  adjustments: { adjustment_type: 'discount'; amount: number; name: string | null; rate: null }[];
  metadata: { key: string; value: string }[];
}

export interface VersaReceipt {
  schema_version: string;
  header: {
    currency: string;
    subtotal: number;
    total: number;
    paid: number;
    invoiced_at: number;
    invoice_number: string;
    mcc: null;
    third_party: null;
    customer: null;
    location: {
      name: string;
      address: {
        street_address: string | null;
        city: string | null;
        region: string | null;
        country: string | null;
        postal_code: string | null;
        lat: null;
        lon: null;
        tz: string | null;
      } | null;
      phone: null;
      url: null;
      google_place_id: null;
      image: null;
    };
    invoice_asset_id: null;
    receipt_asset_id: null;
  };
  itemization: {
    general: {
      items: VersaItem[];
      invoice_level_adjustments: {
        adjustment_type: 'discount' | 'fee' | 'tip';
        amount: number;
        name: string | null;
        rate: null;
      }[];
    };
  };
  payments: {
    amount: number;
    paid_at: number;
    payment_type: 'card' | null;
    card_payment: { last_four: string; network: string | null } | null;
    ach_payment: null;
  }[];
  footer: { actions: []; supplemental_text: string | null };
}

const fail = (field: string, reason: string): never => {
  throw new ReceiptFormatError('versa', field, reason);
};

/**
 * The receipt as a Versa receipt. Versa has no credit notes: a refund receipt is a receipt of negative
 * amounts (what went back to the card), its invoice_number its own receiptId, the sale's in its items'
 * metadata. Versa writes tax per line only, so each line's taxes must state their amount
 * (ReceiptFormatError names the first that does not). Discounts are negative adjustments, a tip a positive one.
 */
export function toVersaReceipt(receipt: DigitalReceipt12): VersaReceipt {
  const sign = receipt.type === 'refund' ? -1 : 1;
  const signed = (amount: number) => (amount === 0 ? 0 : sign * amount);
  const { summary, merchant, transaction } = receipt;
  const at = Math.floor(Date.parse(transaction.datetime) / 1000);
  if (!Number.isFinite(at)) fail('transaction.datetime', 'is not a date');
  const address = merchant.address;
  const items: VersaItem[] = receipt.items.map((item, index) => {
    const discount = lineDiscount('versa', item, index);
    return {
      description: item.name,
      // Versa's line amount is before the line's adjustments.
      amount: signed(item.totalPrice + discount),
      quantity: item.quantity,
      unit_cost: signed(item.unitPrice),
      unit: item.unitCode ?? null,
      group: item.category ?? null,
      unspsc: null,
      url: null,
      date: null,
      product_image_asset_id: null,
      taxes: (item.taxes ?? []).map((tax, at) => ({
        amount: signed(tax.amount ?? fail(`items[${index}].taxes[${at}].amount`, 'is missing')),
        rate: tax.rate ?? null,
        name: tax.name ?? (tax.category !== undefined ? `VAT ${tax.category}` : 'Tax'),
      })),
      adjustments:
        discount === 0
          ? []
          : (item.discounts ?? []).map((entry) => ({
              adjustment_type: 'discount' as const,
              amount: -signed(entry.amount ?? 0),
              name: entry.name ?? null,
              rate: null,
            })),
      metadata: [
        ...(item.sku ? [{ key: 'SKU', value: item.sku }] : []),
        ...(item.gtin ? [{ key: 'GTIN', value: item.gtin }] : []),
        ...(receipt.relatedReceiptId ? [{ key: 'Refund of receipt', value: receipt.relatedReceiptId }] : []),
      ],
    };
  });
  const adjustments = [
    ...(receipt.allowances ?? []).map((allowance) => ({
      adjustment_type: 'discount' as const,
      amount: -signed(allowance.amount),
      name: allowance.reason,
      rate: null,
    })),
    ...(receipt.charges ?? []).map((charge) => ({
      adjustment_type: 'fee' as const,
      amount: signed(charge.amount),
      name: charge.reason,
      rate: null,
    })),
    ...(summary.tipAmount
      ? [{ adjustment_type: 'tip' as const, amount: signed(summary.tipAmount), name: 'Tip', rate: null }]
      : []),
  ];
  const card = transaction.cardDetails;
  return {
    schema_version: VERSA_SCHEMA_VERSION,
    header: {
      currency: summary.currency.toLowerCase(),
      // The lines after their own discounts, before tax and invoice-level adjustments.
      subtotal: signed(summary.subtotal),
      total: signed(summary.total),
      paid: signed(summary.total),
      invoiced_at: at,
      invoice_number: receipt.receiptId,
      mcc: null,
      third_party: null,
      customer: null,
      location: {
        name: merchant.name,
        address: address
          ? {
              street_address: address.street ?? null,
              city: address.city ?? null,
              region: address.state && /^[a-zA-Z0-9]{1,3}$/.test(address.state) ? address.state : null,
              country: address.country ?? null,
              postal_code: address.postalCode ?? null,
              lat: null,
              lon: null,
              tz: transaction.timezone ?? null,
            }
          : null,
        phone: null,
        url: null,
        google_place_id: null,
        image: null,
      },
      invoice_asset_id: null,
      receipt_asset_id: null,
    },
    itemization: { general: { items, invoice_level_adjustments: adjustments } },
    payments: [
      {
        amount: signed(summary.total),
        paid_at: at,
        payment_type: transaction.paymentMethod === 'card' ? 'card' : null,
        card_payment:
          transaction.paymentMethod === 'card' && card?.last4
            ? {
                last_four: card.last4,
                network: card.brand && CARD_NETWORKS.includes(card.brand) ? card.brand : null,
              }
            : null,
        ach_payment: null,
      },
    ],
    footer: { actions: [], supplemental_text: receipt.returnPolicy ?? receipt.notes ?? null },
  };
}
