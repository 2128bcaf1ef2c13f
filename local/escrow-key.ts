/**
 * The local stack's escrow key: a key pair on disk plays the part the KMS key plays in AWS, behind the
 * same interface. Only the local stack loads it; no Lambda bundle can reach this folder.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EscrowKey } from '../lib/crypto/escrow.js';
import { rsaOaepSha256Decrypt } from '../lib/crypto/envelope.js';
import {
  decodePrivateKey,
  generateRsaKeyPair,
  keyPolicyViolation,
  publicKeyDer,
  publicKeyFingerprint,
} from '../lib/crypto/keys.js';
import { ensurePrivateDir, ensurePrivateFile } from './private-files.js';

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

  /** Loads `<dir>/escrow-key.pem`, generating it (PKCS#8 PEM) on first start; folder 0700, file 0600. */
  static async loadOrCreate(dir: string): Promise<LocalEscrowKey> {
    const file = join(dir, KEY_FILE);
    await ensurePrivateDir(dir);
    try {
      const pem = await readFile(file, 'utf8');
      await ensurePrivateFile(file);
      return LocalEscrowKey.fromPem(pem, file);
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
    // writeFile's mode is masked by the umask; the key must not depend on the shell's setting.
    await ensurePrivateFile(file);
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
