/**
 * Exports of an opened receipt into the formats the world already reads (docs/FORMATS.md): pure functions,
 * run where the receipt is opened, never by the service, which cannot read a receipt.
 */
export * from './receipt.js';
export { toUblInvoice, type UblBuyer, type UblOptions } from './ubl.js';
export {
  toVReceipt,
  vReceiptCredentialConfiguration,
  VRECEIPT_CLAIM_LABELS,
  VRECEIPT_VCT,
  type VReceiptClaims,
  type VReceiptIssuerDisplay,
} from './vreceipt.js';
export { toVersaReceipt, VERSA_SCHEMA_VERSION, type VersaReceipt } from './versa.js';
export { toSchemaOrgOrder, type SchemaOrgOrder } from './schema-org.js';
export { CSV_COLUMNS, toCsv } from './csv.js';
