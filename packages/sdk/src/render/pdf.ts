/**
 * A receipt as a small PDF made on the device with jsPDF (packages/sdk/README.md says why jsPDF): a
 * till-roll page as long as the receipt (A4's height at most, then more pages), in the PDF's own
 * Helvetica, so no font is embedded and a receipt is a few kilobytes. jsPDF is loaded on first use,
 * so an app that never makes a PDF never loads it.
 */
import { barcodeShape, type BarcodeEncoder, type BarcodeShape } from './barcode.js';
import { receiptView, type Receipt, type RenderOptions } from './view.js';

const PAGE_WIDTH = 298; // pt: 105 mm, a phone screen's proportions
const MAX_PAGE_HEIGHT = 842; // pt: A4's height
const MARGIN = 20;
const CONTENT = PAGE_WIDTH - 2 * MARGIN;
const SIZE = { title: 13, body: 9, small: 8 } as const;
const LEADING = 1.35;
const GREY = 110;

/**
 * The standard fonts' encoding (WinAnsi): printable ASCII, Latin-1 and these. jsPDF writes anything
 * else as two-byte text the standard fonts cannot show, so other characters are replaced first.
 */
const WIN_ANSI_EXTRA = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');
const encodable = (char: string): boolean => {
  const code = char.codePointAt(0)!;
  return (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) || WIN_ANSI_EXTRA.has(char);
};
const SPACES = /[\u2000-\u200a\u202f\u205f\u3000]/g;

/** The text as the standard fonts can show it: accents kept where WinAnsi has them, else dropped, else "?". */
export function winAnsi(text: string): string {
  let out = '';
  for (const char of text
    .normalize('NFC')
    .replace(SPACES, ' ')
    .replace(/\u2212/g, '-')) {
    if (encodable(char)) {
      out += char;
      continue;
    }
    const base = char.normalize('NFKD').replace(/\p{M}/gu, '');
    out += base !== '' && [...base].every(encodable) ? base : '?';
  }
  return out;
}

const fits = (text: string): boolean => [...text].every(encodable);

type Style = 'bold' | 'normal';
interface Line {
  text: string;
  /** Right-aligned beside `text`. */
  right?: string;
  size: number;
  style: Style;
  grey?: boolean;
  align?: 'left' | 'center';
  /** Space before, in points. */
  before?: number;
  /** A rule above the line. */
  rule?: boolean;
  /** The line is a barcode. */
  barcode?: BarcodeShape;
}

export interface PdfRenderOptions extends RenderOptions {
  /** bwip-js for the receipt code's barcode; loaded on first use when installed, when not given. */
  barcodes?: BarcodeEncoder;
}

/** bwip-js when the app installed it (an optional peer dependency), else nothing: the code's value is printed alone. */
async function loadBarcodes(): Promise<BarcodeEncoder | undefined> {
  try {
    return (await import('bwip-js')) as BarcodeEncoder;
  } catch {
    return undefined;
  }
}

/** The barcode's width on the page: a linear code at 1.2 pt a module (at most the content), a QR code 80 pt. */
const barcodeSize = (shape: BarcodeShape): { width: number; height: number } => {
  const linear = shape.width > shape.height * 2;
  const width = linear ? Math.min(CONTENT, shape.width * 1.2) : 80;
  return { width, height: linear ? 36 : 80 };
};

