import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { calculateJwkThumbprint, CompactSign, exportJWK, flattenedVerify, generateKeyPair } from 'jose';
import {
  generateSigningKey,
  parseSignature,
  ReceiptSignatureError,
  signedReceiptBytes,
  signingKeyId,
  signReceipt,
  toDigitalReceipt,
  verifyReceiptSignature,
  type DigitalReceipt,
  type SigningAlgorithm,
} from '@receipt-service/sdk';
import { flattenedReceipt } from '../support/fixtures.js';

/**
 * signReceipt and verifyReceiptSignature in Node, on Node's WebCrypto: what a till signs, jose (the
 * service's verifier) accepts, and the other way round; the kid is the RFC 7638 thumbprint jose
 * computes; and a receipt changed after signing, a signature of another form, another key or another
 * algorithm is refused, naming why. The same in headless Chromium: test/browser/sdk.slow.test.ts.
 */

const receipt = (): DigitalReceipt =>
  toDigitalReceipt(flattenedReceipt({ transactionDate: '2026-11-21T09:15:00Z' }) as never);

const refusal = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ReceiptSignatureError);
  return error as ReceiptSignatureError;
};

describe.each<SigningAlgorithm>(['EdDSA', 'ES256'])('a %s signature', (algorithm) => {
  it('is made by the till and verified on the device; jose agrees on the signature and the kid', async () => {
    const key = await generateSigningKey({ algorithm });
    expect(key.privateKey.extractable).toBe(false);
    expect(key.kid).toBe(await calculateJwkThumbprint(key.publicJwk, 'sha256'));
    const signed = receipt();
    const jws = await signReceipt(signed, key.privateKey, key.kid);
    expect(jws).toMatch(/^[\w-]+\.\.[\w-]+$/);
    expect(parseSignature(jws)).toMatchObject({ alg: algorithm, kid: key.kid });
    const sealed = { ...signed, merchantSignature: { kid: key.kid, jws } };
    expect(await verifyReceiptSignature(sealed, key.publicJwk)).toEqual({ kid: key.kid, alg: algorithm });

    // jose, which the service verifies with, over the same detached payload.
    const [protectedHeader, , signature] = jws.split('.') as [string, string, string];
    const verified = await flattenedVerify(
      {
        protected: protectedHeader,
        payload: Buffer.from(signedReceiptBytes(signed)).toString('base64url'),
        signature,
      },
      key.publicJwk,
      { algorithms: [algorithm] },
    );
    expect(verified.protectedHeader).toEqual({ alg: algorithm, kid: key.kid });
  });

  it('accepts a signature jose made over the canonical receipt', async () => {
    const { privateKey, publicKey } = await generateKeyPair(algorithm === 'EdDSA' ? 'Ed25519' : 'ES256');
    const publicJwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
    const signed = receipt();
    const attached = await new CompactSign(signedReceiptBytes(signed))
      .setProtectedHeader({ alg: algorithm, kid })
      .sign(privateKey);
    const [header, , signature] = attached.split('.');
    const sealed = { ...signed, merchantSignature: { kid, jws: `${header}..${signature}` } };
    expect(signingKeyId(publicJwk as never)).toBe(kid);
    expect(await verifyReceiptSignature(sealed, publicJwk)).toEqual({ kid, alg: algorithm });
  });

  it('refuses the receipt once one byte of it changes, wherever that byte is', async () => {
    const key = await generateSigningKey({ algorithm });
    const signed = receipt();
    const merchantSignature = { kid: key.kid, jws: await signReceipt(signed, key.privateKey, key.kid) };
    const changes: [string, DigitalReceipt][] = [
      ['the total', { ...signed, summary: { ...signed.summary, total: signed.summary.total + 1 } }],
      ['the merchant', { ...signed, merchant: { ...signed.merchant, name: 'Corner Coffee Roasterz' } }],
      [
        'a line',
        { ...signed, items: [{ ...signed.items[0]!, name: 'Flat whitf' }, ...signed.items.slice(1)] },
      ],
      ['a member added', { ...signed, notes: 'Free refill' }],
      ['a member removed', { ...signed, merchant: { ...signed.merchant, taxId: undefined } }],
      ['the receipt id', { ...signed, receiptId: randomUUID() }],
    ];
    for (const [what, changed] of changes) {
      const error = await refusal(verifyReceiptSignature({ ...changed, merchantSignature }, key.publicJwk));
      expect({ what, reason: error.reason, message: error.message }).toEqual({
        what,
        reason: 'mismatch',
        message: 'The merchant signature does not match this receipt',
      });
    }
  });

  it("refuses another merchant's key, a key not named by the kid, and a receipt with no signature", async () => {
    const key = await generateSigningKey({ algorithm });
    const other = await generateSigningKey({ algorithm });
    const signed = receipt();
    const jws = await signReceipt(signed, key.privateKey, key.kid);
    expect(
      (
        await refusal(
          verifyReceiptSignature({ ...signed, merchantSignature: { kid: key.kid, jws } }, other.publicJwk),
        )
      ).reason,
    ).toBe('key');
    // Signed by the other key but named as this one: the kid in the JWS must be the sealed kid.
    const forged = await signReceipt(signed, other.privateKey, key.kid);
    expect(
      (
        await refusal(
          verifyReceiptSignature(
            { ...signed, merchantSignature: { kid: key.kid, jws: forged } },
            key.publicJwk,
          ),
        )
      ).reason,
    ).toBe('mismatch');
    expect(
      (
        await refusal(
          verifyReceiptSignature({ ...signed, merchantSignature: { kid: other.kid, jws } }, other.publicJwk),
        )
      ).reason,
    ).toBe('kid_mismatch');
    expect((await refusal(verifyReceiptSignature(signed, key.publicJwk))).reason).toBe('unsigned');
  });
});

