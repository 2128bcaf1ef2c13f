/**
 * The receipt code (DigitalReceipt 1.2 `receiptCode`) as a barcode: bwip-js (an optional peer
 * dependency, MIT, no dependencies of its own: packages/sdk/README.md says why) encodes Code 128,
 * EAN-13 and QR; this module turns its modules into rectangles, which the HTML renderer writes as an
 * SVG of its own making (no markup from elsewhere enters the page) and the PDF renderer draws.
 */

export type Symbology = 'code128' | 'ean13' | 'qr';

/** What the renderers need of bwip-js: its `raw` encoder (`import('bwip-js')` gives it). */
export interface BarcodeEncoder {
  raw(options: { bcid: string; text: string }): unknown;
}

/** A barcode as dark rectangles on a grid of modules: [x, y, width, height]. */
export interface BarcodeShape {
  width: number;
  height: number;
  rects: [number, number, number, number][];
}

const BCID: Record<Symbology, string> = { code128: 'code128', ean13: 'ean13', qr: 'qrcode' };
/** Linear codes are drawn this many modules tall: about a quarter of their width, as printed on receipts. */
const LINEAR_HEIGHT = 30;

export const SYMBOLOGY_NAMES: Record<Symbology, string> = {
  code128: 'Code 128',
  ean13: 'EAN-13',
  qr: 'QR code',
};

/** The code's modules as rectangles; undefined when the encoder refuses the value. */
export function barcodeShape(
  code: { value: string; symbology: Symbology },
  encoder: BarcodeEncoder,
): BarcodeShape | undefined {
  let encoded: unknown;
  try {
    encoded = encoder.raw({ bcid: BCID[code.symbology], text: code.value });
  } catch {
    return undefined;
  }
  const first = Array.isArray(encoded) ? (encoded[0] as Record<string, unknown> | undefined) : undefined;
  if (!first) return undefined;
  if (Array.isArray(first.sbs)) {
    // Bar and space widths, alternating, a bar first.
    const widths = first.sbs as number[];
    const rects: BarcodeShape['rects'] = [];
    let x = 0;
    widths.forEach((width, index) => {
      if (index % 2 === 0 && width > 0) rects.push([x, 0, width, LINEAR_HEIGHT]);
      x += width;
    });
    return { width: x, height: LINEAR_HEIGHT, rects };
  }
  if (Array.isArray(first.pixs) && typeof first.pixx === 'number' && typeof first.pixy === 'number') {
    // A matrix, row by row: each row's runs of dark modules become one rectangle.
    const pixels = first.pixs as number[];
    const { pixx, pixy } = first as { pixx: number; pixy: number };
    const rects: BarcodeShape['rects'] = [];
    for (let y = 0; y < pixy; y += 1) {
      let x = 0;
      while (x < pixx) {
        if (!pixels[y * pixx + x]) {
          x += 1;
          continue;
        }
        const start = x;
        while (x < pixx && pixels[y * pixx + x]) x += 1;
        rects.push([start, y, x - start, 1]);
      }
    }
    return { width: pixx, height: pixy, rects };
  }
  return undefined;
}

/** The shape as an SVG element, a quiet zone around it, sized by its viewBox. */
export function barcodeSvg(shape: BarcodeShape, label: string): string {
  const linear = shape.height === LINEAR_HEIGHT;
  const quiet = linear ? 10 : 4;
  const width = shape.width + 2 * quiet;
  const height = shape.height + 2 * (linear ? 2 : quiet);
  const top = (height - shape.height) / 2;
  const path = shape.rects.map(([x, y, w, h]) => `M${x + quiet} ${y + top}h${w}v${h}h${-w}z`).join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" ` +
    `width="${width * (linear ? 2 : 4)}" height="${height * (linear ? 2 : 4)}" role="img" ` +
    `aria-label="${label.replace(/[&<>"']/g, '')}" shape-rendering="crispEdges">` +
    `<rect width="${width}" height="${height}" fill="#fff"/><path d="${path}" fill="#000"/></svg>`
  );
}
