/**
 * A receipt as words and formatted amounts, made once and laid out by each renderer (text, HTML,
 * PDF), so the three say the same thing. Everything here is plain strings: escaping and layout
 * belong to the renderers.
 */
import type { components } from '../generated/api.js';
import { SYMBOLOGY_NAMES, type Symbology } from './barcode.js';

type GeneratedReceipt = components['schemas']['DigitalReceipt'];

/**
 * A receipt as openEnvelope returns it: a sale, or a refund (receipt version 1.1: `type: "refund"`,
 * `relatedReceiptId` naming the sale, the refunded lines and totals as positive integers). A receipt
 * without `type` is a sale.
 */
export type Receipt = Omit<GeneratedReceipt, 'type' | 'relatedReceiptId'> & {
  type?: 'sale' | 'refund';
  relatedReceiptId?: string;
};

export interface RenderOptions {
  /** BCP 47 locale for amounts and dates; the device's own by default. */
  locale?: string;
  /** IANA time zone for the transaction time; the receipt's `transaction.timezone`, else the device's. */
  timeZone?: string;
}

export interface Row {
  label: string;
  value: string;
}

export interface ItemView {
  name: string;
  /** Description, SKU, discounts and taxes of the line, one per entry. */
  details: string[];
  quantity: string;
  unitPrice: string;
  amount: string;
}

export interface ReceiptView {
  refund: boolean;
  /** "Receipt" or "Refund". */
  kind: string;
  merchantName: string;
  merchantLines: string[];
  logoUrl: string | undefined;
  /** "Refund of receipt …" on a refund. */
  refundOf: string | undefined;
  details: Row[];
  itemsHeading: string;
  items: ItemView[];
  totals: Row[];
  /** The last of `totals`: what was paid, or refunded. */
  total: Row;
  notes: Row[];
  /** DigitalReceipt 1.2's receipt code (for returns), to show as a barcode with its value beneath. */
  receiptCode: { value: string; symbology: Symbology; label: string } | undefined;
  /** The locale the view was written in (for the HTML lang attribute). */
  locale: string;
}

const PAYMENT_METHODS: Record<string, string> = {
  card: 'Card',
  cash: 'Cash',
  mobile_wallet: 'Mobile wallet',
  bank_transfer: 'Bank transfer',
  other: 'Other',
};
const CARD_BRANDS: Record<string, string> = {
  visa: 'Visa',
  mastercard: 'Mastercard',
  amex: 'American Express',
  discover: 'Discover',
  other: 'Card',
};

const present = (value: unknown): value is string | number =>
  (typeof value === 'string' && value.trim() !== '') || (typeof value === 'number' && Number.isFinite(value));

/**
 * Minor units in the currency's own number of decimals (2 for USD, 0 for JPY, 3 for BHD), as
 * Intl.NumberFormat gives them. `display: 'code'` writes USD instead of $ (for the PDF's fonts).
 */
