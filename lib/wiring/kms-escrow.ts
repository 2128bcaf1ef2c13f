/**
 * The escrow key in AWS: an RSA-2048 KMS key. Wrapping uses its cached public key locally and only
 * unwrapping calls KMS.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { DecryptCommand, DescribeKeyCommand, GetPublicKeyCommand, type KMSClient } from '@aws-sdk/client-kms';
import type { EscrowKey } from '../crypto/escrow.js';
import { DecryptionError, KeyUnavailableError } from '../crypto/errors.js';
import { keyPolicyViolation } from '../crypto/keys.js';

const KMS_ALGORITHM = 'RSAES_OAEP_SHA_256';
// Decrypt answers these when the ciphertext, not the service, is at fault.
const KMS_REFUSALS = new Set(['InvalidCiphertextException', 'IncorrectKeyException']);

function unavailable(what: string, error: unknown): KeyUnavailableError {
  const name = error instanceof Error ? error.name : typeof error;
  return new KeyUnavailableError(
    `Escrow key service unavailable (${what})`,
    { reason: name },
    { cause: error },
  );
}

export class KmsEscrowKey implements EscrowKey {
  private pending: Promise<KeyObject> | undefined;

  /** `keyId` may be a key id, ARN or alias name; it is what envelopes show, so an alias keeps ARNs private. */
  constructor(
    private readonly kms: KMSClient,
    readonly keyId: string,
  ) {}

  publicKey(): Promise<KeyObject> {
    if (this.pending === undefined) {
      // Concurrent first callers share this one request; a failure is forgotten so the next call retries.
      const loading = this.load();
      this.pending = loading;
      loading.catch(() => {
        if (this.pending === loading) this.pending = undefined;
      });
    }
    return this.pending;
  }

  private async load(): Promise<KeyObject> {
    let response;
    try {
      response = await this.kms.send(new GetPublicKeyCommand({ KeyId: this.keyId }));
    } catch (error) {
      throw unavailable('GetPublicKey', error);
    }
    // A wrong key here is a deployment mistake: fail loudly rather than seal receipts nobody can open.
    if (response.KeySpec !== 'RSA_2048' || response.KeyUsage !== 'ENCRYPT_DECRYPT') {
      throw new Error(
        `Escrow key ${this.keyId} must be an RSA_2048 ENCRYPT_DECRYPT key, not ${response.KeySpec}/${response.KeyUsage}`,
      );
    }
    if (!response.EncryptionAlgorithms?.includes(KMS_ALGORITHM)) {
      throw new Error(`Escrow key ${this.keyId} does not support ${KMS_ALGORITHM}`);
    }
    if (response.PublicKey === undefined) throw new Error(`KMS returned no public key for ${this.keyId}`);
    const key = createPublicKey({ key: Buffer.from(response.PublicKey), format: 'der', type: 'spki' });
    const violation = keyPolicyViolation(key);
    if (violation !== undefined) throw new Error(`Escrow key ${this.keyId}: ${violation}`);
    return key;
  }

  async unwrap(encryptedKey: Buffer): Promise<Buffer> {
    let response;
    try {
      response = await this.kms.send(
        new DecryptCommand({
          KeyId: this.keyId,
          CiphertextBlob: encryptedKey,
          EncryptionAlgorithm: KMS_ALGORITHM,
        }),
      );
    } catch (error) {
      if (error instanceof Error && KMS_REFUSALS.has(error.name))
        throw new DecryptionError(`kms refused the wrapped key: ${error.name}`);
      throw unavailable('Decrypt', error);
    }
    if (response.Plaintext === undefined) throw new DecryptionError('kms returned no plaintext');
    return Buffer.from(response.Plaintext);
  }

  async check(): Promise<void> {
    await this.publicKey();
    let response;
    try {
      response = await this.kms.send(new DescribeKeyCommand({ KeyId: this.keyId }));
    } catch (error) {
      throw unavailable('DescribeKey', error);
    }
    const state = response.KeyMetadata?.KeyState;
    if (state !== 'Enabled')
      throw new KeyUnavailableError('Escrow key is not enabled', { keyState: state ?? 'unknown' });
  }
}
