import type { BasisLine, RefundedLine } from '../db/payments.js';
import { InvalidRequestError, type FieldProblem } from '../kernel/errors.js';

/**
 * How much a refund gives back, from the sale's lines (docs/API.md, "Refunds: the amount rule").
 *
 * - Each sale line carries a share of the sale's tax: the sum of the tax amounts it lists, and of
 *   the tax no line lists, a part in proportion to its totalPrice among the lines that list none
 *   (all lines, when every line lists some, or when the listed amounts exceed the sale's tax: then
 *   the whole tax is shared by totalPrice). Shares are rounded by largest remainder, so they add up
 *   to the sale's totalTax exactly.
 * - Refunding q of a line's quantity Q gives back totalPrice × q ÷ Q of its price and the same part
 *   of its tax share, each rounded half up on the running total for that line: the line's refunds
 *   together never exceed it, and refunding all of it, in any number of steps, gives back exactly
 *   its totalPrice and tax share.
 * - A refund of an amount (no lines named) carries tax in the sale's proportion (totalTax ÷ total),
 *   rounded half up and never more than the tax not yet refunded; the refund that empties the
 *   payment carries all the tax that is left.
 */

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

/** Each line's share of the sale's tax (the first rule above). */
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

/** What earlier refunds gave back of each line (by lineItemId), and of tax overall. */
export interface Refunded {
  lines: readonly RefundedLine[];
  tax: number;
  amount: number;
}

const QUANTITY_EPSILON = 1e-9;

/**
 * The lines named by `items`, priced by the rule above; 400 naming each item that is not a line of
 * the sale, is named twice, or asks for more than is left of its line.
 */
export function itemisedRefund(
  sale: SaleAmounts,
  refunded: Refunded,
  items: readonly { lineItemId: string; quantity: number }[],
): RefundAmounts {
  const problems: FieldProblem[] = [];
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
  if (problems.length > 0) throw new InvalidRequestError('Invalid refund items', problems);
  const subtotal = lines.reduce((sum, line) => sum + line.amount, 0);
  const tax = lines.reduce((sum, line) => sum + line.tax, 0);
  return { lines, subtotal, tax, amount: subtotal + tax };
}

/** A refund of `amount` with no lines named: tax in the sale's proportion (the last rule above). */
export function amountRefund(sale: SaleAmounts, refunded: Refunded, amount: number): RefundAmounts {
  const taxLeft = Math.max(0, sale.totalTax - refunded.tax);
  const empties = amount >= sale.total - refunded.amount;
  const proportional = sale.total > 0 ? roundHalfUp((amount * sale.totalTax) / sale.total) : 0;
  const tax = Math.min(amount, empties ? taxLeft : Math.min(taxLeft, proportional));
  return { lines: [], subtotal: amount - tax, tax, amount };
}
