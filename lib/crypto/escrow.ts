/**
 * The escrow key seals receipts for recipients who are not registered yet. Its implementations live
 * with what they need: the KMS key beside the other AWS wiring (lib/wiring/kms-escrow.ts), the key
 * file of the local stack in local/escrow-key.ts. This module stays free of SDKs and the filesystem.
 */
import type { KeyObject } from 'node:crypto';

export interface EscrowKey {
  /** Goes into envelopes as keyId / escrowKeyId. */
  readonly keyId: string;
  publicKey(): Promise<KeyObject>;
  /** RSA-OAEP-256 unwrap; DecryptionError when the key is refused, KeyUnavailableError on an outage. */
  unwrap(encryptedKey: Buffer): Promise<Buffer>;
  /** Health: resolves when the key is usable. */
  check(): Promise<void>;
}
