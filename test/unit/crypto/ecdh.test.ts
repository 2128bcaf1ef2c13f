import {
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  randomBytes,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { FlattenedEncrypt, flattenedDecrypt, importPKCS8, importSPKI } from 'jose';
import {
  concatKdf,
  decryptFlattenedJwe,
  keyCommitment,
  openEnvelope,
  rewrapEnvelope,
  sealEnvelope,
  toFlattenedJwe,
  transferEnvelope,
  type SealedEnvelope,
} from '../../../lib/crypto/envelope.js';
import { DecryptionError, InvalidPublicKeyError } from '../../../lib/crypto/errors.js';
import { parseImportedPublicKey, parsePrivateKey, parsePublicKey } from '../../../lib/crypto/keys.js';
import {
  bound,
  expectDecryptionError,
  expectDecryptionRejection,
  testKeyPair,
  type TestKeyPair,
} from './support.js';
import { sealLegacyEnvelope } from '../../support/legacy-envelope.js';

/*
 * P-256 recipients: ECDH-ES+A256KW per RFC 7518 §4.6, alg and epk per recipient, and the envelopes
 * sealed before (alg in the protected header) still opening. jose is the independent implementation
 * both directions are held to.
 */

interface EcPair {
  publicKey: KeyObject;
  privateKey: KeyObject;
  pkcs8: string;
  spki: string;
}

function ecPair(namedCurve = 'P-256'): EcPair {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve });
  return {
    publicKey,
    privateKey,
    pkcs8: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
    spki: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
  };
}

const plaintext = Buffer.from(JSON.stringify({ receipt: 'for a device key', total: 1548 }), 'utf8');
const header = (envelope: SealedEnvelope): Record<string, unknown> =>
  JSON.parse(Buffer.from(envelope.protected, 'base64url').toString('utf8')) as Record<string, unknown>;

const sealLegacy = (recipient: TestKeyPair, keyId: string): SealedEnvelope =>
  sealLegacyEnvelope(plaintext, bound, recipient.publicKey, keyId);

let device: EcPair;
let otherDevice: EcPair;
let rsa: TestKeyPair;
let envelope: SealedEnvelope;

beforeAll(async () => {
  device = ecPair();
  otherDevice = ecPair();
  rsa = await testKeyPair();
  envelope = sealEnvelope(plaintext, bound, { keyId: 'device-key', publicKey: device.publicKey });
});

describe('sealing for a P-256 recipient', () => {
  it('uses ECDH-ES+A256KW with a fresh epk, keeps alg out of the protected header and round-trips', () => {
    expect(openEnvelope(envelope, device.privateKey)).toEqual(plaintext);
    expect(envelope.keyBundle).toEqual({
      encryptedAesKey: expect.any(String),
      keyId: 'device-key',
      algorithm: 'ECDH-ES+A256KW',
      epk: { kty: 'EC', crv: 'P-256', x: expect.any(String), y: expect.any(String) },
    });
    expect(Buffer.from(envelope.keyBundle.encryptedAesKey, 'base64')).toHaveLength(40);
    expect(Object.keys(header(envelope))).toEqual([
      'enc',
      'version',
      'receiptId',
      'merchantId',
      'transactionId',
      'keyCommitment',
    ]);
    const again = sealEnvelope(plaintext, bound, { keyId: 'device-key', publicKey: device.publicKey });
    expect(again.keyBundle.epk).not.toEqual(envelope.keyBundle.epk);
    expect(again.keyBundle.encryptedAesKey).not.toBe(envelope.keyBundle.encryptedAesKey);
  });

  it('takes the algorithm from the key type and refuses a recipient whose algorithm contradicts it', () => {
    const rsaEnvelope = sealEnvelope(plaintext, bound, { keyId: 'r', publicKey: rsa.publicKey });
    expect(rsaEnvelope.keyBundle).toEqual({
      encryptedAesKey: expect.any(String),
      keyId: 'r',
      algorithm: 'RSA-OAEP-256',
    });
    expect(() =>
      sealEnvelope(plaintext, bound, { keyId: 'd', publicKey: device.publicKey, algorithm: 'RSA-OAEP-256' }),
    ).toThrow('does not fit');
    expect(() =>
      sealEnvelope(plaintext, bound, { keyId: 'p384', publicKey: ecPair('P-384').publicKey }),
    ).toThrow('not P-256');
  });
});

