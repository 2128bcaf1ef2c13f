/**
 * The one amount-consistency rule (docs/API.md): the lines add up to the subtotal, and the subtotal
 * plus tax is the total. Encrypt (both forms), payment creation and the Square adapter's order all
 * check it here, each naming the fields in its own vocabulary.
 */
import { lineGross } from '@receipt-service/receipt-core';

export interface Amounts {
  /** Line totals in minor units; an empty list skips the subtotal check (mock items come later). */
  lines: readonly { totalPrice: number }[];
  subtotal: number;
  /** Omitted where the form has no tax-inclusive total to check. */
  tax?: number;
  total?: number;
  /** Document-level allowances and charges (DigitalReceipt 1.2), added up: the total less and plus them. */
  allowances?: number;
  charges?: number;
}

export interface AmountProblem {
  /** Which amount is wrong, and what it would have to be. */
  amount: 'subtotal' | 'total';
  expected: number;
}

export const sumOfLines = (lines: Amounts['lines']): number =>
  lines.reduce((total, line) => total + line.totalPrice, 0);

const totalOf = (amounts: Amounts): number =>
  amounts.subtotal - (amounts.allowances ?? 0) + (amounts.charges ?? 0) + (amounts.tax ?? 0);

export function amountProblems(amounts: Amounts): AmountProblem[] {
  const problems: AmountProblem[] = [];
  if (amounts.lines.length > 0 && sumOfLines(amounts.lines) !== amounts.subtotal)
    problems.push({ amount: 'subtotal', expected: sumOfLines(amounts.lines) });
  if (amounts.tax !== undefined && amounts.total !== undefined && totalOf(amounts) !== amounts.total)
    problems.push({ amount: 'total', expected: totalOf(amounts) });
  return problems;
}

export interface LineAmounts {
  quantity: number;
  unitPrice: number;
  totalPrice: number;
  discounts?: readonly { amount?: number | undefined }[] | undefined;
}

/**
 * What a line's totalPrice must be: quantity × unitPrice, rounded half away from zero to the minor
 * unit (fractional quantities: 1.5 kg at 333 is 500), less its discounts. Undefined when the line
 * does not say enough to check: a discount given only as a percentage has no amount to subtract.
 */
export function expectedLineTotal(line: LineAmounts): number | undefined {
  const discounts = line.discounts ?? [];
  if (discounts.some((discount) => discount.amount === undefined)) return undefined;
  return (
    lineGross(line.quantity, line.unitPrice) -
    discounts.reduce((sum, discount) => sum + (discount.amount ?? 0), 0)
  );
}
