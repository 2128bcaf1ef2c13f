import { beforeAll, describe, expect, it } from '@jest/globals';
import {
  constants,
  createDecipheriv,
  createHmac,
  generateKeyPairSync,
  privateDecrypt,
  randomBytes,
} from 'node:crypto';
import { flattenedDecrypt, FlattenedEncrypt, importPKCS8 } from 'jose';
import {
  decryptFlattenedJwe,
  keyCommitment,
  openEnvelope,
  openEnvelopeWith,
  rewrapEnvelope,
  sealEnvelope,
  unwrapContentKey,
  rsaOaepSha256Decrypt,
  type FlattenedJwe,
  type SealedEnvelope,
} from '../../../lib/crypto/envelope.js';
import { KeyUnavailableError as ServiceUnavailableError } from '../../../lib/crypto/errors.js';
import {
  asFlattenedJwe,
  bitPositions,
  bound,
  expectDecryptionError,
  expectDecryptionRejection,
  flipBit,
  testKeyPair,
  type TestKeyPair,
} from './support.js';

const plaintext = Buffer.from(JSON.stringify({ total: 1099, currency: 'USD' }));

let alice: TestKeyPair;
let bob: TestKeyPair;
let envelope: SealedEnvelope;

beforeAll(async () => {
  [alice, bob] = await Promise.all([testKeyPair(), testKeyPair()]);
  envelope = sealEnvelope(plaintext, bound, { keyId: 'alice-key', publicKey: alice.publicKey });
});

const header = (env: SealedEnvelope): Record<string, unknown> =>
  JSON.parse(Buffer.from(env.protected, 'base64url').toString('utf8')) as Record<string, unknown>;

/** Re-encodes a header object; the result no longer authenticates, so it must fail before or at GCM. */
const withHeader = (env: SealedEnvelope, changes: Record<string, unknown>): SealedEnvelope => ({
  ...env,
  protected: Buffer.from(JSON.stringify({ ...header(env), ...changes })).toString('base64url'),
});

describe('sealEnvelope', () => {
  it('round-trips and carries the documented shape', () => {
    expect(openEnvelope(envelope, alice.privateKey)).toEqual(plaintext);
    expect(envelope).toMatchObject({
      ...bound,
      keyId: 'alice-key',
      keyBundle: { keyId: 'alice-key', algorithm: 'RSA-OAEP-256' },
    });
    expect(Buffer.from(envelope.iv, 'base64')).toHaveLength(12);
    expect(Buffer.from(envelope.authTag, 'base64')).toHaveLength(16);
    expect(Buffer.from(envelope.keyBundle.encryptedAesKey, 'base64')).toHaveLength(256);
    expect(envelope.protected).toMatch(/^[A-Za-z0-9_-]+$/);
    // No alg: new envelopes name the key-management algorithm per recipient, in the key bundle.
    expect(Object.keys(header(envelope))).toEqual([
      'enc',
      'version',
      'receiptId',
      'merchantId',
      'transactionId',
      'keyCommitment',
    ]);
    expect(header(envelope)).toMatchObject({ enc: 'A256GCM', ...bound });
  });

  it('uses a fresh content key and IV every time', () => {
    const again = sealEnvelope(plaintext, bound, { keyId: 'alice-key', publicKey: alice.publicKey });
    expect(again.iv).not.toBe(envelope.iv);
    expect(again.ciphertext).not.toBe(envelope.ciphertext);
    expect(header(again).keyCommitment).not.toBe(header(envelope).keyCommitment);
  });

  it('round-trips an empty plaintext and a large one', () => {
    for (const body of [Buffer.alloc(0), randomBytes(100_000)]) {
      const sealed = sealEnvelope(body, bound, { keyId: 'k', publicKey: alice.publicKey });
      expect(openEnvelope(sealed, alice.privateKey)).toEqual(body);
    }
  });

  it('commits with HMAC-SHA256 over a fixed label', () => {
    const cek = randomBytes(32);
    const expected = createHmac('sha256', cek)
      .update('receipt-envelope/v1 key commitment for AES-256-GCM')
      .digest();
    expect(keyCommitment(cek)).toEqual(expected);
  });

  it('commits to the same value as envelopes sealed before createHmac (a fixed known answer)', () => {
    // Computed by the hand-spelt ipad/opad HMAC this replaced: stored envelopes carry such values.
    const cek = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
    expect(keyCommitment(cek).toString('hex')).toBe(
      '4fc41911eba8fab93a23522d0cfd6162edf260d3927e696c474c255ca6684b8e',
    );
  });
});

