/**
 * Refund receipts as the service makes them: the refund amount rules and the refund receipt's
 * plaintext, moved here from the service (lib/payments imports them), so a till that signs a refund
 * (`signReceipt(toRefundReceipt(...))`) signs the very receipt the service will seal. Pure and
 * platform-neutral, like digital-receipt.ts. docs/API.md, "Refunds", says the rules in words.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { RECEIPT_VERSION, RECEIPT_VERSION_12, type DigitalReceipt } from './digital-receipt.js';
import { rateKey, taxableAmounts } from './tax-breakdown.js';
import { lineGross } from './line-gross.js';

type LineItem = DigitalReceipt['items'][number];

/** A sale line as a refund sees it: its price, and its share of the sale's tax. */
export interface BasisLine {
  lineItemId: string;
  name: string;
  quantity: number;
  unitPrice: number;
  totalPrice: number;
  /** The line's share of the sale's tax (lineTaxShares). */
  tax: number;
  category?: string | null;
  sku?: string | null;
  /** DigitalReceipt 1.2: the line's VAT entries (category and rate), which its refunds keep. */
  vat?: { name?: string; category: TaxCategory; rate: number }[];
  unitCode?: string;
  gtin?: string;
}

type TaxCategory = NonNullable<NonNullable<LineItem['taxes']>[number]['category']>;

/** One line of a refund: how much of a sale line, and what it gave back. */
export interface RefundedLine {
  lineItemId: string;
  quantity: number;
  /** Minor units of the line's price given back. */
  amount: number;
  /** Minor units of the line's tax given back. */
  tax: number;
}

export interface SaleAmounts {
  lines: BasisLine[];
  subtotal: number;
  totalTax: number;
  /** The amount charged: subtotal + totalTax. */
  total: number;
}

export interface RefundAmounts {
  lines: RefundedLine[];
  subtotal: number;
  tax: number;
  /** subtotal + tax: what the gateway is asked to give back. */
  amount: number;
}

/** What earlier refunds gave back of each line (by lineItemId), and of tax overall. */
export interface Refunded {
  lines: readonly RefundedLine[];
  tax: number;
  amount: number;
}

/** What a refund receipt is made from: the sale's merchant, card and lines with their tax shares. */
export interface RefundBasis extends SaleAmounts {
  /** The sale gave a VAT breakdown (DigitalReceipt 1.2): its refund receipts give theirs. */
  taxBreakdown?: boolean;
  merchant: DigitalReceipt['merchant'];
  transaction: Pick<DigitalReceipt['transaction'], 'paymentMethod' | 'cardDetails' | 'timezone'>;
  currency: string;
}

/** Items of a refund that are not lines of the sale, or ask for more than is left of one. */
export class RefundItemsError extends Error {
  constructor(readonly problems: { field: string; message: string }[]) {
    super(
      `Invalid refund items: ${problems.map((problem) => `${problem.field} ${problem.message}`).join('; ')}`,
    );
    this.name = 'RefundItemsError';
  }
}

const roundHalfUp = (value: number): number => Math.floor(value + 0.5);

/** `total` split over `weights` in proportion, by largest remainder: the parts add up to `total` exactly. */
export function shareByWeight(total: number, weights: readonly number[]): number[] {
  if (weights.length === 0) return [];
  const sum = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((weight) => (sum > 0 ? (total * weight) / sum : total / weights.length));
  const parts = exact.map(Math.floor);
  let left = total - parts.reduce((a, b) => a + b, 0);
  const order = exact
    .map((value, index) => ({ index, remainder: value - Math.floor(value) }))
    .sort((a, b) => b.remainder - a.remainder || a.index - b.index);
  for (const { index } of order) {
    if (left <= 0) break;
    parts[index] = (parts[index] ?? 0) + 1;
    left -= 1;
  }
  return parts;
}

/**
 * Each line's share of the sale's tax: the tax amounts it lists, and of the tax no line lists, a part
 * in proportion to its totalPrice among the lines that list none (all lines, when every line lists
 * some, or when the listed amounts exceed the sale's tax: then the whole tax is shared by totalPrice).
 */
