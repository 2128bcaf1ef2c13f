import { beforeAll, describe, expect, it } from '@jest/globals';
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  ECDH,
  generateKeyPair,
  generateKeyPairSync,
  randomBytes,
} from 'node:crypto';
import { promisify } from 'node:util';
import {
  decodeBase64,
  decodeBase64Url,
  isCanonicalBase64,
  isCanonicalBase64Url,
} from '../../../lib/crypto/base64.js';
import {
  generateRsaKeyPair,
  matchesPublicKey,
  parsePrivateKey,
  parsePublicKey,
  publicKeyDer,
  publicKeyFingerprint,
} from '../../../lib/crypto/keys.js';
import { LruCache } from '../../../lib/kernel/lru.js';
import { DecryptionError, InvalidPublicKeyError } from '../../../lib/crypto/errors.js';
import { expectDecryptionError, testKeyPair, type TestKeyPair } from './support.js';

let pair: TestKeyPair;
let other: TestKeyPair;

beforeAll(async () => {
  [pair, other] = await Promise.all([testKeyPair(), testKeyPair()]);
});

/** An RSA public key with an arbitrary (not necessarily factorable) modulus, to probe the size limits cheaply. */
function rsaPublicKeyWithBits(bits: number): string {
  const modulus = randomBytes(bits / 8);
  modulus[0]! |= 0x80;
  modulus[modulus.length - 1]! |= 1;
  const key = createPublicKey({
    key: { kty: 'RSA', n: modulus.toString('base64url'), e: 'AQAB' },
    format: 'jwk',
  });
  return key.export({ type: 'spki', format: 'der' }).toString('base64');
}

function invalidRequest(run: () => unknown): InvalidPublicKeyError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidPublicKeyError);
    return error as InvalidPublicKeyError;
  }
  throw new Error('expected an InvalidPublicKeyError');
}

describe('generateRsaKeyPair', () => {
  it('produces RSA-2048, e=65537, as base64 DER SPKI and PKCS#8', () => {
    expect(pair.publicKeyText).toMatch(/^MIIBIjAN/);
    expect(pair.privateKeyText).toMatch(/^MIIE/);
    expect(pair.publicKey.asymmetricKeyDetails).toEqual({ modulusLength: 2048, publicExponent: 65537n });
    const pkcs8 = createPrivateKey({
      key: Buffer.from(pair.privateKeyText, 'base64'),
      format: 'der',
      type: 'pkcs8',
    });
    expect(pkcs8.asymmetricKeyType).toBe('rsa');
    expect(matchesPublicKey(pkcs8, pair.publicKeyText)).toBe(true);
  });

  it('does not block the event loop', async () => {
    let ticks = 0;
    const timer = setInterval(() => {
      ticks += 1;
    }, 5);
    try {
      const pairs = await Promise.all([generateRsaKeyPair(), generateRsaKeyPair(), generateRsaKeyPair()]);
      expect(new Set(pairs.map((p) => p.publicKey)).size).toBe(3);
    } finally {
      clearInterval(timer);
    }
    // A synchronous generator would have held the thread for the whole run: zero ticks.
    expect(ticks).toBeGreaterThanOrEqual(3);
  });
});

