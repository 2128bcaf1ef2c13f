/** Project Wycheproof vectors (C2SP/wycheproof), vendored in test/vendor/wycheproof with their licence. */
import { describe, expect, it } from '@jest/globals';
import { createPrivateKey, type JsonWebKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { aesGcmDecrypt, decryptFlattenedJwe, rsaOaepSha256Decrypt } from '../../../lib/crypto/envelope.js';
import { parsePrivateKey } from '../../../lib/crypto/keys.js';
import { expectDecryptionError } from './support.js';

// Inside the project, so the vectors are always there: a missing file fails the test instead of skipping it.
const vectorDir = fileURLToPath(new URL('../../vendor/wycheproof/', import.meta.url));

type Result = 'valid' | 'invalid' | 'acceptable';
interface VectorFile<Group> {
  numberOfTests: number;
  testGroups: Group[];
}
interface OaepGroup {
  keySize: number;
  sha: string;
  mgfSha: string;
  privateKeyPem: string;
  tests: Array<{ tcId: number; msg: string; ct: string; label: string; result: Result }>;
}
interface GcmGroup {
  keySize: number;
  ivSize: number;
  tagSize: number;
  tests: Array<{
    tcId: number;
    key: string;
    iv: string;
    aad: string;
    msg: string;
    ct: string;
    tag: string;
    result: Result;
  }>;
}
interface JweGroup {
  comment: string;
  private: JsonWebKey & { alg?: string };
  tests: Array<{ tcId: number; enc: string; jwe: string; pt?: string; result: Result }>;
}

const load = <Group>(name: string): VectorFile<Group> =>
  JSON.parse(readFileSync(`${vectorDir}${name}`, 'utf8')) as VectorFile<Group>;
const hex = (value: string): Buffer => Buffer.from(value, 'hex');

describe('Wycheproof', () => {
  it('RSA-OAEP-2048 SHA-256/MGF1-SHA-256: all 37 cases', () => {
    const file = load<OaepGroup>('rsa_oaep_2048_sha256_mgf1sha256_test.json');
    let run = 0;
    for (const group of file.testGroups) {
      expect([group.keySize, group.sha, group.mgfSha]).toEqual([2048, 'SHA-256', 'SHA-256']);
      const key = parsePrivateKey(group.privateKeyPem);
      for (const test of group.tests) {
        const label = test.label === '' ? undefined : hex(test.label);
        if (test.result === 'valid') {
          expect({
            tcId: test.tcId,
            msg: rsaOaepSha256Decrypt(key, hex(test.ct), label).toString('hex'),
          }).toEqual({
            tcId: test.tcId,
            msg: test.msg,
          });
        } else {
          expect(test.result).toBe('invalid');
          expectDecryptionError(() => rsaOaepSha256Decrypt(key, hex(test.ct), label));
        }
        run += 1;
      }
    }
    expect(run).toBe(37);
    expect(file.numberOfTests).toBe(37);
  });

  it('AES-GCM, 256-bit key, 96-bit IV, 128-bit tag', () => {
    const file = load<GcmGroup>('aes_gcm_test.json');
    const groups = file.testGroups.filter((g) => g.keySize === 256 && g.ivSize === 96 && g.tagSize === 128);
    let valid = 0;
    let invalid = 0;
    for (const test of groups.flatMap((g) => g.tests)) {
      const open = () =>
        aesGcmDecrypt(hex(test.key), hex(test.iv), hex(test.ct), hex(test.tag), hex(test.aad));
      if (test.result === 'valid') {
        expect({ tcId: test.tcId, msg: open().toString('hex') }).toEqual({ tcId: test.tcId, msg: test.msg });
        valid += 1;
      } else {
        expect(test.result).toBe('invalid');
        expectDecryptionError(open);
        invalid += 1;
      }
    }
    expect(valid + invalid).toBe(66);
    expect(valid).toBeGreaterThan(0);
    expect(invalid).toBeGreaterThan(0);
  });

  it('JWE with an RSA-OAEP-256 key through decryptFlattenedJwe', () => {
    const file = load<JweGroup>('json_web_encryption_test.json');
    const groups = file.testGroups.filter((g) => g.private.kty === 'RSA' && g.private.alg === 'RSA-OAEP-256');
    let a256gcm = 0;
    let opened = 0;
    let refused = 0;
    for (const group of groups) {
      const key = createPrivateKey({ key: group.private, format: 'jwk' });
      for (const test of group.tests) {
        const parts = test.jwe.split('.');
        expect(parts).toHaveLength(5);
        const [protectedHeader, encryptedKey, iv, ciphertext, tag] = parts as [
          string,
          string,
          string,
          string,
          string,
        ];
        const jwe = { protected: protectedHeader, encrypted_key: encryptedKey, iv, ciphertext, tag };
        const header = JSON.parse(Buffer.from(protectedHeader, 'base64url').toString('utf8')) as {
          alg: string;
        };
        const inProfile = test.enc === 'A256GCM' && header.alg === 'RSA-OAEP-256';
        if (test.enc === 'A256GCM') a256gcm += 1;
        if (test.result === 'valid' && inProfile) {
          expect(decryptFlattenedJwe(jwe, key).toString('hex')).toBe(test.pt);
          opened += 1;
        } else {
          // Invalid vectors must fail; valid ones with another enc or alg are outside the allow-list.
          expectDecryptionError(() => decryptFlattenedJwe(jwe, key));
          refused += 1;
        }
      }
    }
    expect({ a256gcm, opened, refused }).toEqual({ a256gcm: 7, opened: 1, refused: 19 });
  });
});
