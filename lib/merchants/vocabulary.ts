import { AppError, type ErrorDetails } from '../kernel/errors.js';

/**
 * The merchants feature's vocabulary: the errors it throws, the metrics it counts and the audit kinds it
 * writes, each registered into the kernel's catalogue by declaration merging (the blocks below). A new
 * one is added here, never under lib/kernel/, in lib/db/audit.ts or in lib/openapi/.
 */
declare module '../kernel/errors.js' {
  interface ErrorRegistry {
    ReceiptSignatureRefusedError: ReceiptSignatureRefusedError;
    KeyChangeProofRequiredError: KeyChangeProofRequiredError;
    ReceiptCredentialRefusedError: ReceiptCredentialRefusedError;
  }
}

declare module '../db/audit.js' {
  interface AuditKinds {
    'signing-key.register': true;
    'signing-key.revoke': true;
    'signing-policy.set': true;
    'signing-key.take-over': true;
    'signing-key.reset': true;
    'receipt.signature': true;
    'receipt.credential': true;
  }
}

/**
 * A merchant's Receipt-Signature that does not stand (lib/merchants/receipt-signature.ts), or a
 * missing one where the merchant requires signatures: refused before anything is charged or stored.
 * Unlike a forged gateway event, the caller is an authenticated merchant checking its own till's
 * work, so the message names what failed.
 */
export class ReceiptSignatureRefusedError extends AppError<400> {
  readonly status = 400 as const;
  readonly code = 'invalid_signature';
  constructor(message: string, reason: string, extra: ErrorDetails = {}) {
    super(message, { reason, ...extra, fields: [{ field: 'Receipt-Signature', message }] });
  }
}

/**
 * A change to a merchant's signing keys or policy without a valid Key-Change-Proof, once the merchant
 * has an active key: its API key alone no longer changes them.
 */
export class KeyChangeProofRequiredError extends AppError<403> {
  readonly status = 403 as const;
  readonly code = 'KEY_CHANGE_PROOF_REQUIRED';
  constructor(message: string, reason: string) {
    super(message, { reason, fields: [{ field: 'Key-Change-Proof', message }] });
  }
}

/**
 * A merchant's receiptCredential that does not stand (lib/merchants/receipt-credential.ts): a bad
 * signature, a key that is not the caller's active one, or claims that are not this receipt's. The
 * signature family's code, naming the body field; refused before anything is charged or stored.
 */
export class ReceiptCredentialRefusedError extends AppError<400> {
  readonly status = 400 as const;
  readonly code = 'invalid_signature';
  constructor(message: string, reason: string, extra: ErrorDetails = {}) {
    super(message, { reason, ...extra, fields: [{ field: 'receiptCredential', message }] });
  }
}
