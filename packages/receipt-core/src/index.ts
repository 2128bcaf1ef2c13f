/**
 * The rules the service and a device share, one copy of each: the DigitalReceipt a flattened request
 * describes, refund receipts and their amounts, RFC 8785 canonical JSON, merchant signatures, and the
 * strict base64 and WebCrypto helpers they stand on. The service (lib/) imports them by this
 * package's name; the SDK re-exports what an app calls and carries this package inside its tarball.
 */
export * from './base64.js';
export * from './digital-receipt.js';
export * from './key-log.js';
export * from './merkle.js';
export * from './line-gross.js';
export * from './refund-receipt.js';
export * from './signing.js';
export * from './tax-breakdown.js';
export * from './webcrypto.js';
export {
  CSV_COLUMNS,
  ReceiptFormatError,
  TAX_CATEGORIES,
  toCsv,
  toSchemaOrgOrder,
  toUblInvoice,
  toVersaReceipt,
  toVReceipt,
  vReceiptCredentialConfiguration,
  VERSA_SCHEMA_VERSION,
  VRECEIPT_CLAIM_LABELS,
  VRECEIPT_VCT,
  type DigitalReceipt12,
  type ExportFormat,
  type SchemaOrgOrder,
  type TaxCategory,
  type UblBuyer,
  type UblOptions,
  type VersaReceipt,
  type VReceiptClaims,
  type VReceiptIssuerDisplay,
} from './formats/index.js';
