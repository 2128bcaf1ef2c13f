import { describe, expect, it } from '@jest/globals';
import * as bwipjs from 'bwip-js';
import { renderReceiptHtml, renderReceiptText, type Receipt } from '@receipt-service/sdk';
import { renderReceiptPdf } from '@receipt-service/sdk/pdf';
import { barcodeShape, type BarcodeEncoder } from '../../packages/sdk/src/render/barcode.js';
import { FIXTURES, twoRatesAndDiscount, withReceiptCode } from './formats-fixtures.js';
import { pdfJs, pdfText } from './receipts.js';

/**
 * DigitalReceipt 1.2 in the SDK's renderers: VAT per rate (what it is on and the tax), the seller's
 * legal name and VAT number, allowances and charges with their reasons, and the receipt code as a
 * barcode (bwip-js, an optional peer dependency) with its value beneath, in text, HTML and PDF.
 */

const en = { locale: 'en-US' };
const sale = twoRatesAndDiscount as Receipt;
const coded = withReceiptCode as Receipt;
const encoder = bwipjs as unknown as BarcodeEncoder;
const folded = (text: string) => text.replace(/\s+/g, ' ');

describe('a 1.2 receipt rendered', () => {
  it('shows VAT per rate, the seller’s VAT number and legal name, and the allowance, in text', () => {
    const text = folded(renderReceiptText(sale, en));
    for (const expected of [
      'Kahvila Kulma Oy',
      'VAT FI12345671',
      'Loyalty voucher -€2.00',
      'VAT S 14% on €8.00 €1.12',
      'VAT S 25.5% on €17.90 €4.56',
      'Total VAT €5.68',
      'Total €33.08',
    ]) {
      expect(text).toContain(expected);
    }
    const withCode = folded(renderReceiptText(coded, en));
    expect(withCode).toContain('Receipt code (Code 128) RC2026112100042');
  });

  it('shows the same in HTML, and the receipt code as an SVG barcode when given bwip-js', () => {
    const html = renderReceiptHtml(coded, { ...en, barcodes: encoder });
    expect(html).toContain('VAT FI12345671');
    expect(html).toContain('VAT S 14% on €11.50');
    expect(html).toMatch(
      /<figure class="receipt-code"><svg [^>]*><rect [^>]*\/><path d="M[^"]+" fill="#000"\/><\/svg>/,
    );
    expect(html).toContain('<figcaption>Receipt code (Code 128): RC2026112100042</figcaption>');
    // Without bwip-js the value is still there, and no barcode.
    const plain = renderReceiptHtml(coded, en);
    expect(plain).not.toContain('<svg');
    expect(plain).toContain('RC2026112100042');
    // A receipt without a code has no figure.
    expect(renderReceiptHtml(sale, en)).not.toContain('receipt-code');
  });

  it('takes a receipt code that looks like markup as text: in the caption, the label and the bars', () => {
    const value = '"><img src=x onerror=alert(1)>';
    const html = renderReceiptHtml(
      { ...coded, receiptCode: { value, symbology: 'code128' } },
      { ...en, barcodes: encoder },
    );
    const figure = html.slice(html.indexOf('<figure'), html.indexOf('</figure>'));
    expect(figure).not.toContain('<img');
    expect(figure).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(figure).toMatch(/aria-label="Receipt code \(Code 128\): img src=x onerror=alert\(1\)"/);
  });

  it('encodes each symbology with the structure its standard gives', () => {
    // Code 128: 11 modules per symbol (start, data, check) and a 13-module stop.
    const code128 = barcodeShape({ value: 'RC2026112100042', symbology: 'code128' }, encoder)!;
    expect(code128.width % 11).toBe(2);
    // EAN-13: 95 modules, guard bars first (bar, space, bar).
    const ean13 = barcodeShape({ value: '4006381333931', symbology: 'ean13' }, encoder)!;
    expect(ean13.width).toBe(95);
    expect(ean13.rects.slice(0, 2).map(([x, , width]) => [x, width])).toEqual([
      [0, 1],
      [2, 1],
    ]);
    // QR: square, 21 + 4k modules a side, three 7 × 7 finder patterns (their top rows dark).
    const qr = barcodeShape({ value: 'https://example.com/r/RC2026112100042', symbology: 'qr' }, encoder)!;
    expect(qr.width).toBe(qr.height);
    expect((qr.width - 21) % 4).toBe(0);
    expect(qr.rects.filter(([, y, width]) => y === 0 && width === 7)).toHaveLength(2);
    // A value the symbology cannot carry is no barcode (the schema refuses it before it gets here).
    expect(barcodeShape({ value: '123', symbology: 'ean13' }, encoder)).toBeUndefined();
  });

  it('prints VAT per rate, the VAT number and the receipt code as a drawn barcode in the PDF', async () => {
    const bytes = await renderReceiptPdf(coded, en);
    const runs = await pdfText(bytes);
    for (const expected of ['VAT FI12345671', 'Receipt code (Code 128)', 'RC2026112100042', '€1.61'])
      expect(runs).toContain(expected);
    const drawn = async (pdf: Uint8Array) => {
      const { getDocument, OPS } = await pdfJs();
      const task = getDocument({ data: new Uint8Array(pdf) });
      const operators = await (await (await task.promise).getPage(1)).getOperatorList();
      await task.destroy();
      // pdf.js gives each path with the operator that paints it first among its arguments.
      return operators.fnArray.filter(
        (op: number, index: number) =>
          op === OPS.constructPath && (operators.argsArray[index] as unknown[])[0] === OPS.fill,
      ).length;
    };
    const refusing: BarcodeEncoder = {
      raw: () => {
        throw new Error('no barcode');
      },
    };
    const bars = barcodeShape({ value: 'RC2026112100042', symbology: 'code128' }, encoder)!.rects.length;
    const withBars = await drawn(bytes);
    const without = await drawn(await renderReceiptPdf(coded, { ...en, barcodes: refusing }));
    expect(withBars - without).toBe(bars);
  });

  it.each(Object.entries(FIXTURES))(
    'renders the formats fixture %s in all three forms',
    async (_, receipt) => {
      expect(renderReceiptText(receipt as Receipt, en)).toContain('Corner Café');
      expect(renderReceiptHtml(receipt as Receipt, en)).toContain('VAT FI12345671');
      expect(await pdfText(await renderReceiptPdf(receipt as Receipt, en))).toContain('VAT FI12345671');
    },
  );
});
