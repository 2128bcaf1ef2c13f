/**
 * The local stack's log signing key: a P-256 key pair on disk plays the part the KMS key plays in AWS
 * (lib/wiring/kms-log-key.ts), behind the same port. Only the local stack loads it.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { LogSigningKey } from '../lib/key-log/tree-head.js';
import { ensurePrivateDir, ensurePrivateFile } from './private-files.js';

const KEY_FILE = 'log-signing-key.pem';

export class LocalLogSigningKey implements LogSigningKey {
  private constructor(private readonly privateKey: KeyObject) {
    if (privateKey.asymmetricKeyType !== 'ec' || privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
      throw new Error('Local log signing key: not a P-256 key');
  }

  /** A key of this process only (`npm start --in-memory`, tests): its tree heads die with it. */
  static inMemory(): LocalLogSigningKey {
    return new LocalLogSigningKey(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
  }

  /** Loads `<dir>/log-signing-key.pem`, generating it (PKCS#8 PEM) on first start; folder 0700, file 0600. */
  static async loadOrCreate(dir: string): Promise<LocalLogSigningKey> {
    const file = join(dir, KEY_FILE);
    await ensurePrivateDir(dir);
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    try {
      // 'wx': never overwrite a key whose tree heads are already out there.
      await writeFile(file, pem, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    await ensurePrivateFile(file);
    return new LocalLogSigningKey(createPrivateKey(await readFile(file, 'utf8')));
  }

  async publicJwk(): Promise<JWK> {
    const { x, y } = createPublicKey(this.privateKey).export({ format: 'jwk' });
    const jwk: JWK = { kty: 'EC', crv: 'P-256', x: x!, y: y! };
    return { ...jwk, kid: await calculateJwkThumbprint(jwk, 'sha256'), alg: 'ES256', use: 'sig' };
  }

  async signEs256(signingInput: Uint8Array): Promise<Uint8Array> {
    return sign('sha256', signingInput, { key: this.privateKey, dsaEncoding: 'ieee-p1363' });
  }
}