describe('what the profile refuses in the JWS itself', () => {
  const header = (members: Record<string, unknown>) =>
    Buffer.from(JSON.stringify(members)).toString('base64url');

  it('refuses alg none, other algorithms, an attached payload, b64/crit and a missing kid, naming each', async () => {
    const key = await generateSigningKey();
    const signed = receipt();
    const jws = await signReceipt(signed, key.privateKey, key.kid);
    const [, , signature] = jws.split('.');
    const payload = Buffer.from(signedReceiptBytes(signed)).toString('base64url');
    const cases: [string, string, string][] = [
      [
        `${header({ alg: 'none', kid: key.kid })}..`,
        'algorithm',
        'The JWS alg must be EdDSA or ES256, not none',
      ],
      [`${header({ alg: 'HS256', kid: key.kid })}..${signature}`, 'algorithm', 'not HS256'],
      [
        `${header({ alg: 'EdDSA', kid: key.kid })}.${payload}.${signature}`,
        'attached_payload',
        'send it detached',
      ],
      [`${header({ alg: 'EdDSA' })}..${signature}`, 'malformed', 'no kid'],
      [
        `${header({ alg: 'EdDSA', kid: key.kid, b64: false, crit: ['b64'] })}..${signature}`,
        'malformed',
        'b64 or crit',
      ],
      ['not-a-jws', 'malformed', 'not a compact JWS'],
    ];
    for (const [candidate, reason, message] of cases) {
      const error = await refusal(
        verifyReceiptSignature(
          { ...signed, merchantSignature: { kid: key.kid, jws: candidate } },
          key.publicJwk,
        ),
      );
      expect({ candidate, reason: error.reason }).toEqual({ candidate, reason });
      expect(error.message).toContain(message);
    }
  });

  it('refuses an ES256 header over an Ed25519 key', async () => {
    const key = await generateSigningKey({ algorithm: 'EdDSA' });
    const signed = receipt();
    const [, , signature] = (await signReceipt(signed, key.privateKey, key.kid)).split('.');
    const error = await refusal(
      verifyReceiptSignature(
        {
          ...signed,
          merchantSignature: { kid: key.kid, jws: `${header({ alg: 'ES256', kid: key.kid })}..${signature}` },
        },
        key.publicJwk,
      ),
    );
    expect(error.reason).toBe('algorithm');
  });
});
