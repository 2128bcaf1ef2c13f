/**
 * DigitalReceipt 1.2 as the exports read it (docs/FORMATS.md; DECISIONS, "Standard formats"): the 1.1
 * receipt of digital-receipt.ts with the fields EN 16931, the vReceipt, Versa and schema.org need, all
 * optional, and the error every export throws when a receipt lacks what its format requires. Pure and
 * platform-neutral: no clock, no randomness, no Node module.
 */
import type { DigitalReceipt } from '../digital-receipt.js';

/** UNCL 5305 duty or tax category codes, as EN 16931 uses them. */
export const TAX_CATEGORIES = ['S', 'Z', 'E', 'AE', 'K', 'G', 'O', 'L', 'M'] as const;
export type TaxCategory = (typeof TAX_CATEGORIES)[number];

/** An electronic address: a scheme of the Peppol EAS code list (e.g. `0088`, a GLN) and the id in it. */
export interface ElectronicAddress {
  scheme: string;
  id: string;
}

/** A document-level allowance or charge, net of tax, in minor units, with the VAT it falls under. */
export interface DocumentAllowanceCharge {
  amount: number;
  reason: string;
  category: TaxCategory;
  /** Decimal fraction: 0.24 is 24 %. */
  rate: number;
}

/** One entry of the VAT breakdown: per category and rate, the taxable amount and its tax (minor units). */
export interface TaxBreakdownEntry {
  category: TaxCategory;
  rate: number;
  taxableAmount: number;
  taxAmount: number;
}

export type ReceiptCodeSymbology = 'code128' | 'ean13' | 'qr';

type Line11 = DigitalReceipt['items'][number];
type Tax11 = NonNullable<Line11['taxes']>[number];

export type LineTax12 = Tax11 & { category?: TaxCategory };

export type ReceiptLine12 = Omit<Line11, 'taxes'> & {
  /** UN/ECE Recommendation 20 unit code (`KGM`, `LTR`, ...); `C62` (one) when absent. */
  unitCode?: string;
  /** GS1 GTIN (8, 12, 13 or 14 digits). */
  gtin?: string;
  taxes?: LineTax12[];
};

export type ReceiptMerchant12 = DigitalReceipt['merchant'] & {
  legalName?: string;
  /** The seller's VAT identifier with its country prefix (EN 16931 BT-31), e.g. `FI12345671`. */
  vatId?: string;
  endpoint?: ElectronicAddress;
};

export type ReceiptSummary12 = DigitalReceipt['summary'] & { taxBreakdown?: TaxBreakdownEntry[] };

/** A DigitalReceipt of version 1.2 (older receipts are one too: every addition is optional). */
export type DigitalReceipt12 = Omit<DigitalReceipt, 'merchant' | 'items' | 'summary'> & {
  merchant: ReceiptMerchant12;
  items: ReceiptLine12[];
  summary: ReceiptSummary12;
  allowances?: DocumentAllowanceCharge[];
  charges?: DocumentAllowanceCharge[];
  /** The code printed on the receipt for returns. */
  receiptCode?: { value: string; symbology: ReceiptCodeSymbology };
  /** Fiscal signature data (Austrian RKSV, German TSE), opaque, carried unchanged. */
  fiscal?: { scheme: string; data: string };
};

export type ExportFormat = 'ubl' | 'vreceipt' | 'versa' | 'schema.org' | 'csv';

/**
 * A receipt lacks something its format requires: `field` names it (a dotted path into the receipt, or
 * into the export's options such as `buyer.reference`). No export ever invents a value instead.
 */
export class ReceiptFormatError extends Error {
  override readonly name = 'ReceiptFormatError';
  constructor(
    readonly format: ExportFormat,
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${format}: ${field} ${reason}`);
  }
}

/** Digits after the decimal point of a currency's minor unit (ISO 4217): 2 for EUR, 0 for JPY. */
export function currencyExponent(currency: string): number {
  return (
    new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2
  );
}

/** Minor units as a decimal string, exactly (no floating point): 1050 in EUR is "10.50". */
export function decimalAmount(minor: number, exponent: number): string {
  if (!Number.isSafeInteger(minor))
    throw new RangeError(`an amount must be an integer of minor units: ${minor}`);
  const digits = String(Math.abs(minor)).padStart(exponent + 1, '0');
  const sign = minor < 0 ? '-' : '';
  return exponent === 0
    ? `${sign}${digits}`
    : `${sign}${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`;
}

/** A decimal fraction as a percentage without floating-point noise: 0.255 is "25.5", 0.08625 is "8.625". */
export function percent(rate: number): string {
  return String(Number((rate * 100).toFixed(6)));
}

/** A quantity as a plain decimal (never exponent notation). */
export function decimalQuantity(quantity: number): string {
  const text = String(quantity);
  return /e/i.test(text) ? quantity.toFixed(12).replace(/\.?0+$/, '') : text;
}

/** The calendar date of an instant where the sale happened: its timezone's, else the offset it is written with. */
export function localDate(datetime: string, timeZone?: string): string {
  if (timeZone === undefined) return datetime.slice(0, 10);
  return new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(new Date(datetime));
}

/** The one VAT entry of a line (category and rate): EN 16931 and the vReceipt give a line one VAT category. */
export function lineVat(
  format: ExportFormat,
  line: ReceiptLine12,
  index: number,
): { category: TaxCategory; rate: number; amount?: number } {
  const taxes = line.taxes ?? [];
  if (taxes.length !== 1) {
    throw new ReceiptFormatError(
      format,
      `items[${index}].taxes`,
      'must hold exactly one VAT entry, with its category and rate',
    );
  }
  const [tax] = taxes as [LineTax12];
  if (tax.category === undefined)
    throw new ReceiptFormatError(format, `items[${index}].taxes[0].category`, 'is missing');
  if (tax.rate === undefined)
    throw new ReceiptFormatError(format, `items[${index}].taxes[0].rate`, 'is missing');
  return {
    category: tax.category,
    rate: tax.rate,
    ...(tax.amount !== undefined ? { amount: tax.amount } : {}),
  };
}

/** The sum of a line's discounts in minor units (each must say its amount). */
export function lineDiscount(format: ExportFormat, line: ReceiptLine12, index: number): number {
  return (line.discounts ?? []).reduce((sum, discount, at) => {
    if (discount.amount === undefined) {
      throw new ReceiptFormatError(format, `items[${index}].discounts[${at}].amount`, 'is missing');
    }
    return sum + discount.amount;
  }, 0);
}

export const sum = (values: readonly number[]): number => values.reduce((total, value) => total + value, 0);
