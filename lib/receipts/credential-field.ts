import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';

/**
 * The merchant's presentable receipt (issue 39; docs/ENVELOPE.md, "The receipt credential"): an SD-JWT
 * VC of this receipt issued at the till with the SDK's issueReceiptCredential, every disclosure
 * included. Checked by lib/merchants/receipt-credential.ts before anything is stored or charged, then
 * sealed in the receipt beside merchantSignature.
 */
export const MAX_RECEIPT_CREDENTIAL = 262_144;

export const receiptCredentialSchema = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(MAX_RECEIPT_CREDENTIAL)
    .regex(
      /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+~(?:[A-Za-z0-9_-]+~)*$/,
      'must be a compact SD-JWT (<jwt>~<disclosure>~…~)',
    )
    .meta({
      id: 'ReceiptCredential',
      description:
        'The receipt as an SD-JWT VC (`typ: dc+sd-jwt`, ES256 by an active signing key of the merchant client, ' +
        "`iss` its JWKS URL, `vct: VerifiablevReceiptSDJWT`) with every disclosure, as the SDK's " +
        'issueReceiptCredential makes it. The service checks it and seals it in the receipt; the cardholder ' +
        "presents parts of it (presentReceipt) and anyone checks a presentation with the merchant's JWKS " +
        '(verifyReceiptPresentation). docs/ENVELOPE.md, "The receipt credential".',
    }),
);

/** The routes' prose for `receiptCredential` (encrypt and payment create declare it in their docs). */
export const RECEIPT_CREDENTIAL_DETAILS =
  '**Presentable receipts.** The body may carry `receiptCredential`: the receipt as an SD-JWT VC ' +
  "(`typ: dc+sd-jwt`) the till issued with the SDK's `issueReceiptCredential` (`@receipt-service/sdk/credential`), " +
  'every disclosure included. Before anything is stored or charged the service checks that it is signed ' +
  "ES256 by an active signing key of this merchant client (its JWKS), that its `iss` is this client's JWKS " +
  'URL (`…/api/v1/merchants/{merchantClientId}/jwks.json`), that no disclosure is altered, and that its ' +
  "receipt id (`PurchaseReceipt.iD`), date (`PurchaseReceipt.issueDate`, the transaction's local date), " +
  'currency and total (`MonetaryTotal.payableAmount`) are those of the receipt sealed; a flattened request ' +
  'with a credential should give `transactionDate`. It is then sealed in the receipt as `receiptCredential`, ' +
  'beside `merchantSignature` (which does not cover it). A credential that does not stand is `400 ' +
  'invalid_signature`, `details.fields` naming `receiptCredential` and `details.reason` one of ' +
  '`credential_signature`, `credential_issuer`, `credential_claims`. See docs/ENVELOPE.md, "The receipt credential".';

export const RECEIPT_CREDENTIAL_ERROR =
  ' invalid_signature naming receiptCredential: the receipt credential does not stand (signature, key, ' +
  'issuer or claims; `details.reason`).';
