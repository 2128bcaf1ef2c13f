import { beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { openEnvelope, sealEnvelope, type SealedEnvelope } from '../../../lib/crypto/envelope.js';
import { bound, expectDecryptionError, testKeyPair, type TestKeyPair } from './support.js';

let pair: TestKeyPair;
beforeAll(async () => {
  pair = await testKeyPair();
});

const anyText = fc.string({ unit: 'binary', maxLength: 40 });
const boundFields = fc.record({
  version: anyText,
  receiptId: anyText,
  merchantId: anyText,
  transactionId: anyText,
});

type BinaryField = 'ciphertext' | 'iv' | 'authTag' | 'encryptedAesKey' | 'protected';
const read = (env: SealedEnvelope, field: BinaryField): Buffer =>
  field === 'encryptedAesKey'
    ? Buffer.from(env.keyBundle.encryptedAesKey, 'base64')
    : Buffer.from(env[field], field === 'protected' ? 'base64url' : 'base64');
const write = (env: SealedEnvelope, field: BinaryField, bytes: Buffer): SealedEnvelope =>
  field === 'encryptedAesKey'
    ? { ...env, keyBundle: { ...env.keyBundle, encryptedAesKey: bytes.toString('base64') } }
    : { ...env, [field]: bytes.toString(field === 'protected' ? 'base64url' : 'base64') };

describe('envelope properties', () => {
  it('any plaintext and any bound fields round-trip', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), boundFields, (plaintext, fields) => {
        const sealed = sealEnvelope(plaintext, fields, { keyId: 'k', publicKey: pair.publicKey });
        expect(openEnvelope(JSON.parse(JSON.stringify(sealed)), pair.privateKey)).toEqual(
          Buffer.from(plaintext),
        );
      }),
      { numRuns: 60 },
    );
  });

  it('no byte mutation of any binary field ever opens', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 256 }),
        fc.constantFrom<BinaryField>('ciphertext', 'iv', 'authTag', 'encryptedAesKey', 'protected'),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        (plaintext, field, position, mask) => {
          const sealed = sealEnvelope(plaintext, bound, { keyId: 'k', publicKey: pair.publicKey });
          const bytes = read(sealed, field);
          bytes[position % bytes.length]! ^= mask;
          expectDecryptionError(() => openEnvelope(write(sealed, field, bytes), pair.privateKey));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a changed bound field never opens', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('version', 'receiptId', 'merchantId', 'transactionId'),
        anyText,
        (field, value) => {
          fc.pre(value !== bound[field]);
          const sealed = sealEnvelope(Buffer.from('receipt'), bound, {
            keyId: 'k',
            publicKey: pair.publicKey,
          });
          expectDecryptionError(() => openEnvelope({ ...sealed, [field]: value }, pair.privateKey));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('arbitrary JSON never opens and never throws anything but DecryptionError', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expectDecryptionError(() => openEnvelope(value, pair.privateKey));
      }),
      { numRuns: 200 },
    );
  });
});