describe('jose interoperability', () => {
  it('jose opens our P-256 and RSA envelopes as flattened JWEs, alg and epk in the per-recipient header', async () => {
    const ecKey = await importPKCS8(
      device.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      'ECDH-ES+A256KW',
    );
    const opened = await flattenedDecrypt(toFlattenedJwe(envelope), ecKey);
    expect(Buffer.from(opened.plaintext)).toEqual(plaintext);
    expect(opened.unprotectedHeader).toEqual({ alg: 'ECDH-ES+A256KW', epk: envelope.keyBundle.epk });
    expect(opened.protectedHeader).toMatchObject({ enc: 'A256GCM', ...bound });

    const rsaEnvelope = sealEnvelope(plaintext, bound, { keyId: 'r', publicKey: rsa.publicKey });
    const rsaKey = await importPKCS8(
      rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      'RSA-OAEP-256',
    );
    expect(Buffer.from((await flattenedDecrypt(toFlattenedJwe(rsaEnvelope), rsaKey)).plaintext)).toEqual(
      plaintext,
    );
  });

  it('our code opens a jose-made ECDH-ES+A256KW JWE carrying our header, bound fields and commitment', async () => {
    const cek = randomBytes(32);
    const recipient = await importSPKI(
      device.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      'ECDH-ES+A256KW',
    );
    const jwe = await new FlattenedEncrypt(plaintext)
      .setProtectedHeader({
        enc: 'A256GCM',
        ...bound,
        keyCommitment: keyCommitment(cek).toString('base64url'),
      })
      .setUnprotectedHeader({ alg: 'ECDH-ES+A256KW' })
      .setContentEncryptionKey(cek)
      .encrypt(recipient);
    expect(Buffer.from(jwe.encrypted_key!, 'base64url')).toHaveLength(40);
    expect(
      decryptFlattenedJwe(jwe as Parameters<typeof decryptFlattenedJwe>[0], device.privateKey, bound),
    ).toEqual(plaintext);
    // The same JWE with another receipt's bound fields expected is refused.
    expectDecryptionError(() =>
      decryptFlattenedJwe(jwe as Parameters<typeof decryptFlattenedJwe>[0], device.privateKey, {
        ...bound,
        receiptId: 'another',
      }),
    );
  });

  it('derives the same key-encryption key as jose: its wrapped CEK unwraps under our Concat KDF', async () => {
    const cek = randomBytes(32);
    const recipient = await importSPKI(
      device.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      'ECDH-ES+A256KW',
    );
    const jwe = await new FlattenedEncrypt(plaintext)
      .setProtectedHeader({ alg: 'ECDH-ES+A256KW', enc: 'A256GCM' })
      .setContentEncryptionKey(cek)
      .encrypt(recipient);
    const { epk } = JSON.parse(Buffer.from(jwe.protected!, 'base64url').toString()) as {
      epk: Record<string, string>;
    };
    const shared = diffieHellman({
      privateKey: device.privateKey,
      publicKey: createPublicKey({ key: epk, format: 'jwk' }),
    });
    const kek = concatKdf(shared, 'ECDH-ES+A256KW', 256);
    const unwrap = createCipheriv('id-aes256-wrap', kek, Buffer.from('A6A6A6A6A6A6A6A6', 'hex'));
    // AES-KW wrapping the jose CEK under our KEK must give jose's encrypted_key byte for byte.
    expect(Buffer.concat([unwrap.update(cek), unwrap.final()]).toString('base64url')).toBe(jwe.encrypted_key);
  });
});

describe('Concat KDF', () => {
  it('matches RFC 7518 Appendix C (ECDH-ES, A128GCM, apu "Alice", apv "Bob")', () => {
    const alice = createPrivateKey({
      key: {
        kty: 'EC',
        crv: 'P-256',
        x: 'gI0GAILBdu7T53akrFmMyGcsF3n5dO7MmwNBHKW5SV0',
        y: 'SLW_xSffzlPWrHEVI30DHM_4egVwt3NQqeUD7nMFpps',
        d: '0_NxaRPUMQoAJt50Gz8YiTr8gRTwyEaCumd-MToTmIo',
      },
      format: 'jwk',
    });
    const bob = createPublicKey({
      key: {
        kty: 'EC',
        crv: 'P-256',
        x: 'weNJy2HscCSM6AEDTDg04biOvhFhyyWvOHQfeF_PxMQ',
        y: 'e8lnCO-AlStT-NJVX-crhB7QRYhiix03illJOVAOyck',
      },
      format: 'jwk',
    });
    const z = diffieHellman({ privateKey: alice, publicKey: bob });
    expect([...z]).toEqual([
      158, 86, 217, 29, 129, 113, 53, 211, 114, 131, 66, 131, 191, 132, 38, 156, 251, 49, 110, 163, 218, 128,
      106, 72, 246, 218, 167, 121, 140, 254, 144, 196,
    ]);
    const derived = concatKdf(z, 'A128GCM', 128, Buffer.from('Alice'), Buffer.from('Bob'));
    expect(derived.toString('base64url')).toBe('VqqN6vgjbSBcIijNcacQGg');
  });
});