describe('parsePublicKey', () => {
  it('accepts base64 DER SPKI, SPKI PEM and PKCS#1 PEM, all as the same key', () => {
    const spkiPem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const pkcs1Pem = pair.publicKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    for (const input of [pair.publicKeyText, spkiPem, pkcs1Pem, `\n${spkiPem}\n`]) {
      expect(publicKeyDer(parsePublicKey(input)).toString('base64')).toBe(pair.publicKeyText);
    }
  });

  it('parses a hot key once', () => {
    const text = other.publicKeyText;
    expect(parsePublicKey(text)).toBe(parsePublicKey(text));
  });

  it('accepts 4096-bit moduli and refuses anything outside 2048..4096', () => {
    expect(parsePublicKey(rsaPublicKeyWithBits(4096)).asymmetricKeyDetails?.modulusLength).toBe(4096);
    for (const bits of [1024, 2040, 4104, 8192]) {
      const error = invalidRequest(() => parsePublicKey(rsaPublicKeyWithBits(bits)));
      expect(error.problem).toContain(`${bits} bits is outside 2048..4096`);
    }
  });

  it('refuses every RSA public exponent but 65537, and an even modulus (issue 20: all were accepted)', () => {
    const { n } = pair.publicKey.export({ format: 'jwk' });
    const modulus = BigInt(`0x${Buffer.from(n!, 'base64url').toString('hex')}`);
    const spki = (e: bigint, m = modulus) => {
      const url = (value: bigint) => {
        const hex = value.toString(16);
        return Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex').toString('base64url');
      };
      return createPublicKey({ key: { kty: 'RSA', n: url(m), e: url(e) }, format: 'jwk' })
        .export({ type: 'spki', format: 'der' })
        .toString('base64');
    };
    const cases: [string, string][] = [
      [spki(1n), 'RSA public exponent must be 65537, not 1'],
      [spki(3n), 'RSA public exponent must be 65537, not 3'],
      [spki(65536n), 'RSA public exponent must be 65537, not 65536'],
      [spki(2n ** 65n + 1n), 'RSA public exponent must be 65537, not a 66-bit number'],
      [spki(modulus + 2n), 'RSA public exponent must be 65537, not a 2048-bit number'],
      [spki(65537n, modulus - 1n), 'RSA modulus is even'],
    ];
    for (const [input, problem] of cases)
      expect(invalidRequest(() => parsePublicKey(input)).problem).toBe(problem);
    expect(parsePublicKey(spki(65537n)).asymmetricKeyDetails?.publicExponent).toBe(65537n);
  });

  it('reads a compressed P-256 point as the key it names, exported uncompressed', () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const uncompressed = publicKey.export({ type: 'spki', format: 'der' });
    const { x, y } = publicKey.export({ format: 'jwk' });
    const point = Buffer.concat([
      Buffer.from([4]),
      Buffer.from(x!, 'base64url'),
      Buffer.from(y!, 'base64url'),
    ]);
    const compressed = Buffer.concat([
      Buffer.from('3039301306072a8648ce3d020106082a8648ce3d030107032200', 'hex'),
      ECDH.convertKey(point, 'prime256v1', undefined, undefined, 'compressed') as Buffer,
    ]).toString('base64');
    expect(publicKeyDer(parsePublicKey(compressed))).toEqual(uncompressed);
    expect(publicKeyDer(parsePublicKey(uncompressed.toString('base64')))).toEqual(uncompressed);
  });

  it('refuses keys neither RSA nor P-256, private keys and garbage with a clear message and field details', async () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    const pss = await promisify(generateKeyPair)('rsa-pss', { modulusLength: 2048 });
    const der = Buffer.from(pair.publicKeyText, 'base64');
    const inputs = [
      ec.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      pss.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      pair.privateKeyText,
      Buffer.concat([der, Buffer.from([0])]).toString('base64'),
      `${pair.publicKeyText.slice(0, 40)}!${pair.publicKeyText.slice(41)}`,
      '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----',
      '',
      'A'.repeat(10_000),
    ];
    for (const input of inputs) {
      const error = invalidRequest(() => parsePublicKey(input, 'recipientPublicKey'));
      expect(error.message).toBe('recipientPublicKey is not an acceptable public key');
      expect(error.field).toBe('recipientPublicKey');
    }
  });
});

