/**
 * Receipts as CSV (RFC 4180): one row per line, sale and refund rows alike, for spreadsheets and
 * accounting imports. A refund's amounts are negative, so that a column's sum is what was spent.
 */
import {
  currencyExponent,
  decimalAmount,
  decimalQuantity,
  lineDiscount,
  localDate,
  percent,
  type DigitalReceipt12,
} from './receipt.js';

/** The columns, in order: the header row. */
export const CSV_COLUMNS = [
  'receiptId',
  'type',
  'relatedReceiptId',
  'date',
  'datetime',
  'merchant',
  'merchantLegalName',
  'merchantVatId',
  'currency',
  'line',
  'sku',
  'gtin',
  'name',
  'quantity',
  'unitCode',
  'unitPrice',
  'discount',
  'lineNet',
  'vatCategory',
  'vatRate',
  'lineTax',
  'receiptNet',
  'receiptTax',
  'receiptTip',
  'receiptTotal',
  'paymentMethod',
  'cardLast4',
] as const;

type Row = Record<(typeof CSV_COLUMNS)[number], string>;

/*
 * A text cell that a spreadsheet would take for a formula (=, +, -, @, tab, carriage return first) gets a
 * leading apostrophe (OWASP, "CSV injection"): an item name is the merchant's text, opened by someone else.
 * Numbers are written by this module and are never text cells.
 */
const text = (value: string | null | undefined): string =>
  value === undefined || value === null ? '' : /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
const field = (value: string): string => (/[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

/**
 * The receipts as one CSV document (CRLF line ends, a header row). A receipt without lines (a refund of an
 * amount) is one row with its totals and the line columns empty. Amounts are decimals in the currency's
 * unit; a line's VAT category, rate and tax are its one VAT entry's, empty when it has none or several.
 */
export function toCsv(receipts: readonly DigitalReceipt12[]): string {
  const rows = receipts.flatMap((receipt) => {
    const sign = receipt.type === 'refund' ? -1 : 1;
    const exponent = currencyExponent(receipt.summary.currency);
    const money = (minor: number | null | undefined) =>
      minor === undefined || minor === null ? '' : decimalAmount(minor === 0 ? 0 : sign * minor, exponent);
    const { merchant, summary, transaction } = receipt;
    const base = {
      receiptId: receipt.receiptId,
      type: receipt.type ?? 'sale',
      relatedReceiptId: receipt.relatedReceiptId ?? '',
      date: localDate(transaction.datetime, transaction.timezone),
      datetime: transaction.datetime,
      merchant: text(merchant.name),
      merchantLegalName: text(merchant.legalName),
      merchantVatId: text(merchant.vatId ?? merchant.taxId),
      currency: summary.currency,
      receiptNet: money(summary.subtotal),
      receiptTax: money(summary.totalTax),
      receiptTip: money(summary.tipAmount),
      receiptTotal: money(summary.total),
      paymentMethod: transaction.paymentMethod,
      cardLast4: transaction.cardDetails?.last4 ?? '',
    };
    const empty = {
      line: '',
      sku: '',
      gtin: '',
      name: '',
      quantity: '',
      unitCode: '',
      unitPrice: '',
      discount: '',
      lineNet: '',
      vatCategory: '',
      vatRate: '',
      lineTax: '',
    };
    if (receipt.items.length === 0) return [{ ...base, ...empty } satisfies Row];
    return receipt.items.map((item, index): Row => {
      const tax = item.taxes?.length === 1 ? item.taxes[0] : undefined;
      return {
        ...base,
        line: String(index + 1),
        sku: text(item.sku),
        gtin: item.gtin ?? '',
        name: text(item.name),
        quantity: decimalQuantity(item.quantity),
        unitCode: item.unitCode ?? 'C62',
        unitPrice: money(item.unitPrice),
        discount: money(lineDiscount('csv', item, index)),
        lineNet: money(item.totalPrice),
        vatCategory: tax?.category ?? '',
        vatRate: tax?.rate !== undefined ? percent(tax.rate) : '',
        lineTax: money(tax?.amount),
      };
    });
  });
  return [
    CSV_COLUMNS.join(','),
    ...rows.map((row) => CSV_COLUMNS.map((column) => field(row[column])).join(',')),
  ]
    .map((line) => `${line}\r\n`)
    .join('');
}