export function lineTaxShares(
  lines: readonly { totalPrice: number; taxes?: readonly { amount?: number | undefined }[] | undefined }[],
  totalTax: number,
): number[] {
  const listed = lines.map((line) =>
    (line.taxes ?? []).some((tax) => tax.amount !== undefined)
      ? (line.taxes ?? []).reduce((sum, tax) => sum + (tax.amount ?? 0), 0)
      : undefined,
  );
  const listedTotal = listed.reduce<number>((sum, amount) => sum + (amount ?? 0), 0);
  if (listedTotal > totalTax || listed.some((amount) => amount !== undefined && amount < 0)) {
    return shareByWeight(
      totalTax,
      lines.map((line) => line.totalPrice),
    );
  }
  const unlisted = lines.map((_, index) => index).filter((index) => listed[index] === undefined);
  const sharers = unlisted.length > 0 ? unlisted : lines.map((_, index) => index);
  const shares = shareByWeight(
    totalTax - listedTotal,
    sharers.map((index) => lines[index]!.totalPrice),
  );
  return lines.map((_, index) => (listed[index] ?? 0) + (shares[sharers.indexOf(index)] ?? 0));
}

const QUANTITY_EPSILON = 1e-9;

/**
 * The lines named by `items`: refunding q of a line's quantity Q gives back totalPrice × q ÷ Q of its
 * price and the same part of its tax share, each rounded half up on the running total for that line.
 * Throws RefundItemsError naming each item that is not a line of the sale, is named twice, or asks
 * for more than is left of its line.
 */
export function itemisedRefund(
  sale: SaleAmounts,
  refunded: Refunded,
  items: readonly { lineItemId: string; quantity: number }[],
): RefundAmounts {
  const problems: { field: string; message: string }[] = [];
  const seen = new Set<string>();
  const lines: RefundedLine[] = [];
  for (const [index, item] of items.entries()) {
    const line = sale.lines.find((candidate) => candidate.lineItemId === item.lineItemId);
    if (!line) {
      problems.push({ field: `items.${index}.lineItemId`, message: 'is not a line of this payment' });
      continue;
    }
    if (seen.has(item.lineItemId)) {
      problems.push({ field: `items.${index}.lineItemId`, message: 'is named twice' });
      continue;
    }
    seen.add(item.lineItemId);
    const before = refunded.lines.filter((done) => done.lineItemId === item.lineItemId);
    const quantityBefore = before.reduce((sum, done) => sum + done.quantity, 0);
    const left = line.quantity - quantityBefore;
    if (item.quantity > left + QUANTITY_EPSILON) {
      problems.push({
        field: `items.${index}.quantity`,
        message: `must be at most what is left of the line (${Math.max(0, left)})`,
      });
      continue;
    }
    const quantityAfter = Math.min(line.quantity, quantityBefore + item.quantity);
    const share = (whole: number) => roundHalfUp((whole * quantityAfter) / line.quantity);
    const amount = share(line.totalPrice) - before.reduce((sum, done) => sum + done.amount, 0);
    const tax = share(line.tax) - before.reduce((sum, done) => sum + done.tax, 0);
    lines.push({ lineItemId: item.lineItemId, quantity: item.quantity, amount, tax });
  }
  if (problems.length > 0) throw new RefundItemsError(problems);
  const subtotal = lines.reduce((sum, line) => sum + line.amount, 0);
  const tax = lines.reduce((sum, line) => sum + line.tax, 0);
  return { lines, subtotal, tax, amount: subtotal + tax };
}

/**
 * A refund of `amount` with no lines named: tax in the sale's proportion (totalTax ÷ total), rounded
 * half up and never more than the tax not yet refunded; the refund that empties the payment carries
 * all the tax that is left.
 */
export function amountRefund(sale: SaleAmounts, refunded: Refunded, amount: number): RefundAmounts {
  const taxLeft = Math.max(0, sale.totalTax - refunded.tax);
  const empties = amount >= sale.total - refunded.amount;
  const proportional = sale.total > 0 ? roundHalfUp((amount * sale.totalTax) / sale.total) : 0;
  const tax = Math.min(amount, empties ? taxLeft : Math.min(taxLeft, proportional));
  return { lines: [], subtotal: amount - tax, tax, amount };
}