describe('openEnvelope refuses every tampered envelope with one uniform error', () => {
  const binaryFields = [
    [
      'ciphertext',
      (e: SealedEnvelope) => e.ciphertext,
      (e: SealedEnvelope, v: string) => ({ ...e, ciphertext: v }),
    ],
    ['iv', (e: SealedEnvelope) => e.iv, (e: SealedEnvelope, v: string) => ({ ...e, iv: v })],
    ['authTag', (e: SealedEnvelope) => e.authTag, (e: SealedEnvelope, v: string) => ({ ...e, authTag: v })],
    [
      'encryptedAesKey',
      (e: SealedEnvelope) => e.keyBundle.encryptedAesKey,
      (e: SealedEnvelope, v: string) => ({ ...e, keyBundle: { ...e.keyBundle, encryptedAesKey: v } }),
    ],
  ] as const;

  it.each(binaryFields)('every tried bit flip in %s fails', (_name, get, set) => {
    const length = Buffer.from(get(envelope), 'base64').length;
    const positions = bitPositions(length, 32);
    for (const bit of positions) {
      expectDecryptionError(() => openEnvelope(set(envelope, flipBit(get(envelope), bit)), alice.privateKey));
    }
    // Short fields are covered bit for bit; the 2048-bit wrapped key is sampled.
    if (length * 8 <= 512) expect(positions).toHaveLength(length * 8);
    else expect(positions.length).toBeGreaterThanOrEqual(64);
  });

  it('every sampled bit flip in protected fails', () => {
    const length = Buffer.from(envelope.protected, 'base64url').length;
    const positions = bitPositions(length, 5);
    for (const bit of positions) {
      const tampered = { ...envelope, protected: flipBit(envelope.protected, bit, 'base64url') };
      expectDecryptionError(() => openEnvelope(tampered, alice.privateKey));
    }
    expect(positions.length).toBeGreaterThan(length);
  });

  it('records a specific reason per failure while the public message stays the same', () => {
    const cases: Array<[SealedEnvelope, string]> = [
      [{ ...envelope, authTag: flipBit(envelope.authTag, 3) }, 'aes-gcm authentication failed'],
      [
        {
          ...envelope,
          keyBundle: {
            ...envelope.keyBundle,
            encryptedAesKey: flipBit(envelope.keyBundle.encryptedAesKey, 900),
          },
        },
        'rsa-oaep-256 unwrap failed',
      ],
      [{ ...envelope, receiptId: 'other' }, 'envelope receiptId differs from the protected header'],
      [withHeader(envelope, { zip: 'DEF' }), 'protected header member "zip" not allowed'],
    ];
    for (const [tampered, reason] of cases) {
      expect(expectDecryptionError(() => openEnvelope(tampered, alice.privateKey)).reason).toBe(reason);
    }
  });

  it.each(['version', 'receiptId', 'merchantId', 'transactionId'] as const)('a changed %s fails', (field) => {
    expectDecryptionError(() =>
      openEnvelope({ ...envelope, [field]: `${envelope[field]}x` }, alice.privateKey),
    );
    // Changing the header to match does not help either: the header is the GCM additional data.
    expectDecryptionError(() =>
      openEnvelope(withHeader({ ...envelope, [field]: 'x' }, { [field]: 'x' }), alice.privateKey),
    );
  });

  it('swapping the bound fields between two envelopes fails', () => {
    const other = sealEnvelope(
      plaintext,
      { ...bound, receiptId: 'r2', transactionId: 't2' },
      { keyId: 'k', publicKey: alice.publicKey },
    );
    expectDecryptionError(() =>
      openEnvelope({ ...envelope, receiptId: 'r2', transactionId: 't2' }, alice.privateKey),
    );
    expectDecryptionError(() => openEnvelope({ ...envelope, protected: other.protected }, alice.privateKey));
    expectDecryptionError(() => openEnvelope({ ...other, ...bound }, alice.privateKey));
  });

  it('the wrong private key fails like any tampering', () => {
    const failure = expectDecryptionError(() => openEnvelope(envelope, bob.privateKey));
    expect(failure.reason).toBe('rsa-oaep-256 unwrap failed');
  });

  it('refuses header members and values outside the allow-list', () => {
    for (const changes of [
      { alg: 'RSA-OAEP' },
      { alg: 'RSA1_5' },
      { enc: 'A128GCM' },
      { crit: ['exp'] },
      { zip: 'DEF' },
      { jwk: { kty: 'RSA' } },
      { keyCommitment: undefined },
      { keyCommitment: 'AAAA' },
      { version: 1 },
    ]) {
      expectDecryptionError(() => openEnvelope(withHeader(envelope, changes), alice.privateKey));
    }
    for (const raw of ['bnVsbA', 'WzFd', 'e30', '', 'not json']) {
      expectDecryptionError(() => openEnvelope({ ...envelope, protected: raw }, alice.privateKey));
    }
  });

  it('refuses non-canonical base64 and wrong lengths before trusting any byte', () => {
    const lastTagChar = envelope.authTag.at(-3) ?? 'A';
    // The tag is 16 bytes, so its last data character has 4 unused bits; setting one is an alias of the same bytes.
    const aliasChar = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'[
      'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.indexOf(lastTagChar) ^ 1
    ];
    const aliasTag = `${envelope.authTag.slice(0, -3)}${aliasChar}==`;
    expect(Buffer.from(aliasTag, 'base64')).toEqual(Buffer.from(envelope.authTag, 'base64'));
    for (const tampered of [
      { ...envelope, authTag: aliasTag },
      { ...envelope, authTag: `${envelope.authTag} ` },
      { ...envelope, iv: `${envelope.iv.slice(0, 4)}*${envelope.iv.slice(5)}` },
      {
        ...envelope,
        iv: Buffer.concat([Buffer.from(envelope.iv, 'base64'), Buffer.alloc(4)]).toString('base64'),
      },
      { ...envelope, authTag: Buffer.from(envelope.authTag, 'base64').subarray(0, 12).toString('base64') },
      { ...envelope, ciphertext: envelope.ciphertext.replace(/=*$/, '') + '====' },
      {
        ...envelope,
        keyBundle: { ...envelope.keyBundle, encryptedAesKey: Buffer.alloc(255, 1).toString('base64') },
      },
      { ...envelope, keyBundle: { ...envelope.keyBundle, algorithm: 'RSA-OAEP' } },
      { ...envelope, protected: `${envelope.protected}=` },
    ]) {
      expectDecryptionError(() => openEnvelope(tampered, alice.privateKey));
    }
  });

  it('refuses malformed envelopes and disallowed private keys with the same error', () => {
    for (const malformed of [
      null,
      'envelope',
      42,
      {},
      { ...envelope, keyBundle: undefined },
      { ...envelope, iv: 7 },
    ]) {
      expectDecryptionError(() => openEnvelope(malformed, alice.privateKey));
    }
    expectDecryptionError(() => openEnvelope(envelope, alice.publicKey));
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    expectDecryptionError(() => openEnvelope(envelope, ec));
  });
});

