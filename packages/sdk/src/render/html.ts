/**
 * A receipt as one self-contained HTML document: every value escaped, nothing loaded from anywhere
 * (no font, image, script or style sheet), under a Content-Security-Policy that forbids all of it
 * anyway, so a receipt whose merchant wrote markup into a field shows that markup as text. The
 * merchant's logo is the one exception, and only when the caller allows it: an https URL, shown as
 * an <img>. The layout reads on a 390 px phone (lines stack) and on a desktop (a table).
 */
import { barcodeShape, barcodeSvg, type BarcodeEncoder } from './barcode.js';
import { receiptView, type Receipt, type ReceiptView, type RenderOptions, type Row } from './view.js';

export interface HtmlRenderOptions extends RenderOptions {
  /**
   * Show the merchant's logo (an https URL only), which the viewer's browser then fetches from the
   * merchant's server: that tells the merchant's host when and from where the receipt was opened.
   * Off by default.
   */
  allowLogo?: boolean;
  /**
   * bwip-js (`await import('bwip-js')`, an optional peer dependency) to draw a DigitalReceipt 1.2
   * receipt code as a barcode; without it the code's value is shown alone.
   */
  barcodes?: BarcodeEncoder;
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text for element content and quoted attribute values alike. */
export const escapeHtml = (value: string): string => value.replace(/[&<>"']/g, (char) => ENTITIES[char]!);

/**
 * The style sheet, the document's only style. Its SHA-256 is the policy's style-src, so nothing
 * else can style the page (test/sdk/render.test.ts checks the hash against this text).
 */
export const RECEIPT_STYLE = [
  ':root{color-scheme:light}',
  '*{box-sizing:border-box}',
  'body{margin:0;background:#f3f4f6;color:#111827;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;-webkit-text-size-adjust:100%}',
  'main{max-width:42rem;margin:0 auto;padding:1.5rem 1rem}',
  'article{background:#fff;border:1px solid #e5e7eb;border-radius:12px;padding:1.5rem}',
  'header{text-align:center;border-bottom:1px dashed #d1d5db;padding-bottom:1rem}',
  'header img{display:block;margin:0 auto .5rem;max-width:8rem;max-height:4rem}',
  'h1{font-size:1.375rem;line-height:1.3;margin:0;overflow-wrap:anywhere}',
  '.merchant{margin:.25rem 0 0;color:#4b5563;font-size:.875rem;overflow-wrap:anywhere}',
  '.kind{display:inline-block;margin-top:.75rem;padding:.125rem .625rem;border-radius:999px;background:#e0f2fe;color:#075985;font-size:.75rem;font-weight:700;letter-spacing:.06em;text-transform:uppercase}',
  '.refund .kind{background:#fef3c7;color:#92400e}',
  '.refund-of{margin:.5rem 0 0;font-size:.875rem;color:#92400e;overflow-wrap:anywhere}',
  'dl{display:grid;grid-template-columns:auto minmax(0,1fr);gap:.25rem 1rem;margin:1rem 0}',
  'dt{color:#6b7280}',
  'dd{margin:0;text-align:right;overflow-wrap:anywhere}',
  'h2{font-size:.75rem;letter-spacing:.06em;text-transform:uppercase;color:#6b7280;margin:1.25rem 0 .25rem}',
  'table{width:100%;border-collapse:collapse}',
  'th{font-size:.75rem;font-weight:600;color:#6b7280;text-align:left;border-bottom:1px solid #e5e7eb;padding:.375rem 0}',
  'td{padding:.5rem 0;border-bottom:1px solid #f3f4f6;vertical-align:top}',
  '.num{text-align:right;white-space:nowrap;padding-left:1rem;font-variant-numeric:tabular-nums}',
  '.name{font-weight:600;overflow-wrap:anywhere}',
  '.detail{display:block;font-weight:400;font-size:.8125rem;color:#6b7280}',
  '.totals{border-top:1px dashed #d1d5db;padding-top:.75rem;margin-bottom:0;column-gap:0}',
  '.totals dd{font-variant-numeric:tabular-nums;padding-left:1rem}',
  '.totals .grand{font-weight:700;font-size:1.125rem;color:#111827;border-top:1px solid #111827;padding-top:.5rem}',
  '.notes{margin-top:1rem;font-size:.875rem;color:#374151}',
  '.notes p{margin:.5rem 0 0;overflow-wrap:anywhere;white-space:pre-line}',
  '.notes strong{display:block}',
  '.empty{color:#6b7280;font-style:italic}',
  // A phone: each line stacks, its name above "2 × $4.50" and the amount.
  '@media (max-width:30rem){main{padding:.5rem}article{padding:1rem;border-radius:8px}' +
    'thead{display:none}tbody tr{display:grid;grid-template-columns:auto minmax(0,1fr) auto;column-gap:.375rem;padding:.5rem 0;border-bottom:1px solid #f3f4f6}' +
    'td{padding:0;border:0}td.name{grid-column:1/-1;padding-bottom:.125rem}td.qty,td.price{text-align:left;padding-left:0;color:#4b5563}' +
    'td.price::before{content:"× "}}',
].join('\n');

/** base64 SHA-256 of RECEIPT_STYLE, for the policy (a test recomputes it). */
export const RECEIPT_STYLE_HASH = 'sha256-nl1c3Rap3wH0CmLjJP81UVAc0EkhsCLOMYPxgn82gf4=';

function policy(allowLogo: boolean): string {
  return [
    "default-src 'none'",
    `style-src '${RECEIPT_STYLE_HASH}'`,
    allowLogo ? 'img-src https:' : "img-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

/** An https URL, or nothing: no data:, javascript:, http: or relative URL is ever put in src. */
function httpsUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.username === '' && url.password === '' ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Label and value pairs; `grand` (the total) is set apart. */
const list = (rows: Row[], className?: string, grand?: Row): string =>
  `<dl${className ? ` class="${className}"` : ''}>` +
  rows
    .map((row) => {
      const mark = row === grand ? ' class="grand"' : '';
      return `<dt${mark}>${escapeHtml(row.label)}</dt><dd${mark}>${escapeHtml(row.value)}</dd>`;
    })
    .join('') +
  '</dl>';

/**
 * The receipt code: its barcode when the app passed bwip-js (`barcodes: await import('bwip-js')`),
 * always its value, which a till can key in.
 */
function receiptCode(view: ReceiptView, encoder: BarcodeEncoder | undefined): string {
  const code = view.receiptCode;
  if (!code) return '';
  const shape = encoder ? barcodeShape(code, encoder) : undefined;
  return (
    '<figure class="receipt-code">' +
    (shape ? barcodeSvg(shape, `${code.label}: ${code.value}`) : '') +
    `<figcaption>${escapeHtml(code.label)}: ${escapeHtml(code.value)}</figcaption></figure>\n`
  );
}

export function renderReceiptHtml(receipt: Receipt, options: HtmlRenderOptions = {}): string {
  const view = receiptView(receipt, options);
  const logo = options.allowLogo ? httpsUrl(view.logoUrl) : undefined;
  const header = [
    logo ? `<img src="${escapeHtml(logo)}" alt="" referrerpolicy="no-referrer">` : '',
    `<h1>${escapeHtml(view.merchantName)}</h1>`,
    ...view.merchantLines.map((line) => `<p class="merchant">${escapeHtml(line)}</p>`),
    `<span class="kind">${escapeHtml(view.kind)}</span>`,
    view.refundOf ? `<p class="refund-of">${escapeHtml(view.refundOf)}</p>` : '',
  ].join('');
  const rows = view.items
    .map(
      (item) =>
        '<tr>' +
        `<td class="name">${escapeHtml(item.name)}` +
        item.details.map((detail) => `<span class="detail">${escapeHtml(detail)}</span>`).join('') +
        '</td>' +
        `<td class="num qty">${escapeHtml(item.quantity)}</td>` +
        `<td class="num price">${escapeHtml(item.unitPrice)}</td>` +
        `<td class="num">${escapeHtml(item.amount)}</td>` +
        '</tr>',
    )
    .join('');
  const items =
    view.items.length === 0
      ? '<p class="empty">No items listed.</p>'
      : '<table><thead><tr><th scope="col">Item</th><th scope="col" class="num">Qty</th>' +
        '<th scope="col" class="num">Price</th><th scope="col" class="num">Amount</th></tr></thead>' +
        `<tbody>${rows}</tbody></table>`;
  const notes =
    view.notes.length === 0
      ? ''
      : '<section class="notes">' +
        view.notes
          .map(({ label, value }) => `<p><strong>${escapeHtml(label)}</strong>${escapeHtml(value)}</p>`)
          .join('') +
        '</section>';
  return (
    '<!doctype html>\n' +
    `<html lang="${escapeHtml(view.locale)}">\n<head>\n<meta charset="utf-8">\n` +
    `<meta http-equiv="Content-Security-Policy" content="${escapeHtml(policy(logo !== undefined))}">\n` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
    '<meta name="referrer" content="no-referrer">\n' +
    `<title>${escapeHtml(`${view.kind} — ${view.merchantName}`)}</title>\n` +
    `<style>${RECEIPT_STYLE}</style>\n</head>\n<body>\n<main>\n` +
    `<article class="${view.refund ? 'refund' : 'sale'}">\n` +
    `<header>${header}</header>\n` +
    list(view.details) +
    `\n<h2>${escapeHtml(view.itemsHeading)}</h2>\n${items}\n` +
    list(view.totals, 'totals', view.total) +
    `\n${notes}${receiptCode(view, options.barcodes)}</article>\n</main>\n</body>\n</html>\n`
  );
}