export async function renderReceiptPdf(
  receipt: Receipt,
  options: PdfRenderOptions = {},
): Promise<Uint8Array> {
  const { jsPDF } = await import('jspdf');
  // An amount whose currency symbol Helvetica lacks (₹, ₩…) is written with its code (INR 12.00).
  const view = receiptView(receipt, options, fits);

  const measure = new jsPDF({ unit: 'pt', format: [PAGE_WIDTH, MAX_PAGE_HEIGHT] });
  const split = (text: string, size: number, style: Style, width = CONTENT): string[] => {
    measure.setFont('helvetica', style);
    measure.setFontSize(size);
    return measure.splitTextToSize(winAnsi(text), width) as string[];
  };
  const widthOf = (text: string, size: number, style: Style): number => {
    measure.setFont('helvetica', style);
    measure.setFontSize(size);
    return measure.getTextWidth(winAnsi(text));
  };

  const lines: Line[] = [];
  const add = (text: string, size: number, style: Style, extra: Partial<Line> = {}) =>
    split(text, size, style).forEach((part, index) =>
      lines.push({ text: part, size, style, ...extra, ...(index > 0 ? { before: 0, rule: false } : {}) }),
    );
  /** Label left, value right; a label too long to leave room for the value wraps above it. */
  const pair = (label: string, value: string, size: number, style: Style, extra: Partial<Line> = {}) => {
    const room = CONTENT - widthOf(value, size, style) - 8;
    const parts = split(label, size, style, Math.max(room, CONTENT / 3));
    parts.forEach((part, index) =>
      lines.push({
        text: part,
        size,
        style,
        ...extra,
        ...(index === parts.length - 1 ? { right: winAnsi(value) } : {}),
        ...(index > 0 ? { before: 0, rule: false } : {}),
      }),
    );
  };

  add(view.merchantName, SIZE.title, 'bold', { align: 'center' });
  for (const line of view.merchantLines) add(line, SIZE.small, 'normal', { align: 'center', grey: true });
  add(view.kind.toUpperCase(), SIZE.body, 'bold', { align: 'center', before: 6 });
  if (view.refundOf) add(view.refundOf, SIZE.small, 'normal', { align: 'center' });
  view.details.forEach((row, index) =>
    pair(row.label, row.value, SIZE.small, 'normal', index === 0 ? { before: 8, rule: true } : {}),
  );
  add(view.itemsHeading, SIZE.small, 'bold', { before: 8, rule: true, grey: true });
  for (const item of view.items) {
    add(item.name, SIZE.body, 'bold', { before: 4 });
    for (const detail of item.details) add(detail, SIZE.small, 'normal', { grey: true });
    pair(`${item.quantity} × ${item.unitPrice}`, item.amount, SIZE.body, 'normal');
  }
  if (view.items.length === 0) add('No items listed.', SIZE.small, 'normal', { grey: true });
  view.totals.forEach((row, index) => {
    const grand = row === view.total;
    pair(row.label, row.value, grand ? SIZE.body + 1 : SIZE.body, grand ? 'bold' : 'normal', {
      ...(index === 0 ? { before: 8, rule: true } : {}),
      ...(grand ? { before: 4, rule: true } : {}),
    });
  });
  for (const note of view.notes) {
    add(note.label, SIZE.small, 'bold', { before: 8 });
    add(note.value, SIZE.small, 'normal');
  }
  const code = view.receiptCode;
  const encoder = code ? (options.barcodes ?? (await loadBarcodes())) : undefined;
  const shape = code && encoder ? barcodeShape(code, encoder) : undefined;
  if (code) {
    add(code.label, SIZE.small, 'bold', { before: 8, align: 'center' });
    // The barcode takes the space of a blank line this tall, drawn where that line lands.
    if (shape)
      lines.push({ text: '', size: barcodeSize(shape).height / LEADING, style: 'normal', barcode: shape });
    add(code.value, SIZE.small, 'normal', { align: 'center' });
  }

  const advance = (line: Line) => (line.before ?? 0) + line.size * LEADING;
  const contentHeight = lines.reduce((total, line) => total + advance(line), 0) + 2 * MARGIN;
  const pageHeight = Math.min(MAX_PAGE_HEIGHT, Math.ceil(contentHeight));
  // jsPDF turns a page wider than it is tall to portrait unless told: a short receipt's page would
  // lose its right-hand side, where the amounts are.
  const orientation = pageHeight < PAGE_WIDTH ? 'landscape' : 'portrait';
  const doc = new jsPDF({ unit: 'pt', format: [PAGE_WIDTH, pageHeight], orientation, compress: true });
  doc.setProperties({
    title: winAnsi(`${view.kind} — ${view.merchantName}`),
    subject: winAnsi(`${view.total.label} ${view.total.value}`),
    creator: '@receipt-service/sdk',
  });
  doc.setLineWidth(0.5);
  let y = MARGIN;
  for (const line of lines) {
    if (y + advance(line) > pageHeight - MARGIN) {
      doc.addPage([PAGE_WIDTH, pageHeight], orientation);
      y = MARGIN;
    }
    y += line.before ?? 0;
    if (line.rule) {
      doc.setDrawColor(GREY);
      doc.line(MARGIN, y - 2, PAGE_WIDTH - MARGIN, y - 2);
    }
    if (line.barcode) {
      const size = barcodeSize(line.barcode);
      const scaleX = size.width / line.barcode.width;
      const scaleY = size.height / line.barcode.height;
      const left = (PAGE_WIDTH - size.width) / 2;
      doc.setFillColor(0, 0, 0);
      for (const [x, top, width, height] of line.barcode.rects) {
        doc.rect(left + x * scaleX, y + top * scaleY, width * scaleX, height * scaleY, 'F');
      }
      y += size.height;
      continue;
    }
    y += line.size * LEADING;
    doc.setFont('helvetica', line.style);
    doc.setFontSize(line.size);
    doc.setTextColor(line.grey ? GREY : 0);
    const baseline = y - line.size * (LEADING - 1) - 1;
    if (line.align === 'center') doc.text(line.text, PAGE_WIDTH / 2, baseline, { align: 'center' });
    else doc.text(line.text, MARGIN, baseline);
    if (line.right !== undefined) doc.text(line.right, PAGE_WIDTH - MARGIN, baseline, { align: 'right' });
  }
  return new Uint8Array(doc.output('arraybuffer'));
}
