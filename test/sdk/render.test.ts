import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { digitalReceiptSchema } from '../../lib/receipts/schemas.js';
import { renderReceiptHtml, renderReceiptText, type Receipt } from '@receipt-service/sdk';
import { renderReceiptPdf } from '@receipt-service/sdk/pdf';
import { RECEIPT_STYLE, RECEIPT_STYLE_HASH } from '../../packages/sdk/src/render/html.js';
import { winAnsi } from '../../packages/sdk/src/render/pdf.js';
import { sampleReceipt } from '../support/fixtures.js';
import { markupSale, MARKUP, pdfJs, pdfText, saleAndRefund } from './receipts.js';

/**
 * The SDK's receipt renderers in Node: what each says for a sale and a refund, amounts in the
 * receipt's currency and minor units, and nothing a merchant wrote taken as markup. The same pages in
 * Chromium, at phone and desktop widths: test/browser/receipt-render.slow.test.ts.
 */

const en = { locale: 'en-US' };
const { sale, refund } = saleAndRefund();
// 1 flat white (450) back with its tax (39) of the sale's 1748.
const SALE = [
  'Flat white',
  'Almond croissant',
  '2 × $4.50',
  '$9.00',
  '$5.25',
  '$14.25',
  '$1.23',
  '$2.00',
  '$17.48',
];
const REFUND = ['Flat white', '1 × $4.50', '-$4.50', '-$0.39', '-$4.89'];

/** In HTML the quantity and the unit price are cells of their own: "2 × $4.50" is "2" and "$4.50". */
const cells = (expected: string[]): string[] => expected.flatMap((text) => text.split(' × '));

describe('renderReceiptText', () => {
  it('gives a sale: merchant, time in its zone, card, every line, and the totals, in 40 columns', () => {
    expect(digitalReceiptSchema.safeParse(sale).success).toBe(true);
    const text = renderReceiptText(sale, en);
    // Long lines wrap at 40 columns: compared with the spacing folded.
    const words = text.replace(/\s+/g, ' ');
    for (const expected of [
      'Corner Coffee Roasters',
      '12 Market St, San Francisco, CA 94105, US',
      'RECEIPT',
      'Visa •••• 4242',
      // 09:15 UTC in America/Los_Angeles.
      'Nov 21, 2026, 1:15',
      ...SALE,
      'Thank you!',
      'Bean Club',
    ]) {
      expect(words).toContain(expected);
    }
    expect(text).toMatch(/^Total {2,}\$17\.48$/m);
    expect(text).toMatch(/^Tip {2,}\$2\.00$/m);
    expect(text).not.toContain('Refund');
    for (const line of text.split('\n')) expect([...line].length).toBeLessThanOrEqual(40);
  });

  it('gives a refund as a refund: its title, the sale it refunds, and amounts as refunded', () => {
    const text = renderReceiptText(refund, en);
    expect(text).toContain('REFUND');
    expect(text.replace(/\s+/g, ' ')).toContain(`Refund of receipt ${sale.receiptId}`);
    expect(text).toContain('Items refunded');
    for (const expected of REFUND) expect(text).toContain(expected);
    expect(text).toMatch(/^Total refunded {2,}-\$4\.89$/m);
    expect(text).not.toContain('RECEIPT\n');
  });

  it("formats money in the receipt's currency and its minor units", () => {
    const priced = (currency: string, unit: number) =>
      renderReceiptText(
        sampleReceipt({
          items: [
            {
              lineItemId: sale.items[0]!.lineItemId,
              name: 'Thing',
              quantity: 1,
              unitPrice: unit,
              totalPrice: unit,
            },
          ],
          summary: { subtotal: unit, totalTax: 0, totalDiscount: 0, total: unit, currency, itemCount: 1 },
        }),
        en,
      );
    expect(priced('JPY', 1500)).toMatch(/^Total {2,}¥1,500$/m);
    expect(priced('EUR', 1999)).toMatch(/^Total {2,}€19\.99$/m);
    expect(priced('BHD', 1234)).toMatch(/^Total {2,}BHD\s1\.234$/m);
    expect(renderReceiptText({ ...sale }, { locale: 'de-DE' })).toMatch(/^Total {2,}17,48\s\$$/m);
  });
});