describe('pluggable unwrap (escrow path)', () => {
  const unwrapWith = (pair: TestKeyPair) => async (encryptedKey: Buffer) =>
    rsaOaepSha256Decrypt(pair.privateKey, encryptedKey);

  it('openEnvelopeWith and openEnvelope agree', async () => {
    await expect(openEnvelopeWith(envelope, unwrapWith(alice))).resolves.toEqual(plaintext);
    await expectDecryptionRejection(() => openEnvelopeWith(envelope, unwrapWith(bob)));
  });

  it('a key of the wrong length or a throwing unwrap fails at the tag, not earlier', async () => {
    for (const unwrap of [
      async () => randomBytes(16),
      async () => Buffer.alloc(0),
      async () => randomBytes(32),
      async () => {
        throw new Error('padding check failed');
      },
    ]) {
      await expectDecryptionRejection(() => openEnvelopeWith(envelope, unwrap));
    }
  });

  it('lets an outage through instead of calling it a bad envelope', async () => {
    const outage = new ServiceUnavailableError('kms down');
    await expect(openEnvelopeWith(envelope, () => Promise.reject(outage))).rejects.toBe(outage);
  });

  it('rewraps an escrowed envelope for its claimant, changing only the key bundle', async () => {
    const cek = await unwrapContentKey(envelope, unwrapWith(alice), 256);
    expect(cek).toHaveLength(32);
    const claimed = rewrapEnvelope(envelope, cek, { keyId: 'bob-key', publicKey: bob.publicKey });
    expect(claimed).toEqual({
      ...envelope,
      keyId: 'bob-key',
      keyBundle: { ...claimed.keyBundle, keyId: 'bob-key' },
    });
    expect(claimed.keyBundle.encryptedAesKey).not.toBe(envelope.keyBundle.encryptedAesKey);
    expect(openEnvelope(claimed, bob.privateKey)).toEqual(plaintext);
    expectDecryptionError(() => openEnvelope(claimed, alice.privateKey));
    expect(() => rewrapEnvelope(envelope, randomBytes(32), { keyId: 'x', publicKey: bob.publicKey })).toThrow(
      /content key/,
    );
  });

  it('releases no content key for a tampered envelope', async () => {
    await expectDecryptionRejection(() =>
      unwrapContentKey({ ...envelope, ciphertext: flipBit(envelope.ciphertext, 1) }, unwrapWith(alice)),
    );
    await expectDecryptionRejection(() => unwrapContentKey(envelope, unwrapWith(alice), 512));
  });
});

