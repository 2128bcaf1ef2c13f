/**
 * The escrow key seals receipts for recipients who are not registered yet. In AWS it is an RSA-2048 KMS
 * key: wrapping uses its cached public key locally and only unwrapping calls KMS. Locally a key pair on
 * disk plays the same role behind the same interface.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DecryptCommand, DescribeKeyCommand, GetPublicKeyCommand, type KMSClient } from '@aws-sdk/client-kms';
import { DecryptionError, ServiceUnavailableError } from '../errors.js';
import { rsaOaepSha256Decrypt } from './envelope.js';
import {
  decodePrivateKey,
  generateRsaKeyPair,
  keyPolicyViolation,
  publicKeyDer,
  publicKeyFingerprint,
} from './keys.js';

export interface EscrowKey {
  /** Goes into envelopes as keyId / escrowKeyId. */
  readonly keyId: string;
  publicKey(): Promise<KeyObject>;
  /** RSA-OAEP-256 unwrap; DecryptionError when the key is refused, ServiceUnavailableError on an outage. */
  unwrap(encryptedKey: Buffer): Promise<Buffer>;
  /** Health: resolves when the key is usable. */
  check(): Promise<void>;
}

const KMS_ALGORITHM = 'RSAES_OAEP_SHA_256';
// Decrypt answers these when the ciphertext, not the service, is at fault.
const KMS_REFUSALS = new Set(['InvalidCiphertextException', 'IncorrectKeyException']);

function unavailable(what: string, error: unknown): ServiceUnavailableError {
  const name = error instanceof Error ? error.name : typeof error;
  return Object.assign(
    new ServiceUnavailableError(`Escrow key service unavailable (${what})`, { reason: name }),
    {
      cause: error,
    },
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
      throw new ServiceUnavailableError('Escrow key is not enabled', { keyState: state ?? 'unknown' });
  }
}

const KEY_FILE = 'escrow-key.pem';

export class LocalEscrowKey implements EscrowKey {
  readonly keyId: string;
  private readonly publicKeyObject: KeyObject;

  private constructor(private readonly privateKey: KeyObject) {
    const violation = keyPolicyViolation(privateKey);
    if (violation !== undefined) throw new Error(`Local escrow key: ${violation}`);
    this.publicKeyObject = createPublicKey(privateKey);
    this.keyId = `local-escrow-${publicKeyFingerprint(publicKeyDer(this.publicKeyObject)).slice(0, 16)}`;
  }

  /** Loads `<dir>/escrow-key.pem`, generating it (PKCS#8 PEM, mode 0600) on first start. */
  static async loadOrCreate(dir: string): Promise<LocalEscrowKey> {
    const file = join(dir, KEY_FILE);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    try {
      return LocalEscrowKey.fromPem(await readFile(file, 'utf8'), file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const pem = await LocalEscrowKey.generatePem();
    try {
      // 'wx' so that two processes starting together cannot overwrite each other's key.
      await writeFile(file, pem, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return LocalEscrowKey.fromPem(await readFile(file, 'utf8'), file);
    }
    return LocalEscrowKey.fromPem(pem, file);
  }

  /** A fresh key that lives as long as the process (`--in-memory` runs and tests). */
  static async inMemory(): Promise<LocalEscrowKey> {
    return LocalEscrowKey.fromPem(await LocalEscrowKey.generatePem(), 'memory');
  }

  private static async generatePem(): Promise<string> {
    const { privateKey } = await generateRsaKeyPair();
    const key = createPrivateKey({ key: Buffer.from(privateKey, 'base64'), format: 'der', type: 'pkcs8' });
    return key.export({ type: 'pkcs8', format: 'pem' }).toString();
  }

  private static fromPem(pem: string, source: string): LocalEscrowKey {
    let key: KeyObject;
    try {
      key = decodePrivateKey(pem);
    } catch (error) {
      // Never regenerate over a damaged file: receipts escrowed under it would be lost for good.
      throw new Error(`Escrow key at ${source} cannot be read; fix or remove it`, { cause: error });
    }
    return new LocalEscrowKey(key);
  }

  async publicKey(): Promise<KeyObject> {
    return this.publicKeyObject;
  }

  async unwrap(encryptedKey: Buffer): Promise<Buffer> {
    return rsaOaepSha256Decrypt(this.privateKey, encryptedKey);
  }

  async check(): Promise<void> {}
}
