/**
 * The VAT breakdown rule of DigitalReceipt 1.2 (DECISIONS, round 4, "Standard formats"), one copy for
 * the service (which refuses a receipt whose breakdown disagrees with its lines) and a device (which
 * can check a receipt it opens). Per tax category and rate, the taxable amount is the lines'
 * totalPrice less the allowances plus the charges of that category and rate, and the tax is that
 * amount times the rate, rounded half up, within one minor unit; the breakdown's tax adds up to the
 * receipt's. Pure and platform-neutral.
 */

export interface BreakdownLine {
  totalPrice: number;
  taxes?: readonly { category?: string | undefined; rate?: number | undefined }[] | undefined | null;
}

export interface BreakdownAdjustment {
  amount: number;
  category: string;
  rate: number;
}

export interface BreakdownEntry {
  category: string;
  rate: number;
  taxableAmount: number;
  taxAmount: number;
}

/** What the rule is checked on: field names are the caller's (the flattened form has no `summary`). */
export interface BreakdownInput {
  lines: readonly BreakdownLine[];
  allowances?: readonly BreakdownAdjustment[] | undefined;
  charges?: readonly BreakdownAdjustment[] | undefined;
  breakdown: readonly BreakdownEntry[];
  totalTax: number;
}

/** A part of the breakdown that disagrees: `path` is relative to the receipt (or the flattened body). */
export interface BreakdownProblem {
  path: (string | number)[];
  message: string;
  expected?: number;
}

/** Rates are decimal fractions: 0.24 and 0.24000000000000002 are one rate. */
export const rateKey = (category: string, rate: number): string => `${category}:${Number(rate.toFixed(9))}`;

/** Round half up (away from zero for the positive amounts a breakdown holds) to the minor unit. */
export const taxOf = (taxableAmount: number, rate: number): number =>
  Math.sign(taxableAmount) * Math.floor(Math.abs(taxableAmount) * Number(rate.toFixed(9)) + 0.5 + 1e-9);

/**
 * The taxable amount per category and rate the lines, allowances and charges give, in the order each
 * group first appears (lines, then allowances, then charges).
 */
export function taxableAmounts(
  input: Pick<BreakdownInput, 'lines' | 'allowances' | 'charges'>,
): Map<string, { category: string; rate: number; taxableAmount: number }> {
  const groups = new Map<string, { category: string; rate: number; taxableAmount: number }>();
  const add = (category: string, rate: number, amount: number) => {
    const key = rateKey(category, rate);
    const group = groups.get(key) ?? { category, rate, taxableAmount: 0 };
    group.taxableAmount += amount;
    groups.set(key, group);
  };
  for (const line of input.lines) {
    for (const tax of line.taxes ?? []) {
      if (tax.category !== undefined && tax.rate !== undefined) add(tax.category, tax.rate, line.totalPrice);
    }
  }
  for (const allowance of input.allowances ?? []) add(allowance.category, allowance.rate, -allowance.amount);
  for (const charge of input.charges ?? []) add(charge.category, charge.rate, charge.amount);
  return groups;
}

/** The breakdown a receipt's lines, allowances and charges call for, each tax rounded half up. */
export function expectedTaxBreakdown(
  input: Pick<BreakdownInput, 'lines' | 'allowances' | 'charges'>,
): BreakdownEntry[] {
  return [...taxableAmounts(input).values()].map((group) => ({
    ...group,
    taxAmount: taxOf(group.taxableAmount, group.rate),
  }));
}

/**
 * Where a stated breakdown disagrees with the lines: each entry's taxable amount exactly, its tax
 * within one minor unit of the rounded product, no category and rate twice or missing, every line tax
 * with a category and rate, and the whole adding up to the receipt's tax. Paths are relative to
 * `at` for the breakdown, `linesAt` for the lines and `totalTaxAt` for the receipt's tax.
 */
export function taxBreakdownProblems(
  input: BreakdownInput,
  at: (string | number)[],
  linesAt: (string | number)[],
  totalTaxAt: (string | number)[],
): BreakdownProblem[] {
  const problems: BreakdownProblem[] = [];
  input.lines.forEach((line, index) => {
    (line.taxes ?? []).forEach((tax, taxIndex) => {
      for (const part of ['category', 'rate'] as const) {
        if (tax[part] === undefined) {
          problems.push({
            path: [...linesAt, index, 'taxes', taxIndex, part],
            message: 'is required when the receipt gives a tax breakdown',
          });
        }
      }
    });
  });
  const groups = taxableAmounts(input);
  const seen = new Set<string>();
  input.breakdown.forEach((entry, index) => {
    const key = rateKey(entry.category, entry.rate);
    if (seen.has(key)) {
      problems.push({
        path: [...at, index],
        message: `repeats category ${entry.category} at rate ${entry.rate}: one entry per category and rate`,
      });
      return;
    }
    seen.add(key);
    const taxable = groups.get(key)?.taxableAmount ?? 0;
    if (entry.taxableAmount !== taxable) {
      problems.push({
        path: [...at, index, 'taxableAmount'],
        message: `must be ${taxable}: the lines' totalPrice less allowances plus charges of category ${entry.category} at rate ${entry.rate}`,
        expected: taxable,
      });
    }
    const tax = taxOf(taxable, entry.rate);
    if (Math.abs(entry.taxAmount - tax) > 1) {
      problems.push({
        path: [...at, index, 'taxAmount'],
        message: `must be ${tax} (within one minor unit): ${taxable} × ${entry.rate}, rounded half up`,
        expected: tax,
      });
    }
  });
  for (const [key, group] of groups) {
    if (!seen.has(key)) {
      problems.push({
        path: at,
        message: `has no entry for category ${group.category} at rate ${group.rate} (taxableAmount ${group.taxableAmount}, taxAmount ${taxOf(group.taxableAmount, group.rate)})`,
      });
    }
  }
  const stated = input.breakdown.reduce((sum, entry) => sum + entry.taxAmount, 0);
  if (stated !== input.totalTax) {
    problems.push({
      path: totalTaxAt,
      message: `must equal the tax breakdown's taxAmount added up (${stated})`,
      expected: stated,
    });
  }
  return problems;
}