describe('interoperability', () => {
  it('opens with jose flattenedDecrypt', async () => {
    const pem = alice.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const key = await importPKCS8(pem, 'RSA-OAEP-256');
    const result = await flattenedDecrypt(asFlattenedJwe(envelope), key);
    expect(Buffer.from(result.plaintext)).toEqual(plaintext);
    expect(result.protectedHeader).toMatchObject({ enc: 'A256GCM', ...bound });
    expect(result.unprotectedHeader).toEqual({ alg: 'RSA-OAEP-256' });
  });

  it('opens with an independent decryption written from the spec', () => {
    // DECISIONS.md: RSA-OAEP (SHA-256, MGF1-SHA-256) unwraps the AES key; AES-256-GCM with the ASCII of `protected` as AAD.
    const cek = privateDecrypt(
      { key: alice.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
      Buffer.from(envelope.keyBundle.encryptedAesKey, 'base64'),
    );
    const decipher = createDecipheriv('aes-256-gcm', cek, Buffer.from(envelope.iv, 'base64'), {
      authTagLength: 16,
    });
    decipher.setAAD(Buffer.from(envelope.protected, 'ascii'));
    decipher.setAuthTag(Buffer.from(envelope.authTag, 'base64'));
    const opened = Buffer.concat([
      decipher.update(Buffer.from(envelope.ciphertext, 'base64')),
      decipher.final(),
    ]);
    expect(opened).toEqual(plaintext);
  });

  it('decryptFlattenedJwe opens what jose encrypts, including JWE AAD', async () => {
    const jwe = await new FlattenedEncrypt(plaintext)
      .setProtectedHeader({ alg: 'RSA-OAEP-256', enc: 'A256GCM', kid: 'alice' })
      .setAdditionalAuthenticatedData(Buffer.from('extra'))
      .encrypt(alice.publicKey);
    const flat = jwe as FlattenedJwe;
    expect(flat.aad).toBe('ZXh0cmE');
    expect(decryptFlattenedJwe(flat, alice.privateKey)).toEqual(plaintext);
    expectDecryptionError(() => decryptFlattenedJwe({ ...flat, aad: 'ZXh0cmEx' }, alice.privateKey));
    expectDecryptionError(() =>
      decryptFlattenedJwe(
        {
          protected: flat.protected,
          encrypted_key: flat.encrypted_key,
          iv: flat.iv,
          ciphertext: flat.ciphertext,
          tag: flat.tag,
        },
        alice.privateKey,
      ),
    );
    // The envelope profile demands the bound fields and a key commitment, which a plain JWE lacks.
    expectDecryptionError(() => decryptFlattenedJwe(flat, alice.privateKey, bound));
  });
});
