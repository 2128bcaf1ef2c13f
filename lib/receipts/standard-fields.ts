import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import { TAX_CATEGORIES, taxBreakdownProblems, type BreakdownInput } from '@receipt-service/receipt-core';
import { money } from '../kernel/fields.js';

/**
 * The fields DigitalReceipt 1.2 adds for the standard formats (DECISIONS, round 4, "Standard
 * formats"; docs/FORMATS.md), shared by the nested receipt and the flattened request forms. All are
 * optional; a receipt that gives a tax breakdown must have one that agrees with its lines.
 */

const rate = lazySchema(() => z.number().min(0).max(1));

export const taxCategorySchema = lazySchema(() =>
  z.enum(TAX_CATEGORIES).meta({
    id: 'TaxCategory',
    description:
      'UNCL 5305 VAT category, as EN 16931 uses it: S standard rate, Z zero rated, E exempt, AE reverse charge, ' +
      'K intra-community supply, G export, O outside the scope of VAT, L Canary Islands IGIC, M Ceuta and Melilla IPSI.',
  }),
);

/** The GS1 check digit: the digits weighted 3 and 1 from the right add up to a multiple of ten. */
export function gs1CheckDigitValid(digits: string): boolean {
  const sum = [...digits]
    .reverse()
    .reduce((total, digit, index) => total + Number(digit) * (index % 2 === 1 ? 3 : 1), 0);
  return sum % 10 === 0;
}

export const gtinSchema = lazySchema(() =>
  z
    .string()
    .regex(/^(\d{8}|\d{12,14})$/, 'must be a GTIN of 8, 12, 13 or 14 digits')
    .refine((gtin) => !/^\d+$/.test(gtin) || gs1CheckDigitValid(gtin), 'has a wrong GS1 check digit')
    .meta({
      description: 'GS1 GTIN (8, 12, 13 or 14 digits, check digit included).',
      examples: ['4006381333931'],
    }),
);

export const unitCodeSchema = lazySchema(() =>
  z
    .string()
    .regex(/^[A-Z0-9]{2,3}$/, 'must be a UN/ECE Recommendation 20 unit code such as C62, KGM or LTR')
    .meta({ description: 'UN/ECE Recommendation 20 unit code; C62 (one) when absent.', examples: ['KGM'] }),
);

export const vatIdSchema = lazySchema(() =>
  z
    .string()
    .regex(
      /^[A-Z]{2}[0-9A-Za-z+*.]{2,13}$/,
      'must be a VAT identifier with its country prefix, such as FI12345671',
    )
    .meta({
      description: "The seller's VAT identifier with its country prefix (EN 16931 BT-31).",
      examples: ['FI12345671'],
    }),
);

export const electronicAddressSchema = lazySchema(() =>
  z
    .strictObject({
      scheme: z
        .string()
        .regex(/^[0-9A-Z]{2,4}$/, 'must be a Peppol EAS code such as 0088 or 0216')
        .meta({ description: 'Electronic address scheme (Peppol EAS code list).' }),
      id: z.string().min(1).max(256),
    })
    .meta({ id: 'ElectronicAddress', description: 'An electronic address, e.g. a Peppol participant id.' }),
);

export const allowanceChargeSchema = lazySchema(() =>
  z
    .strictObject({
      amount: money.min(0, 'must not be negative'),
      reason: z.string().min(1).max(256),
      category: taxCategorySchema,
      rate: rate.meta({ description: 'Decimal fraction: 0.24 means 24 %.' }),
    })
    .meta({
      id: 'AllowanceCharge',
      description:
        'A document-level allowance or charge, net of tax, in minor units, with the VAT it falls under.',
    }),
);

export const taxBreakdownEntrySchema = lazySchema(() =>
  z
    .strictObject({
      category: taxCategorySchema,
      rate: rate.meta({ description: 'Decimal fraction: 0.24 means 24 %.' }),
      taxableAmount: money,
      taxAmount: money,
    })
    .meta({
      id: 'TaxBreakdownEntry',
      description:
        "Per VAT category and rate: taxableAmount = the lines' totalPrice less allowances plus charges of that " +
        'category and rate; taxAmount = taxableAmount × rate rounded half up, within one minor unit.',
    }),
);

export const TAX_BREAKDOWN_MAX = 20;
export const taxBreakdownSchema = lazySchema(() =>
  z.array(taxBreakdownEntrySchema).min(1).max(TAX_BREAKDOWN_MAX),
);

const ean13 = /^\d{13}$/;
export const receiptCodeSchema = lazySchema(() =>
  z
    .strictObject({
      value: z.string().min(1).max(512),
      symbology: z.enum(['code128', 'ean13', 'qr']),
    })
    .superRefine((code, ctx) => {
      const problem =
        code.symbology === 'ean13'
          ? !ean13.test(code.value)
            ? 'must be 13 digits for ean13'
            : gs1CheckDigitValid(code.value)
              ? undefined
              : 'has a wrong EAN-13 check digit'
          : code.symbology === 'code128' && !/^[\x20-\x7e]{1,80}$/.test(code.value)
            ? 'must be 1 to 80 printable ASCII characters for code128'
            : undefined;
      if (problem) ctx.addIssue({ code: 'custom', path: ['value'], message: problem });
    })
    .meta({
      id: 'ReceiptCode',
      description:
        'The code printed on the receipt for returns: code128 (printable ASCII, up to 80), ean13 (13 digits with ' +
        'its check digit) or qr (up to 512 characters).',
    }),
);