/** The envelope with keyBundle.epk replaced. */
const withEpk = (epk: unknown): unknown => ({ ...envelope, keyBundle: { ...envelope.keyBundle, epk } });

describe('opening a P-256 envelope refuses', () => {
  it('an epk that is not a point on P-256 (invalid-curve attack), with one uniform error', () => {
    const epk = envelope.keyBundle.epk!;
    const y = Buffer.from(epk.y, 'base64url');
    y[31]! ^= 1;
    const failure = expectDecryptionError(() =>
      openEnvelope(withEpk({ ...epk, y: y.toString('base64url') }), device.privateKey),
    );
    expect(failure.reason).toBe('epk is not a point on P-256');
    // A point of small order on a weak curve sharing P-256's x: still not on P-256.
    const zero = Buffer.alloc(32).toString('base64url');
    expect(
      expectDecryptionError(() => openEnvelope(withEpk({ ...epk, x: zero, y: zero }), device.privateKey))
        .reason,
    ).toBe('epk is not a point on P-256');
  });

  it('epk members outside the public P-256 JWK, other curves, bad coordinates or no epk at all', () => {
    const epk = envelope.keyBundle.epk!;
    const p384 = ecPair('P-384').publicKey.export({ format: 'jwk' });
    for (const [bad, reason] of [
      [{ ...epk, d: 'AAAA' }, 'epk members are not exactly kty, crv, x, y'],
      [{ ...epk, crv: 'P-384' }, 'epk is not an EC P-256 key'],
      [{ kty: 'EC', crv: 'P-384', x: p384.x, y: p384.y }, 'epk is not an EC P-256 key'],
      [{ ...epk, kty: 'OKP' }, 'epk is not an EC P-256 key'],
      [{ ...epk, x: `${epk.x}A` }, 'epk x is not a canonical 32-byte coordinate'],
      [{ ...epk, y: epk.y.slice(0, 42) }, 'epk y is not a canonical 32-byte coordinate'],
      [{ kty: 'EC', crv: 'P-256', x: epk.x }, 'epk members are not exactly kty, crv, x, y'],
      ['a string', 'epk is not an object'],
      [undefined, 'ECDH-ES+A256KW without epk'],
    ] as const) {
      expect(expectDecryptionError(() => openEnvelope(withEpk(bad), device.privateKey)).reason).toBe(reason);
    }
  });

  it("another device's epk, another P-256 key, or a private key of the wrong type", () => {
    const foreign = sealEnvelope(plaintext, bound, { keyId: 'x', publicKey: otherDevice.publicKey });
    expect(
      expectDecryptionError(() => openEnvelope(withEpk(foreign.keyBundle.epk), device.privateKey)).reason,
    ).toBe('aes-kw unwrap failed');
    expect(expectDecryptionError(() => openEnvelope(envelope, otherDevice.privateKey)).reason).toBe(
      'aes-kw unwrap failed',
    );
    expect(expectDecryptionError(() => openEnvelope(envelope, rsa.privateKey)).reason).toBe(
      'private key type does not fit ECDH-ES+A256KW',
    );
    const rsaEnvelope = sealEnvelope(plaintext, bound, { keyId: 'r', publicKey: rsa.publicKey });
    expect(expectDecryptionError(() => openEnvelope(rsaEnvelope, device.privateKey)).reason).toBe(
      'private key type does not fit RSA-OAEP-256',
    );
    expect(expectDecryptionError(() => openEnvelope(envelope, ecPair('P-384').privateKey)).reason).toContain(
      'not P-256',
    );
    expect(expectDecryptionError(() => openEnvelope(envelope, device.publicKey)).reason).toBe(
      'private key not allowed: key is not private',
    );
  });

  it('an algorithm swapped between bundle and key, unknown algorithms, and epk on an RSA bundle', () => {
    const rsaEnvelope = sealEnvelope(plaintext, bound, { keyId: 'r', publicKey: rsa.publicKey });
    for (const [bundle, reason] of [
      [{ ...envelope.keyBundle, algorithm: 'RSA-OAEP-256' }, 'epk with RSA-OAEP-256'],
      [{ ...envelope.keyBundle, algorithm: 'ECDH-ES' }, 'alg is not RSA-OAEP-256 or ECDH-ES+A256KW'],
      [{ ...envelope.keyBundle, algorithm: 'ECDH-ES+A128KW' }, 'alg is not RSA-OAEP-256 or ECDH-ES+A256KW'],
      [{ ...envelope.keyBundle, algorithm: undefined }, 'alg is not RSA-OAEP-256 or ECDH-ES+A256KW'],
      [{ ...rsaEnvelope.keyBundle, epk: envelope.keyBundle.epk }, 'epk with RSA-OAEP-256'],
    ] as const) {
      const base = bundle.encryptedAesKey === envelope.keyBundle.encryptedAesKey ? envelope : rsaEnvelope;
      expect(
        expectDecryptionError(() => openEnvelope({ ...base, keyBundle: bundle }, device.privateKey)).reason,
      ).toBe(reason);
    }
    // An alg smuggled into a new envelope's protected header breaks its additional data even if allowed.
    const smuggled = Buffer.from(JSON.stringify({ alg: 'ECDH-ES+A256KW', ...header(envelope) })).toString(
      'base64url',
    );
    expectDecryptionError(() => openEnvelope({ ...envelope, protected: smuggled }, device.privateKey));
  });

  it('a jose JWE naming alg or epk in both headers', () => {
    const jwe = toFlattenedJwe(envelope);
    const both = Buffer.from(JSON.stringify({ ...header(envelope), alg: 'ECDH-ES+A256KW' })).toString(
      'base64url',
    );
    expect(
      expectDecryptionError(() => decryptFlattenedJwe({ ...jwe, protected: both }, device.privateKey)).reason,
    ).toBe('alg is in both the protected and the unprotected header');
    const extra = { ...jwe, header: { ...jwe.header!, kid: 'x' } } as Parameters<
      typeof decryptFlattenedJwe
    >[0];
    expect(expectDecryptionError(() => decryptFlattenedJwe(extra, device.privateKey)).reason).toContain(
      'unprotected header member "kid" not allowed',
    );
  });
});

