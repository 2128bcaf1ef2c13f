import { AppError } from '../kernel/errors.js';

/**
 * The receipts feature's vocabulary: the errors it throws, the metrics it counts and the audit kinds it
 * writes, each registered into the kernel's catalogue by declaration merging (the blocks below). A new
 * one is added here, never under lib/kernel/, in lib/db/audit.ts or in lib/openapi/.
 */
declare module '../kernel/errors.js' {
  interface ErrorRegistry {
    ClaimLimitError: ClaimLimitError;
    EncryptionError: EncryptionError;
  }
}

declare module '../kernel/telemetry.js' {
  interface MetricDimensions {
    /** A receipt sealed for a registered user's key and stored. */
    ReceiptsEncrypted: Record<string, never>;
    /** A receipt sealed for the escrow key and stored. */
    ReceiptsEscrowed: Record<string, never>;
    /** A decryption refused with the uniform 403; the reason is here and in the audit, never in the response. */
    DecryptRefusals: { reason: DecryptRefusal };
    /** An escrowed receipt released to a user by a claim with its card transaction. */
    ReceiptsClaimed: Record<string, never>;
    /** A claim or a match refused because the card's daily allowance of transactions with the client is spent. */
    ClaimLimitRefusals: Record<string, never>;
    /** A receipt escrowed because its registered recipient's stored key could not be sealed to. */
    RecipientSealFailures: Record<string, never>;
  }
}

declare module '../db/audit.js' {
  interface AuditKinds {
    'receipt.encrypt': true;
    'receipt.decrypt': true;
    'escrow.wrap': true;
    'escrow.claim': true;
    'escrow.claim-request': true;
    'evidence.backfill': true;
    'receipts.match': true;
    'receipts.migrate': true;
  }
}

/** Why a decryption was refused, as a metric dimension: a closed list, unlike the audit's free text. */
export type DecryptRefusal =
  | 'token_unknown'
  | 'token_expired'
  | 'token_purpose'
  | 'token_other_client'
  | 'user_other_client'
  | 'token_other_key'
  | 'envelope_escrowed'
  | 'envelope_other_key'
  | 'private_key_invalid'
  | 'private_key_mismatch'
  | 'envelope_unopenable'
  | 'content_not_receipt';

/** A user's claims have named the day's allowance of transactions. */
export class ClaimLimitError extends AppError<429> {
  readonly status = 429 as const;
  readonly code = 'CLAIM_LIMIT_EXCEEDED';
  constructor(retryAfterSeconds: number, dailyLimit: number) {
    super(`At most ${dailyLimit} transactions may be claimed or matched per card per day`, undefined, {
      'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    });
  }
}

export class EncryptionError extends AppError<500> {
  readonly status = 500 as const;
  readonly code = 'ENCRYPTION_ERROR';
  constructor() {
    super('Failed to encrypt receipt');
  }
}
