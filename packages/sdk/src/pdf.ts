/**
 * `@receipt-service/sdk/pdf`: a receipt as a small PDF, made on the device with jsPDF. An entry point
 * of its own because jsPDF is an optional peer dependency: an app that makes PDFs installs `jspdf`
 * beside the SDK, and one that does not installs neither it nor its optional helpers.
 */
export { renderReceiptPdf, type PdfRenderOptions } from './render/pdf.js';
export type { BarcodeEncoder } from './render/barcode.js';
export type { Receipt, RenderOptions } from './render/view.js';
