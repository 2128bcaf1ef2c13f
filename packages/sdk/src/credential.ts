/**
 * `@receipt-service/sdk/credential`: presentable receipts (SD-JWT VCs). The till issues one with
 * issueReceiptCredential and sends it as `receiptCredential`; the cardholder's app presents part of the
 * sealed one with presentReceipt; anyone checks a presentation with verifyReceiptPresentation and the
 * merchant's JWKS. An entry point of its own because @sd-jwt/core, @sd-jwt/decode and jose are
 * optional peer dependencies: an app that presents receipts installs them beside the SDK.
 */
export {
  issueReceiptCredential,
  merchantJwksPath,
  presentableReceiptClaims,
  presentReceipt,
  RECEIPT_CREDENTIAL_TYP,
  RECEIPT_PRESENTATION_BASICS,
  ReceiptCredentialError,
  receiptCredentialClaims,
  verifyReceiptPresentation,
  type IssueOptions,
  type ReceiptJwks,
  type ReceiptCredentialClaims,
  type VerifiedPresentation,
} from '@receipt-service/receipt-core/credential';
/** The wallet labels of the vReceipt claims, for showing what a presentation discloses and hides. */
export { VRECEIPT_CLAIM_LABELS } from '@receipt-service/receipt-core';
