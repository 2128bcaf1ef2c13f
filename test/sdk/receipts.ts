import { join } from 'node:path';
import type { Receipt } from '@receipt-service/sdk';
import { sampleReceipt } from '../support/fixtures.js';
import { nodeImport } from '../support/node-import.js';

/**
 * Receipts to render: the service's sample sale (two lines, tax, a tip, notes, loyalty), a refund of
 * one of its lines in the shape of receipt version 1.1, and a sale whose item name is markup.
 */
export function saleAndRefund(): { sale: Receipt; refund: Receipt } {
  const sale = sampleReceipt();
  const flatWhite = sale.items[0]!;
  const refund: Receipt = {
    ...sampleReceipt({ merchant: sale.merchant }),
    version: '1.1',
    type: 'refund',
    relatedReceiptId: sale.receiptId,
    items: [
      {
        lineItemId: flatWhite.lineItemId,
        name: flatWhite.name,
        quantity: 1,
        unitPrice: 450,
        totalPrice: 450,
        taxes: [{ name: 'Sales tax', rate: 0.08625, amount: 39 }],
      },
    ],
    summary: { subtotal: 450, totalTax: 39, totalDiscount: 0, total: 489, currency: 'USD', itemCount: 1 },
    notes: 'Refunded to the card it was paid with.',
    loyaltyInfo: undefined,
  };
  return { sale, refund };
}

export const MARKUP = '<img src=x onerror=alert(1)>';

export function markupSale(): Receipt {
  const sale = sampleReceipt();
  return {
    ...sale,
    items: sale.items.map((item, index) => (index === 0 ? { ...item, name: MARKUP } : item)),
  };
}

/** pdf.js, the PDF reader the tests read the receipts' PDFs with. */
export const pdfJs = () =>
  nodeImport<typeof import('pdfjs-dist/legacy/build/pdf.mjs')>('pdfjs-dist/legacy/build/pdf.mjs');

/** What a reader of the PDF sees: every text run of every page, in order. */
export async function pdfText(bytes: Uint8Array): Promise<string[]> {
  const { getDocument } = await pdfJs();
  const task = getDocument({
    data: new Uint8Array(bytes),
    // pdf.js's own metrics for the standard fonts, from the package: nothing is fetched.
    standardFontDataUrl: `${join(import.meta.dirname, '..', '..', 'node_modules', 'pdfjs-dist', 'standard_fonts')}/`,
  });
  const pdf = await task.promise;
  const runs: string[] = [];
  for (let number = 1; number <= pdf.numPages; number++) {
    const content = await (await pdf.getPage(number)).getTextContent();
    for (const item of content.items) if ('str' in item && item.str.trim() !== '') runs.push(item.str);
  }
  await task.destroy();
  return runs;
}
