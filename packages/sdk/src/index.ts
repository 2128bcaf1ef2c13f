export { createClient, type ClientOptions, type ReceiptServiceClient } from './client.js';
export {
  DEFAULT_RETRY,
  DEFAULT_TIMEOUT_MS,
  RequestTimeoutError,
  systemClock,
  type RetryClock,
  type RetryOptions,
} from './retry.js';
export type { components, operations, paths } from './generated/api.js';
export {
  EnvelopeError,
  KEY_WRAP_ALGORITHMS,
  openEnvelope,
  openEnvelopeBytes,
  type Envelope,
  type EphemeralPublicKey,
  type KeyWrapAlgorithm,
} from './envelope.js';
export {
  exportPrivateKey,
  generateDeviceKey,
  importPrivateKey,
  type DeviceKey,
  type DeviceKeyOptions,
  type PublicJwk,
} from './keys.js';
export {
  verifyWebhook,
  WebhookVerificationError,
  type PaymentStatus,
  type WebhookEvent,
  type WebhookEventType,
  type WebhookHeaders,
} from './webhooks.js';
export { RECEIPT_STYLE_HASH, renderReceiptHtml, type HtmlRenderOptions } from './render/html.js';
export type { BarcodeEncoder } from './render/barcode.js';
export { renderReceiptText } from './render/text.js';
export type { Receipt, RenderOptions } from './render/view.js';
export {
  FLATTENED_DEFAULTS,
  RECEIPT_VERSION,
  mockItems,
  toDigitalReceipt,
  type DigitalReceipt,
  type FlattenedReceipt,
} from '@receipt-service/receipt-core';
export {
  canonicalJson,
  generateSigningKey,
  parseSignature,
  ReceiptSignatureError,
  SIGNING_ALGORITHMS,
  signedReceiptBytes,
  signingKeyId,
  signingPublicJwk,
  signReceipt,
  signKeyProof,
  verifyReceiptSignature,
  verifyKeyInLog,
  verifyTreeHead,
  verifyConsistency,
  verifyInclusion,
  KeyLogError,
  type KeyLogEvidence,
  type KeyLogLeaf,
  type SignedTreeHead,
  type TreeHead,
  type MerchantSignature,
  type ParsedSignature,
  type SignableReceipt,
  type SignatureProblem,
  type SigningAlgorithm,
  type SigningKey,
  type SigningPublicJwk,
} from '@receipt-service/receipt-core';
/** Standard formats, made where the receipt is opened (docs/FORMATS.md). */
export {
  CSV_COLUMNS,
  ReceiptFormatError,
  TAX_CATEGORIES,
  toCsv,
  toSchemaOrgOrder,
  toUblInvoice,
  toVersaReceipt,
  toVReceipt,
  VERSA_SCHEMA_VERSION,
  VRECEIPT_VCT,
  type DigitalReceipt12,
  type ExportFormat,
  type SchemaOrgOrder,
  type TaxCategory,
  type UblBuyer,
  type UblOptions,
  type VersaReceipt,
  type VReceiptClaims,
} from '@receipt-service/receipt-core';
export {
  refundedBy,
  RefundItemsError,
  signedRefundReceiptId,
  toRefundReceipt,
  type RefundRequest,
} from '@receipt-service/receipt-core';
/** The merchant key log: evidence for verifyReceiptSignature's `keyLog`, and a merchant's watch. */
export { fetchKeyLogEvidence, watchMerchantKeys } from './key-log.js';