export const FISCAL_DATA_MAX_BYTES = 4096;
export const fiscalSchema = lazySchema(() =>
  z
    .strictObject({
      scheme: z
        .string()
        .min(1)
        .max(64)
        .meta({ description: "The fiscal system: 'AT-RKSV', 'DE-TSE', …", examples: ['DE-TSE'] }),
      data: z
        .string()
        .min(1)
        .refine(
          (data) => new TextEncoder().encode(data).length <= FISCAL_DATA_MAX_BYTES,
          `must be at most ${FISCAL_DATA_MAX_BYTES} bytes (UTF-8)`,
        )
        .meta({ maxLength: FISCAL_DATA_MAX_BYTES }),
    })
    .meta({
      id: 'FiscalData',
      description:
        'Fiscal signature data (Austrian RKSV, German TSE), up to 4 KB, opaque: carried unchanged, never read.',
    }),
);

/** The 1.2 additions to a line's tax entry, a line, and the merchant. */
export const lineTaxAdditions = { category: taxCategorySchema.optional() };
export const lineAdditions = { unitCode: unitCodeSchema.optional(), gtin: gtinSchema.optional() };
export const merchantAdditions = {
  legalName: z.string().min(1).max(256).optional(),
  vatId: vatIdSchema.optional(),
  endpoint: electronicAddressSchema.optional(),
};

/** The document-level 1.2 additions (a receipt's top level; the flattened body's too). */
export const documentAdditions = {
  allowances: z.array(allowanceChargeSchema).max(20).optional(),
  charges: z.array(allowanceChargeSchema).max(20).optional(),
  receiptCode: receiptCodeSchema.optional(),
  fiscal: fiscalSchema.optional(),
};

export const adjustmentTotal = (entries: readonly { amount: number }[] | undefined): number =>
  (entries ?? []).reduce((sum, entry) => sum + entry.amount, 0);

/**
 * Adds a breakdown's disagreements as issues, each naming the field and the amount it must be.
 * Nothing to check without a breakdown.
 */
export function checkTaxBreakdown(
  input: Omit<BreakdownInput, 'breakdown'> & { breakdown?: BreakdownInput['breakdown'] | undefined },
  paths: { breakdown: (string | number)[]; lines: (string | number)[]; totalTax: (string | number)[] },
  ctx: z.RefinementCtx,
): void {
  if (input.breakdown === undefined) return;
  const problems = taxBreakdownProblems(
    { ...input, breakdown: input.breakdown },
    paths.breakdown,
    paths.lines,
    paths.totalTax,
  );
  for (const problem of problems)
    ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
}

interface NestedReceiptAmounts {
  items: readonly (BreakdownInput['lines'][number] & {
    discounts?: readonly { amount?: number | undefined }[] | undefined;
  })[];
  allowances?: BreakdownInput['allowances'];
  charges?: BreakdownInput['charges'];
  summary: {
    subtotal: number;
    totalTax: number;
    totalDiscount: number;
    tipAmount?: number | null | undefined;
    total: number;
    taxBreakdown?: BreakdownInput['breakdown'] | undefined;
  };
}

/**
 * The 1.2 amount rules of a whole receipt (the nested form): with document-level allowances or
 * charges, total = subtotal − allowances + charges + totalTax (+ tip) and totalDiscount reports the
 * allowances and the line discounts; a tax breakdown agrees with the lines. Paths start at `at`.
 */
export function checkReceiptAdditions(
  receipt: NestedReceiptAmounts,
  at: (string | number)[],
  ctx: z.RefinementCtx,
): void {
  const { summary } = receipt;
  if (receipt.allowances !== undefined || receipt.charges !== undefined) {
    const allowances = adjustmentTotal(receipt.allowances);
    const total =
      summary.subtotal -
      allowances +
      adjustmentTotal(receipt.charges) +
      summary.totalTax +
      (summary.tipAmount ?? 0);
    if (summary.total !== total) {
      ctx.addIssue({
        code: 'custom',
        path: [...at, 'summary', 'total'],
        message: `must equal subtotal − allowances + charges + totalTax + tipAmount (${total})`,
      });
    }
    const lineDiscounts = receipt.items.reduce(
      (sum, item) =>
        sum + (item.discounts ?? []).reduce((part, discount) => part + (discount.amount ?? 0), 0),
      0,
    );
    if (summary.totalDiscount !== allowances + lineDiscounts) {
      ctx.addIssue({
        code: 'custom',
        path: [...at, 'summary', 'totalDiscount'],
        message: `must report the allowances and the line discounts (${allowances + lineDiscounts})`,
      });
    }
  }
  checkTaxBreakdown(
    {
      lines: receipt.items,
      allowances: receipt.allowances,
      charges: receipt.charges,
      breakdown: summary.taxBreakdown,
      totalTax: summary.totalTax,
    },
    {
      breakdown: [...at, 'summary', 'taxBreakdown'],
      lines: [...at, 'items'],
      totalTax: [...at, 'summary', 'totalTax'],
    },
    ctx,
  );
}