describe('legacy envelopes (alg in the protected header)', () => {
  it('still open, with the server and with jose, and their bundle must agree with the protected alg', async () => {
    const legacy = sealLegacy(rsa, 'rsa-key');
    expect(openEnvelope(legacy, rsa.privateKey)).toEqual(plaintext);
    const jwe = toFlattenedJwe(legacy);
    expect(jwe.header).toBeUndefined();
    const key = await importPKCS8(
      rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      'RSA-OAEP-256',
    );
    expect(Buffer.from((await flattenedDecrypt(jwe, key)).plaintext)).toEqual(plaintext);

    const asEcdh = { ...legacy, keyBundle: { ...legacy.keyBundle, algorithm: 'ECDH-ES+A256KW' } };
    expect(expectDecryptionError(() => openEnvelope(asEcdh, rsa.privateKey)).reason).toBe(
      'keyBundle algorithm differs from the protected alg',
    );
    const withEpkMember = { ...legacy, keyBundle: { ...legacy.keyBundle, epk: envelope.keyBundle.epk } };
    expect(expectDecryptionError(() => openEnvelope(withEpkMember, rsa.privateKey)).reason).toBe(
      'legacy envelope with an epk',
    );
  });
});

describe('handing an escrowed envelope to a P-256 user', () => {
  const unwrapWith = (pair: TestKeyPair) => async (encryptedKey: Buffer) => {
    const { rsaOaepSha256Decrypt } = await import('../../../lib/crypto/envelope.js');
    return rsaOaepSha256Decrypt(pair.privateKey, encryptedKey);
  };

  it('re-wraps a new-layout envelope: same protected header and ciphertext, a P-256 key bundle', async () => {
    const escrowed = sealEnvelope(plaintext, bound, { keyId: 'escrow', publicKey: rsa.publicKey });
    const claimed = await transferEnvelope(escrowed, unwrapWith(rsa), {
      keyId: 'device-key',
      publicKey: device.publicKey,
    });
    expect(claimed.protected).toBe(escrowed.protected);
    expect(claimed.ciphertext).toBe(escrowed.ciphertext);
    expect(claimed.keyBundle.algorithm).toBe('ECDH-ES+A256KW');
    expect(claimed.keyId).toBe('device-key');
    expect(openEnvelope(claimed, device.privateKey)).toEqual(plaintext);
  });

  it('re-seals a legacy envelope under a new CEK with the same bound fields; rewrap alone refuses it', async () => {
    const legacy = sealLegacy(rsa, 'escrow');
    const claimed = await transferEnvelope(legacy, unwrapWith(rsa), {
      keyId: 'device-key',
      publicKey: device.publicKey,
    });
    expect(claimed.protected).not.toBe(legacy.protected);
    expect(header(claimed).alg).toBeUndefined();
    expect(claimed).toMatchObject({ ...bound, keyId: 'device-key' });
    expect(openEnvelope(claimed, device.privateKey)).toEqual(plaintext);
    // A legacy envelope handed to an RSA key keeps its layout, and re-wrapping it for P-256 is refused.
    const rsaClaim = await transferEnvelope(legacy, unwrapWith(rsa), {
      keyId: 'r2',
      publicKey: rsa.publicKey,
    });
    expect(rsaClaim.protected).toBe(legacy.protected);
    expect(() =>
      rewrapEnvelope(legacy, Buffer.alloc(32), { keyId: 'd', publicKey: device.publicKey }),
    ).toThrow();
  });

  it('refuses to unwrap a P-256 envelope through the (RSA) escrow path', async () => {
    await expectDecryptionRejection(() =>
      transferEnvelope(envelope, unwrapWith(rsa), { keyId: 'd', publicKey: device.publicKey }),
    );
  });
});