describe('parsePrivateKey', () => {
  it('accepts PKCS#8 DER, PKCS#8 PEM, PKCS#1 DER and PKCS#1 PEM', () => {
    const forms = [
      pair.privateKeyText,
      pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      pair.privateKey.export({ type: 'pkcs1', format: 'der' }).toString('base64'),
      pair.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    ];
    for (const input of forms) {
      const key = parsePrivateKey(input);
      expect(key.type).toBe('private');
      expect(matchesPublicKey(key, pair.publicKeyText)).toBe(true);
    }
  });

  it('is not cached', () => {
    expect(parsePrivateKey(pair.privateKeyText)).not.toBe(parsePrivateKey(pair.privateKeyText));
  });

  it('throws a DecryptionError for anything unusable, so a bad key looks like any failed decryption', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
    const encrypted = pair.privateKey.export({
      type: 'pkcs8',
      format: 'pem',
      cipher: 'aes-256-cbc',
      passphrase: 'pw',
    });
    const cases: Array<[string, string]> = [
      ['garbage', 'private key unparseable'],
      [pair.publicKeyText, 'private key unparseable'],
      [encrypted.toString(), 'private key unparseable'],
      [`${pair.privateKeyText}=`, 'private key unparseable'],
      [
        ec.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
        'private key not allowed: EC curve secp384r1 is not P-256',
      ],
      [
        small.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
        expect.stringContaining('1024 bits') as unknown as string,
      ],
    ];
    for (const [input, reason] of cases) {
      expect(expectDecryptionError(() => parsePrivateKey(input)).reason).toEqual(reason);
    }
    expect(new DecryptionError('x').message).toBe(expectDecryptionError(() => parsePrivateKey('')).message);
  });
});

describe('key helpers', () => {
  it('matchesPublicKey pairs halves and nothing else', () => {
    expect(matchesPublicKey(pair.privateKey, pair.publicKeyText)).toBe(true);
    expect(
      matchesPublicKey(pair.privateKey, pair.publicKey.export({ type: 'spki', format: 'pem' }).toString()),
    ).toBe(true);
    expect(matchesPublicKey(pair.privateKey, other.publicKeyText)).toBe(false);
    expect(matchesPublicKey(other.privateKey, pair.publicKeyText)).toBe(false);
    expect(matchesPublicKey(pair.privateKey, 'not base64!')).toBe(false);
    expect(matchesPublicKey(pair.privateKey, pair.publicKeyText.slice(0, -4))).toBe(false);
    expect(matchesPublicKey(pair.publicKey, pair.publicKeyText)).toBe(false);
  });

  it('fingerprints the DER with SHA-256', () => {
    const der = publicKeyDer(pair.publicKey);
    expect(publicKeyFingerprint(der)).toBe(createHash('sha256').update(der).digest('hex'));
    expect(publicKeyFingerprint(der)).toMatch(/^[0-9a-f]{64}$/);
    expect(publicKeyDer(pair.privateKey)).toEqual(der);
  });
});

describe('strict base64', () => {
  it('accepts only the canonical spelling', () => {
    for (const bytes of [0, 1, 2, 3, 16, 17, 255].map((n) => randomBytes(n))) {
      expect(decodeBase64(bytes.toString('base64'))).toEqual(bytes);
      expect(decodeBase64Url(bytes.toString('base64url'))).toEqual(bytes);
    }
    for (const bad of [
      'A',
      'AB',
      'AB=',
      'AB==A',
      'AB=C',
      'AQ=',
      'AR==',
      'AAB=',
      'A B=',
      'AB-_',
      '====',
      'AB\n==',
    ]) {
      expect(isCanonicalBase64(bad)).toBe(false);
    }
    for (const bad of ['A', 'AR', 'AAB', 'AQ==', 'A+', 'A/', 'AB CD']) {
      expect(isCanonicalBase64Url(bad)).toBe(false);
    }
    expect(isCanonicalBase64('AQ==')).toBe(true);
    expect(isCanonicalBase64('AAA=')).toBe(true);
    expect(isCanonicalBase64Url('AQ')).toBe(true);
    expect(isCanonicalBase64Url('-_8')).toBe(true);
  });
});

describe('LruCache', () => {
  it('evicts the least recently used entry', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1);
    cache.set('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
    expect(cache.size).toBe(2);
    expect(() => new LruCache(0)).toThrow(RangeError);
  });
});