/** A line's VAT entries when each names its category and rate (DigitalReceipt 1.2), else undefined. */
function vatOf(item: LineItem): BasisLine['vat'] {
  const taxes = item.taxes ?? [];
  if (taxes.length === 0) return undefined;
  const entries: NonNullable<BasisLine['vat']> = [];
  for (const tax of taxes) {
    if (tax.category === undefined || tax.rate === undefined) return undefined;
    entries.push({
      ...(tax.name !== undefined ? { name: tax.name } : {}),
      category: tax.category,
      rate: tax.rate,
    });
  }
  return entries;
}

/**
 * Each line's price net of the sale's document-level allowances and charges (DigitalReceipt 1.2):
 * each one spread over the lines of its VAT category and rate (all lines when none is) by totalPrice,
 * so the lines add up to what the card paid before tax and a refund gives back no more than that.
 */
function netLineTotals(receipt: DigitalReceipt): number[] {
  const net = receipt.items.map((item) => item.totalPrice);
  const spread = (adjustments: DigitalReceipt['allowances'], sign: number) => {
    for (const adjustment of adjustments ?? []) {
      const shares = spreadOverRate(
        receipt,
        adjustment,
        adjustment.amount,
        (index) => receipt.items[index]!.totalPrice,
      );
      shares.forEach((share, index) => {
        net[index] = (net[index] ?? 0) + sign * share;
      });
    }
  };
  spread(receipt.allowances, -1);
  spread(receipt.charges, 1);
  return net;
}

/**
 * `amount` spread by `weight` over the lines taxed at `vat`'s category and rate (over all lines when
 * none is), by largest remainder: a part per line, zero for the others.
 */
function spreadOverRate(
  receipt: DigitalReceipt,
  vat: { category: string; rate: number },
  amount: number,
  weight: (index: number) => number,
): number[] {
  const key = rateKey(vat.category, vat.rate);
  const all = receipt.items.map((_, index) => index);
  const members = all.filter((index) =>
    (receipt.items[index]!.taxes ?? []).some(
      (tax) =>
        tax.category !== undefined && tax.rate !== undefined && rateKey(tax.category, tax.rate) === key,
    ),
  );
  const sharers = members.length > 0 ? members : all;
  const shares = shareByWeight(amount, sharers.map(weight));
  const parts = all.map(() => 0);
  sharers.forEach((index, at) => {
    parts[index] = shares[at] ?? 0;
  });
  return parts;
}

/**
 * Each line's share of the tax of a sale with a VAT breakdown: each entry's taxAmount spread over the
 * lines of its category and rate by their net price; a line under two rates gets a share of each.
 */
function breakdownTaxShares(
  receipt: DigitalReceipt,
  net: readonly number[],
  breakdown: NonNullable<DigitalReceipt['summary']['taxBreakdown']>,
): number[] {
  const taxes = receipt.items.map(() => 0);
  for (const entry of breakdown) {
    const shares = spreadOverRate(receipt, entry, entry.taxAmount, (index) => Math.max(0, net[index] ?? 0));
    shares.forEach((share, index) => {
      taxes[index] = (taxes[index] ?? 0) + share;
    });
  }
  return taxes;
}

/** What a refund is made from, as the service keeps it for a payment: the sale, less its content's extras. */
export function refundBasisOf(receipt: DigitalReceipt): RefundBasis {
  const adjusted = receipt.allowances !== undefined || receipt.charges !== undefined;
  const net = adjusted ? netLineTotals(receipt) : receipt.items.map((item) => item.totalPrice);
  const breakdown = receipt.summary.taxBreakdown;
  const taxes =
    breakdown !== undefined
      ? breakdownTaxShares(receipt, net, breakdown)
      : lineTaxShares(
          receipt.items.map((item, index) => ({ ...item, totalPrice: net[index] ?? item.totalPrice })),
          receipt.summary.totalTax,
        );
  const lines: BasisLine[] = receipt.items.map((item, index) => {
    const vat = vatOf(item);
    return {
      lineItemId: item.lineItemId,
      name: item.name,
      quantity: item.quantity,
      unitPrice: item.unitPrice,
      totalPrice: net[index] ?? item.totalPrice,
      tax: taxes[index] ?? 0,
      ...(item.category !== undefined ? { category: item.category } : {}),
      ...(item.sku !== undefined ? { sku: item.sku } : {}),
      ...(vat !== undefined ? { vat } : {}),
      ...(item.unitCode !== undefined ? { unitCode: item.unitCode } : {}),
      ...(item.gtin !== undefined ? { gtin: item.gtin } : {}),
    };
  });
  const subtotal = lines.reduce((sum, line) => sum + line.totalPrice, 0);
  const { paymentMethod, cardDetails, timezone } = receipt.transaction;
  return {
    merchant: receipt.merchant,
    transaction: {
      paymentMethod,
      ...(cardDetails ? { cardDetails } : {}),
      ...(timezone !== undefined ? { timezone } : {}),
    },
    currency: receipt.summary.currency,
    lines,
    ...(breakdown !== undefined ? { taxBreakdown: true } : {}),
    // Net of allowances and charges, as the card paid (the sale's subtotal when it has none).
    subtotal: adjusted ? subtotal : receipt.summary.subtotal,
    totalTax: receipt.summary.totalTax,
    total: (adjusted ? subtotal : receipt.summary.subtotal) + receipt.summary.totalTax,
  };
}

