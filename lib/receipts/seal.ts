import { sealEnvelope, type Recipient, type SealedEnvelope } from '../crypto/envelope.js';
import type { AppDeps } from '../app/deps.js';
import { EncryptionError } from './vocabulary.js';
import type { DigitalReceipt } from './schemas.js';

/**
 * Seals a receipt for one recipient, its identifying fields bound to the ciphertext (docs/ENVELOPE.md).
 * A failure is logged by its name only and answered as the uniform ENCRYPTION_ERROR.
 */
export function sealReceipt(
  deps: Pick<AppDeps, 'logger'>,
  receipt: DigitalReceipt,
  recipient: Recipient,
  context: Record<string, string>,
): SealedEnvelope {
  try {
    return sealReceiptEnvelope(receipt, recipient);
  } catch (error) {
    deps.logger.error('sealing failed', {
      error: error instanceof Error ? error.name : 'unknown',
      ...context,
    });
    throw new EncryptionError();
  }
}

/** The seal itself, failures thrown as they come: a caller that can fall back (to escrow) catches them. */
export function sealReceiptEnvelope(receipt: DigitalReceipt, recipient: Recipient): SealedEnvelope {
  return sealEnvelope(
    Buffer.from(JSON.stringify(receipt), 'utf8'),
    {
      version: receipt.version,
      receiptId: receipt.receiptId,
      merchantId: receipt.merchant.merchantId,
      transactionId: receipt.transaction.transactionId,
    },
    recipient,
  );
}