export function moneyFormatter(
  currency: string,
  locale: string,
  display: 'symbol' | 'code' = 'symbol',
): (minor: number) => string {
  let format: Intl.NumberFormat;
  try {
    format = new Intl.NumberFormat(locale, { style: 'currency', currency, currencyDisplay: display });
  } catch {
    // Not a currency Intl knows the shape of: the amount in two decimals and the code as written.
    const plain = new Intl.NumberFormat(locale, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    return (minor) => `${plain.format(minor / 100)} ${currency}`;
  }
  const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
  return (minor) => format.format(minor / 10 ** digits);
}

function dateFormatter(locale: string, timeZone: string | undefined): (iso: string) => string {
  const options: Intl.DateTimeFormatOptions = { dateStyle: 'medium', timeStyle: 'short' };
  let format: Intl.DateTimeFormat;
  try {
    format = new Intl.DateTimeFormat(locale, { ...options, timeZone });
  } catch {
    // A time zone Intl does not know: the device's.
    format = new Intl.DateTimeFormat(locale, options);
  }
  return (iso) => {
    const at = new Date(iso);
    return Number.isNaN(at.getTime()) ? iso : format.format(at);
  };
}

function address(merchant: Receipt['merchant']): string | undefined {
  const where = merchant.address;
  if (!where) return undefined;
  const region = [where.state, where.postalCode].filter(present).join(' ');
  const parts = [where.street, where.city, region, where.country].filter(present);
  return parts.length > 0 ? parts.join(', ') : undefined;
}

function payment(transaction: Receipt['transaction']): string {
  const method = PAYMENT_METHODS[transaction.paymentMethod] ?? String(transaction.paymentMethod);
  const card = transaction.cardDetails;
  if (transaction.paymentMethod !== 'card' || !card) return method;
  const brand = card.brand ? (CARD_BRANDS[card.brand] ?? 'Card') : 'Card';
  return card.last4 ? `${brand} •••• ${card.last4}` : brand;
}

const NETWORKS: Record<string, string> = {
  ...CARD_BRANDS,
  american_express: 'American Express',
  jcb: 'JCB',
  unionpay: 'UnionPay',
  china_unionpay: 'UnionPay',
  diners: 'Diners Club',
  cartes_bancaires: 'Cartes Bancaires',
  interac: 'Interac',
};

/**
 * The card network's references the service sealed (`cardTransaction`): how the charge appears on the
 * statement first, as that is what a cardholder compares; then the network and its codes. The
 * authorization code the network gave wins over one the merchant typed.
 */
function networkRows(receipt: Receipt): Row[] {
  const network = receipt.cardTransaction;
  const rows: Row[] = [];
  if (present(network?.statementDescriptor))
    rows.push({ label: 'Appears on your statement as', value: network.statementDescriptor });
  if (present(network?.network)) {
    const name = NETWORKS[network.network] ?? network.network.toUpperCase();
    rows.push({
      label: 'Card network',
      value: present(network.last4) ? `${name} •••• ${network.last4}` : name,
    });
  }
  const code = network?.authorizationCode ?? receipt.transaction.authorizationCode;
  if (present(code)) rows.push({ label: 'Authorization', value: code });
  if (present(network?.networkTransactionId))
    rows.push({ label: 'Network transaction', value: network.networkTransactionId });
  if (present(network?.acquirerReferenceNumber))
    rows.push({ label: 'Acquirer reference', value: network.acquirerReferenceNumber });
  return rows;
}

/**
 * The view of a receipt. `display: 'code'` is for renderers whose fonts lack a currency's symbol;
 * `encodable` tells whether a formatted amount can be shown as it is.
 */
export function receiptView(
  receipt: Receipt,
  options: RenderOptions = {},
  encodable: (text: string) => boolean = () => true,
): ReceiptView {
  const locale = new Intl.NumberFormat(options.locale).resolvedOptions().locale;
  const currency = receipt.summary.currency;
  const symbol = moneyFormatter(currency, locale);
  const code = moneyFormatter(currency, locale, 'code');
  const money = (minor: number): string => {
    const shown = symbol(minor);
    return encodable(shown) ? shown : code(minor);
  };
  const refund = receipt.type === 'refund';
  // A refund gives money back: its (positive) amounts are shown as refunded, below zero.
  const signed = (minor: number): string => money(refund ? -minor : minor);
  const quantity = new Intl.NumberFormat(locale, { maximumFractionDigits: 3 });
  const date = dateFormatter(locale, options.timeZone ?? receipt.transaction.timezone);
  const merchant = receipt.merchant;

  const details: Row[] = [
    { label: 'Date', value: date(receipt.transaction.datetime) },
    { label: 'Payment', value: payment(receipt.transaction) },
  ];
  details.push(...networkRows(receipt));
  details.push(
    { label: refund ? 'Refund receipt' : 'Receipt', value: receipt.receiptId },
    { label: 'Transaction', value: receipt.transaction.transactionId },
  );

  const items: ItemView[] = receipt.items.map((item) => {
    const lineDetails: string[] = [];
    if (present(item.description)) lineDetails.push(item.description);
    if (present(item.sku)) lineDetails.push(`SKU ${item.sku}`);
    if (present(item.gtin)) lineDetails.push(`GTIN ${item.gtin}`);
    for (const discount of item.discounts ?? []) {
      // A discount of nothing (a programme that gave 0 on this line) is left out.
      if (!(discount.amount ?? discount.value)) continue;
      const label = present(discount.name) ? discount.name : 'Discount';
      const rate = discount.type === 'percentage' && present(discount.value) ? ` ${discount.value}%` : '';
      const amount = present(discount.amount) ? ` ${signed(-discount.amount)}` : '';
      lineDetails.push(`${label}${rate}${amount}`);
    }
    for (const tax of item.taxes ?? []) {
      const label = present(tax.name) ? tax.name : 'Tax';
      const rate = present(tax.rate) ? ` ${quantity.format(tax.rate * 100)}%` : '';
      const amount = present(tax.amount) ? ` ${signed(tax.amount)}` : '';
      lineDetails.push(`${label}${rate}${amount}`);
    }
    return {
      name: item.name,
      details: lineDetails,
      quantity: quantity.format(item.quantity),
      unitPrice: money(item.unitPrice),
      amount: signed(item.totalPrice),
    };
  });

  const summary = receipt.summary;
  const totals: Row[] = [{ label: 'Subtotal', value: signed(summary.subtotal) }];
  // DigitalReceipt 1.2: document-level allowances and charges, each with its reason.
  for (const allowance of receipt.allowances ?? [])
    totals.push({ label: allowance.reason, value: signed(-allowance.amount) });
  for (const charge of receipt.charges ?? [])
    totals.push({ label: charge.reason, value: signed(charge.amount) });
  // With allowances, totalDiscount is theirs and the lines' own (shown on each line): not said twice.
  if (receipt.allowances === undefined && summary.totalDiscount > 0)
    totals.push({ label: 'Discounts', value: signed(-summary.totalDiscount) });
  // VAT per rate, as EN 16931 and the tax authorities ask: the rate, what it is on, and the tax.
  const breakdown = summary.taxBreakdown ?? [];
  for (const entry of breakdown) {
    totals.push({
      label: `VAT ${entry.category} ${quantity.format(entry.rate * 100)}% on ${money(entry.taxableAmount)}`,
      value: signed(entry.taxAmount),
    });
  }
  totals.push({ label: breakdown.length > 0 ? 'Total VAT' : 'Tax', value: signed(summary.totalTax) });
  if (present(summary.tipAmount) && summary.tipAmount > 0) {
    totals.push({ label: 'Tip', value: signed(summary.tipAmount) });
  }
  const total = { label: refund ? 'Total refunded' : 'Total', value: signed(summary.total) };
  totals.push(total);

  const notes: Row[] = [];
  if (present(receipt.notes)) notes.push({ label: 'Notes', value: receipt.notes });
  if (present(receipt.returnPolicy)) notes.push({ label: 'Return policy', value: receipt.returnPolicy });
  const loyalty = receipt.loyaltyInfo;
  if (loyalty) {
    const parts: string[] = [];
    if (present(loyalty.pointsEarned)) parts.push(`${quantity.format(loyalty.pointsEarned)} points earned`);
    if (present(loyalty.pointsBalance)) parts.push(`balance ${quantity.format(loyalty.pointsBalance)}`);
    if (present(loyalty.memberNumber)) parts.push(`member ${loyalty.memberNumber}`);
    if (parts.length > 0 || present(loyalty.programName)) {
      notes.push({
        label: present(loyalty.programName) ? loyalty.programName : 'Loyalty',
        value: parts.join(', '),
      });
    }
  }

  return {
    refund,
    kind: refund ? 'Refund' : 'Receipt',
    merchantName: merchant.name,
    merchantLines: [
      address(merchant),
      present(merchant.legalName) && merchant.legalName !== merchant.name ? merchant.legalName : undefined,
      present(merchant.vatId) ? `VAT ${merchant.vatId}` : undefined,
      present(merchant.taxId) && merchant.taxId !== merchant.vatId ? `Tax ID ${merchant.taxId}` : undefined,
      merchant.contactPhone,
      merchant.contactEmail,
    ].filter((line): line is string => present(line)),
    logoUrl: merchant.logoUrl,
    refundOf: refund ? `Refund of receipt ${receipt.relatedReceiptId ?? '(not named)'}` : undefined,
    details,
    itemsHeading: refund ? 'Items refunded' : 'Items',
    items,
    totals,
    total,
    notes,
    receiptCode: receipt.receiptCode
      ? { ...receipt.receiptCode, label: `Receipt code (${SYMBOLOGY_NAMES[receipt.receiptCode.symbology]})` }
      : undefined,
    locale,
  };
}