describe('imported public keys and P-256 private keys', () => {
  it('accepts P-256 as SPKI or public JWK and RSA as JWK, answering canonical SPKI and the algorithm', () => {
    const fromSpki = parseImportedPublicKey(device.spki);
    expect(fromSpki).toMatchObject({ spki: device.spki, algorithm: 'ECDH-ES+A256KW' });
    const jwk = device.publicKey.export({ format: 'jwk' });
    expect(parseImportedPublicKey(jwk)).toMatchObject({ spki: device.spki, algorithm: 'ECDH-ES+A256KW' });
    expect(parseImportedPublicKey(rsa.publicKey.export({ format: 'jwk' }))).toMatchObject({
      spki: rsa.publicKeyText,
      algorithm: 'RSA-OAEP-256',
    });
    expect(parsePrivateKey(device.pkcs8).asymmetricKeyType).toBe('ec');
    expect(parsePublicKey(device.spki).asymmetricKeyType).toBe('ec');
  });

  it('refuses private JWKs, other curves and key types, small RSA, points off the curve and garbage, naming why', () => {
    const jwk = device.publicKey.export({ format: 'jwk' });
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
    const cases: [unknown, string][] = [
      [device.privateKey.export({ format: 'jwk' }), 'private member "d"'],
      [rsa.privateKey.export({ format: 'jwk' }), 'private member "d"'],
      [{ kty: 'oct', k: 'AAAA' }, 'private member "k"'],
      [ecPair('P-384').publicKey.export({ format: 'jwk' }), 'EC curve P-384 is not P-256'],
      [ecPair('P-384').spki, 'EC curve secp384r1 is not P-256'],
      [{ kty: 'OKP', crv: 'Ed25519', x: 'AAAA' }, 'neither RSA nor EC'],
      [{ ...jwk, y: jwk.x }, 'not a point on P-256'],
      [small.export({ format: 'jwk' }), '1024 bits is outside 2048..4096'],
      [small.export({ type: 'spki', format: 'der' }).toString('base64'), '1024 bits is outside 2048..4096'],
      ['not a key', 'neither PEM nor canonical base64'],
      [42, 'expected a base64 SubjectPublicKeyInfo string or a JWK object'],
      [[jwk], 'expected a base64 SubjectPublicKeyInfo string or a JWK object'],
    ];
    for (const [input, problem] of cases) {
      let error: unknown;
      try {
        parseImportedPublicKey(input);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(InvalidPublicKeyError);
      expect({ input, problem: (error as InvalidPublicKeyError).problem }).toEqual({
        input,
        problem: expect.stringContaining(problem),
      });
    }
    expect(() => parsePrivateKey(ecPair('P-384').pkcs8)).toThrow(DecryptionError);
  });
});

interface EcdhVector {
  tcId: number;
  comment: string;
  flags: string[];
  public: Record<string, string>;
  private: JsonWebKey;
  shared: string;
  result: 'valid' | 'invalid' | 'acceptable';
}

describe('Wycheproof ECDH P-256 vectors (JWK public keys), as the epk of an envelope', () => {
  const file = fileURLToPath(
    new URL('../../vendor/wycheproof/ecdh_secp256r1_webcrypto_test.json', import.meta.url),
  );
  const vectors = (
    JSON.parse(readFileSync(file, 'utf8')) as { testGroups: { tests: EcdhVector[] }[] }
  ).testGroups.flatMap((group) => group.tests);
  const aesKw = (kek: Buffer, cek: Buffer): Buffer => {
    const cipher = createCipheriv('id-aes256-wrap', kek, Buffer.from('A6A6A6A6A6A6A6A6', 'hex'));
    return Buffer.concat([cipher.update(cek), cipher.final()]);
  };

  /**
   * An envelope for the vector's private key whose epk is the vector's public key: sealed for that
   * key, its CEK recovered, and re-wrapped under the key the vector's shared secret derives.
   */
  function envelopeFor(vector: EcdhVector, recipient: KeyObject): SealedEnvelope {
    const sealed = sealEnvelope(plaintext, bound, { keyId: 'k', publicKey: createPublicKey(recipient) });
    const epk = createPublicKey({ key: sealed.keyBundle.epk!, format: 'jwk' });
    const kek = concatKdf(diffieHellman({ privateKey: recipient, publicKey: epk }), 'ECDH-ES+A256KW', 256);
    const unwrap = createDecipheriv('id-aes256-wrap', kek, Buffer.from('A6A6A6A6A6A6A6A6', 'hex'));
    const cek = Buffer.concat([
      unwrap.update(Buffer.from(sealed.keyBundle.encryptedAesKey, 'base64')),
      unwrap.final(),
    ]);
    // The JWK members an epk may have; Wycheproof adds a kid.
    const { kty, crv, x, y } = vector.public;
    // Invalid vectors have no shared secret: any KEK will do, the epk must be refused before it matters.
    const shared = vector.shared === '' ? randomBytes(32) : Buffer.from(vector.shared, 'hex');
    const wrapped = aesKw(concatKdf(shared, 'ECDH-ES+A256KW', 256), cek);
    return {
      ...sealed,
      keyBundle: {
        ...sealed.keyBundle,
        encryptedAesKey: wrapped.toString('base64'),
        epk: { kty, crv, x, y } as NonNullable<SealedEnvelope['keyBundle']['epk']>,
      },
    };
  }

  it('has the expected cases', () => {
    expect(vectors.filter((vector) => vector.result === 'valid')).toHaveLength(330);
    expect(vectors.filter((vector) => vector.result === 'invalid')).toHaveLength(23);
  });

  it('opens every valid case, edge-case points and shared secrets included, and refuses every invalid one', () => {
    const outcomes: string[] = [];
    for (const vector of vectors) {
      let recipient: KeyObject;
      try {
        recipient = createPrivateKey({ key: vector.private, format: 'jwk' });
      } catch {
        outcomes.push(`${vector.tcId}: private key unusable`);
        continue;
      }
      // WrongCurve cases pair a P-256 epk with a private key on another curve: refused as a key.
      if (recipient.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
        if (vector.result === 'valid') outcomes.push(`${vector.tcId}: valid case off P-256`);
        else expectDecryptionError(() => openEnvelope(envelope, recipient));
        continue;
      }
      const candidate = envelopeFor(vector, recipient);
      let opened: Buffer | undefined;
      let reason: string | undefined;
      try {
        opened = openEnvelope(candidate, recipient);
      } catch (error) {
        expect(error).toBeInstanceOf(DecryptionError);
        reason = (error as DecryptionError).reason;
      }
      const verdict = opened?.equals(plaintext) ? 'opens' : `refused (${reason})`;
      // An invalid epk must be refused for what it is, not by the unwrap that would fail anyway.
      const expected =
        vector.result === 'valid'
          ? verdict === 'opens'
          : /^epk |^ecdh key agreement failed$/.test(reason ?? '');
      if (!expected) outcomes.push(`${vector.tcId} ${vector.comment} [${vector.result}]: ${verdict}`);
    }
    expect(outcomes).toEqual([]);
  });
});