describe('renderReceiptHtml', () => {
  it('is one self-contained document under a policy that loads nothing, its only style hashed', () => {
    const html = renderReceiptHtml(sale, en);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    const hash = `sha256-${createHash('sha256').update(RECEIPT_STYLE, 'utf8').digest('base64')}`;
    expect(RECEIPT_STYLE_HASH).toBe(hash);
    expect(html).toContain(
      `<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; style-src &#39;${hash}&#39;; img-src &#39;none&#39;; base-uri &#39;none&#39;; form-action &#39;none&#39;">`,
    );
    expect(html).toContain(`<style>${RECEIPT_STYLE}</style>`);
    // No reference to anything outside: no src, href, url() or @import anywhere.
    expect(html).not.toMatch(/\ssrc=|\shref=|url\(|@import|<script|<link|<img/i);
    for (const expected of ['Corner Coffee Roasters', 'Receipt', ...cells(SALE)])
      expect(html).toContain(expected);
  });

  it('escapes every value a merchant wrote', () => {
    const html = renderReceiptHtml(
      {
        ...markupSale(),
        merchant: { ...sale.merchant, name: 'Tom & "Jerry\'s" <b>' },
        notes: '</style><script>alert(2)</script>',
      },
      en,
    );
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('Tom &amp; &quot;Jerry&#39;s&quot; &lt;b&gt;');
    expect(html).toContain('&lt;/style&gt;&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(html).not.toContain(MARKUP);
    expect(html).not.toMatch(/<img|<script|<b>/);
  });

  it("shows the merchant's logo only when allowed, and only from an https URL", () => {
    expect(renderReceiptHtml(sale, en)).not.toContain('<img');
    const allowed = renderReceiptHtml(sale, { ...en, allowLogo: true });
    expect(allowed.match(/<img [^>]*>/g)).toEqual([
      '<img src="https://example.com/logo.png" alt="" referrerpolicy="no-referrer">',
    ]);
    expect(allowed).toContain('img-src https:');
    for (const logoUrl of [
      'http://example.com/logo.png',
      'javascript:alert(1)',
      'data:image/png;base64,AAAA',
      '//x.test/a.png',
    ]) {
      const html = renderReceiptHtml(
        { ...sale, merchant: { ...sale.merchant, logoUrl } },
        { ...en, allowLogo: true },
      );
      expect({ logoUrl, img: html.includes('<img') }).toEqual({ logoUrl, img: false });
      expect(html).toContain('img-src &#39;none&#39;');
    }
  });

  it('gives a refund as a refund', () => {
    const html = renderReceiptHtml(refund, en);
    expect(html).toContain('<title>Refund — Corner Coffee Roasters</title>');
    expect(html).toContain('<article class="refund">');
    expect(html).toContain(`Refund of receipt ${sale.receiptId}`);
    expect(html).toContain('<dt class="grand">Total refunded</dt><dd class="grand">-$4.89</dd>');
    for (const expected of cells(REFUND)) expect(html).toContain(expected);
  });
});

describe('renderReceiptPdf', () => {
  it('makes a small PDF in which a PDF reader finds the merchant, every line and the totals', async () => {
    const bytes = await renderReceiptPdf(sale, en);
    expect(new TextDecoder().decode(bytes.subarray(0, 5))).toBe('%PDF-');
    expect(bytes.length).toBeLessThan(16 * 1024);
    const runs = await pdfText(bytes);
    for (const expected of [
      'Corner Coffee Roasters',
      'RECEIPT',
      'Subtotal',
      'Tax',
      'Tip',
      'Total',
      ...SALE,
    ]) {
      expect({ expected, found: runs.includes(expected) }).toEqual({ expected, found: true });
    }
    expect(runs[runs.indexOf('Total') + 1]).toBe('$17.48');
  });

  it('makes a refund PDF with the refunded amounts', async () => {
    const runs = await pdfText(await renderReceiptPdf(refund, en));
    for (const expected of ['REFUND', `Refund of receipt ${sale.receiptId}`, 'Total refunded', ...REFUND]) {
      expect({ expected, found: runs.includes(expected) }).toEqual({ expected, found: true });
    }
    expect(runs[runs.indexOf('Total refunded') + 1]).toBe('-$4.89');
  });

  it("writes what Helvetica cannot show readably: accents kept, other scripts as '?', a missing symbol as its code", async () => {
    expect(winAnsi('Crème brûlée – 10 €')).toBe('Crème brûlée – 10 €');
    expect(winAnsi('Ǆ ẞ 寿司 −5')).toBe('DZ ? ?? -5');
    const rupees: Receipt = {
      ...sale,
      items: [{ ...sale.items[1]!, name: '寿司 set' }],
      summary: {
        ...sale.summary,
        subtotal: 525,
        totalTax: 0,
        tipAmount: 0,
        total: 525,
        currency: 'INR',
        itemCount: 1,
      },
    };
    const runs = await pdfText(await renderReceiptPdf(rupees, en));
    expect(runs).toContain('?? set');
    expect(runs[runs.indexOf('Total') + 1]).toMatch(/^INR\s5\.25$/);
  });

  it('keeps the amounts of a receipt shorter than its page is wide (one line, no address)', async () => {
    const short: Receipt = {
      ...sale,
      merchant: { merchantId: sale.merchant.merchantId, name: 'Corner Coffee' },
      items: [{ ...sale.items[1]!, taxes: [] }],
      summary: { ...sale.summary, subtotal: 525, totalTax: 0, tipAmount: 0, total: 525, itemCount: 1 },
      notes: null,
      returnPolicy: null,
      loyaltyInfo: null,
    };
    const bytes = await renderReceiptPdf(short, en);
    const { getDocument } = await pdfJs();
    const task = getDocument({ data: new Uint8Array(bytes) });
    const [, , width, height] = (await (await task.promise).getPage(1)).view;
    await task.destroy();
    // A till roll 298 pt wide however short: not turned to portrait with its right-hand side cut off.
    expect({ width, shorter: height! < width! }).toEqual({ width: 298, shorter: true });
    const runs = await pdfText(bytes);
    expect(runs).toContain(sale.receiptId);
    expect(runs).toContain('Visa •••• 4242');
    expect(runs[runs.indexOf('Total') + 1]).toBe('$5.25');
  });

  it('paginates a receipt longer than a page', async () => {
    const line = sale.items[1]!;
    const many: Receipt = {
      ...sale,
      items: Array.from({ length: 120 }, (_, index) => ({ ...line, name: `Pastry ${index + 1}` })),
      summary: {
        ...sale.summary,
        subtotal: 120 * 525,
        totalTax: 0,
        tipAmount: 0,
        total: 120 * 525,
        itemCount: 120,
      },
    };
    const runs = await pdfText(await renderReceiptPdf(many, en));
    expect(runs).toContain('Pastry 1');
    expect(runs).toContain('Pastry 120');
    expect(runs[runs.indexOf('Total') + 1]).toBe('$630.00');
  });
});

describe("the card network's references (cardTransaction)", () => {
  const withNetwork: Receipt = {
    ...sale,
    transaction: { ...sale.transaction, authorizationCode: 'TYPED1' },
    cardTransaction: {
      gateway: 'gateway_a',
      network: 'mastercard',
      authorizationCode: 'A1B2C3',
      networkTransactionId: '581012345678901',
      last4: '4444',
      statementDescriptor: 'CORNER COFFEE SF',
      providerIds: { paymentIntentId: 'pi_1', chargeId: 'ch_1' },
    },
  };
  const expected = [
    'Appears on your statement as',
    'CORNER COFFEE SF',
    'Mastercard •••• 4444',
    'A1B2C3',
    '581012345678901',
  ];

  it('shows how the charge appears on the statement and the network references, in text, HTML and PDF', async () => {
    digitalReceiptSchema.parse(withNetwork);
    const text = renderReceiptText(withNetwork, en);
    const html = renderReceiptHtml(withNetwork, en);
    const runs = (await pdfText(await renderReceiptPdf(withNetwork, en))).join('\n');
    for (const rendered of [text, html, runs]) {
      expect(expected.filter((value) => !rendered.includes(value))).toEqual([]);
      // The network's authorization code is the one shown, not one the merchant typed.
      expect(rendered).not.toContain('TYPED1');
    }
  });

  it("shows a refund's acquirer reference, and a receipt without references as before", () => {
    const refundWithReference: Receipt = {
      ...refund,
      cardTransaction: {
        gateway: 'gateway_a',
        acquirerReferenceNumber: '74567890123456789012345',
        providerIds: {},
      },
    };
    expect(renderReceiptText(refundWithReference, en)).toContain('74567890123456789012345');
    const plain = renderReceiptText(sale, en);
    expect(plain).not.toContain('Appears on your statement as');
    expect(plain).not.toContain('Card network');
  });
});