/**
 * A UUID (RFC 9562 version 8) derived from `parts`: the same parts always give the same id, so a
 * refund receipt keeps its receiptId however often its refund is recorded or its event delivered.
 */
export function derivedUuid(...parts: string[]): string {
  const bytes = sha256(utf8ToBytes(parts.join('\u0000'))).slice(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytesToHex(bytes);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The receiptId of the refund receipt of a signed refund request: known to the till before it asks. */
export const signedRefundReceiptId = (saleReceiptId: string, refundId: string): string =>
  derivedUuid('signed-refund-receipt', saleReceiptId, refundId);

export interface RefundReceiptInput {
  receiptId: string;
  saleReceiptId: string;
  basis: RefundBasis;
  refundId: string;
  lines: readonly RefundedLine[];
  subtotal: number;
  tax: number;
  amount: number;
  reason?: string | undefined;
  /** The refund receipt's time: its transaction's and its createdAt. */
  createdAt: Date | string;
}

/** A refunded line as the cardholder reads it: the sale line, with the part of it given back. */
function refundedItem(basis: RefundBasis, line: RefundedLine): LineItem {
  const sold = basis.lines.find((candidate) => candidate.lineItemId === line.lineItemId);
  if (!sold) throw new Error('a refunded line is not a line of the sale');
  // The receipt schema checks totalPrice against quantity × unitPrice less discounts: the part of the
  // line's discounts (or rounding) this refund carries is said as one.
  const difference = lineGross(line.quantity, sold.unitPrice) - line.amount;
  return {
    lineItemId: sold.lineItemId,
    name: sold.name,
    quantity: line.quantity,
    unitPrice: sold.unitPrice,
    totalPrice: line.amount,
    ...(sold.sku !== undefined ? { sku: sold.sku } : {}),
    ...(sold.category !== undefined ? { category: sold.category } : {}),
    ...(difference !== 0
      ? { discounts: [{ name: "Share of the line's discounts", type: 'fixed' as const, amount: difference }] }
      : {}),
    ...(sold.unitCode !== undefined ? { unitCode: sold.unitCode } : {}),
    ...(sold.gtin !== undefined ? { gtin: sold.gtin } : {}),
    ...(sold.vat !== undefined
      ? { taxes: refundedVat(sold.vat, line.tax) }
      : line.tax > 0
        ? { taxes: [{ name: 'Tax', amount: line.tax }] }
        : {}),
  };
}

/** A refunded line keeps its VAT entries (category and rate); the tax it gives back is split over them by rate. */
function refundedVat(vat: NonNullable<BasisLine['vat']>, tax: number): NonNullable<LineItem['taxes']> {
  const amounts = shareByWeight(
    tax,
    vat.map((entry) => entry.rate),
  );
  return vat.map((entry, index) => ({ ...entry, amount: amounts[index] ?? 0 }));
}

/**
 * A refund receipt's VAT breakdown, recomputed from its lines: per category and rate, the prices and
 * the tax given back (which may differ from a fresh rounding by the sale's own rounding).
 */
function refundBreakdown(items: readonly LineItem[]): DigitalReceipt['summary']['taxBreakdown'] {
  const groups = taxableAmounts({ lines: items });
  const taxes = new Map<string, number>();
  for (const item of items) {
    for (const tax of item.taxes ?? []) {
      if (tax.category === undefined || tax.rate === undefined) return undefined;
      const key = rateKey(tax.category, tax.rate);
      taxes.set(key, (taxes.get(key) ?? 0) + (tax.amount ?? 0));
    }
  }
  return [...groups].map(([key, group]) => ({
    category: group.category as TaxCategory,
    rate: group.rate,
    taxableAmount: group.taxableAmount,
    taxAmount: taxes.get(key) ?? 0,
  }));
}

/** The refund receipt's plaintext: a DigitalReceipt of type "refund" naming its sale, amounts positive. */
export function refundReceiptOf(input: RefundReceiptInput): DigitalReceipt {
  const { basis } = input;
  const at = typeof input.createdAt === 'string' ? input.createdAt : input.createdAt.toISOString();
  const items = input.lines.map((line) => refundedItem(basis, line));
  const taxBreakdown = basis.taxBreakdown === true && items.length > 0 ? refundBreakdown(items) : undefined;
  const v12 = basis.taxBreakdown === true || basis.lines.some((line) => line.vat !== undefined);
  return {
    version: v12 ? RECEIPT_VERSION_12 : RECEIPT_VERSION,
    receiptId: input.receiptId,
    type: 'refund',
    relatedReceiptId: input.saleReceiptId,
    merchant: basis.merchant,
    transaction: {
      transactionId: derivedUuid('refund-transaction', input.receiptId),
      datetime: at,
      ...basis.transaction,
    },
    items,
    summary: {
      subtotal: input.subtotal,
      totalTax: input.tax,
      totalDiscount: 0,
      total: input.amount,
      currency: basis.currency,
      itemCount: items.length,
      ...(taxBreakdown !== undefined && taxBreakdown.length > 0 ? { taxBreakdown } : {}),
    },
    ...(input.reason ? { notes: input.reason } : {}),
    metadata: { refundId: input.refundId },
    createdAt: at,
  };
}

/** What earlier refund receipts of the sale gave back: their lines, tax and amounts. */
export function refundedBy(receipts: readonly DigitalReceipt[]): Refunded {
  const lines = receipts.flatMap((receipt) =>
    receipt.items.map((item) => ({
      lineItemId: item.lineItemId,
      quantity: item.quantity,
      amount: item.totalPrice,
      tax: (item.taxes ?? []).reduce((sum, tax) => sum + (tax.amount ?? 0), 0),
    })),
  );
  return {
    lines,
    tax: receipts.reduce((sum, receipt) => sum + receipt.summary.totalTax, 0),
    amount: receipts.reduce((sum, receipt) => sum + receipt.summary.total, 0),
  };
}

/** A refund request as POST /payments/{gateway}/{paymentId}/refunds takes it, with the time a signed one needs. */
export interface RefundRequest {
  refundId: string;
  amount?: number;
  reason?: string;
  items?: readonly { lineItemId: string; quantity: number }[];
  /** The refund receipt's time (ISO 8601): required with Receipt-Signature. */
  refundDate: string;
}

/**
 * The refund receipt the service will seal for a signed refund request, for a till to sign
 * (`signReceipt`): made from the sale receipt, the request and the sale's refund receipts so far
 * (those the service made for refunds that went through or are under way: they decide what is left of
 * each line and of the tax). The amount rules are the service's own.
 */
export function toRefundReceipt(
  sale: DigitalReceipt,
  request: RefundRequest,
  refundedBefore: readonly DigitalReceipt[] = [],
): DigitalReceipt {
  const basis = refundBasisOf(sale);
  const refunded = refundedBy(refundedBefore);
  const amounts = request.items
    ? itemisedRefund(basis, refunded, request.items)
    : amountRefund(basis, refunded, request.amount ?? 0);
  return refundReceiptOf({
    receiptId: signedRefundReceiptId(sale.receiptId, request.refundId),
    saleReceiptId: sale.receiptId,
    basis,
    refundId: request.refundId,
    ...amounts,
    reason: request.reason,
    createdAt: request.refundDate,
  });
}
