import { beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { generateSigningKey, type SigningKey } from '@receipt-service/receipt-core';
import {
  issueReceiptCredential,
  presentableReceiptClaims,
  presentReceipt,
  RECEIPT_PRESENTATION_BASICS,
  ReceiptCredentialError,
  verifyReceiptPresentation,
} from '@receipt-service/receipt-core/credential';
import { arbitraryReceipt, oneRate } from '../sdk/formats-fixtures.js';
import { claimNames, ds011 } from '../support/standards.js';

/*
 * Presentable receipts (issue 39 item 4): an SD-JWT VC issued by the merchant's key, presented with the
 * merchant, date and total only, checked by @sd-jwt's verifier against the merchant's JWKS. What must fail
 * fails: an altered disclosure, a signature by another key, a kid the JWKS does not hold.
 */
const ISSUER = 'https://receipts.example.com/api/v1/merchants/client-1/jwks.json';
const jwksOf = (...keys: SigningKey[]) => ({
  keys: keys.map((key) => ({ ...key.publicJwk, kid: key.kid, alg: 'ES256', use: 'sig' })),
});
const decode = (part: string) => Buffer.from(part, 'base64url').toString('utf8');

/** Every readable text of a presentation: the JWT's header and payload and each disclosure, decoded. */
const rawTexts = (presentation: string): string => {
  const [jwt, ...disclosures] = presentation.split('~');
  return [...jwt!.split('.').slice(0, 2), ...disclosures.filter(Boolean)].map(decode).join('\n');
};

let merchant: SigningKey;
let other: SigningKey;
let credential: string;

beforeAll(async () => {
  [merchant, other] = await Promise.all([
    generateSigningKey({ algorithm: 'ES256' }),
    generateSigningKey({ algorithm: 'ES256' }),
  ]);
  credential = await issueReceiptCredential(oneRate, merchant.privateKey, merchant.kid, {
    issuer: ISSUER,
    issuedAt: new Date('2026-11-21T22:15:03Z'),
  });
});

describe('issueReceiptCredential', () => {
  it('is an SD-JWT VC (dc+sd-jwt, ES256, the kid) whose signed payload shows no receipt claim in clear', () => {
    const [jwt] = credential.split('~');
    const [header, payload] = jwt!
      .split('.')
      .slice(0, 2)
      .map((part) => JSON.parse(decode(part)) as Record<string, unknown>);
    expect(header).toEqual({ typ: 'dc+sd-jwt', alg: 'ES256', kid: merchant.kid });
    expect(payload).toEqual({
      iss: ISSUER,
      iat: Date.parse('2026-11-21T22:15:03Z') / 1000,
      vct: 'VerifiablevReceiptSDJWT',
      _sd_alg: 'sha-256',
      _sd: expect.any(Array),
    });
  });

  it('discloses, whole, claims named as ds011 names them, with the receipt id, date, total and currency', async () => {
    const { claims } = await verifyReceiptPresentation(credential, jwksOf(merchant));
    const { claimNames: names } = await ds011();
    const { iss: _iss, iat: _iat, vct: _vct, ...receiptClaims } = claims;
    expect(claimNames(receiptClaims).filter((name) => !names.has(name))).toEqual([]);
    expect(claims.PurchaseReceipt).toEqual({
      iD: oneRate.receiptId,
      issueDate: '2026-11-22',
      documentCurrencyCode: 'EUR',
    });
    expect(claims.MonetaryTotal).toEqual({ lineExtensionAmount: 11.5, payableAmount: 13.11 });
    expect(claims.PurchaseReceiptLine).toHaveLength(2);
  });

  it('refuses a key that is not P-256', async () => {
    const ed = await generateSigningKey({ algorithm: 'EdDSA' });
    await expect(issueReceiptCredential(oneRate, ed.privateKey, ed.kid, { issuer: ISSUER })).rejects.toThrow(
      ReceiptCredentialError,
    );
  });
});

describe('presentReceipt and verifyReceiptPresentation', () => {
  it("a presentation of merchant, date and total verifies with the merchant's JWKS and carries nothing else", async () => {
    const presentation = await presentReceipt(credential, RECEIPT_PRESENTATION_BASICS);
    const verified = await verifyReceiptPresentation(presentation, jwksOf(other, merchant));
    expect(verified.kid).toBe(merchant.kid);
    expect(verified.claims).toEqual({
      iss: ISSUER,
      iat: Date.parse('2026-11-21T22:15:03Z') / 1000,
      vct: 'VerifiablevReceiptSDJWT',
      Party: { partyName_: { name: oneRate.merchant.legalName ?? oneRate.merchant.name } },
      PurchaseReceipt: { issueDate: '2026-11-22', documentCurrencyCode: 'EUR' },
      MonetaryTotal: { payableAmount: 13.11 },
    });
    expect(verified.disclosed).toEqual([
      'MonetaryTotal',
      'MonetaryTotal.payableAmount',
      'Party',
      'Party.partyName_',
      'PurchaseReceipt',
      'PurchaseReceipt.documentCurrencyCode',
      'PurchaseReceipt.issueDate',
    ]);
    // The raw presentation, every part decoded: none of the undisclosed values is in it.
    const raw = rawTexts(presentation);
    for (const hidden of [
      oneRate.receiptId,
      oneRate.transaction.transactionId,
      'Flat white',
      'Cinnamon bun',
      'FW-12',
      'lineExtensionAmount',
      'taxAmount',
      'PurchaseReceiptLine',
      'Payment',
      '11.5',
    ]) {
      expect({ hidden, found: raw.includes(hidden) }).toEqual({ hidden, found: false });
    }
    expect(presentation.split('~').filter(Boolean)).toHaveLength(1 + 7);
  });

  it('fails when a disclosed claim is altered (the total made smaller)', async () => {
    const presentation = await presentReceipt(credential);
    const [jwt, ...disclosures] = presentation.split('~');
    const altered = disclosures.map((part) => {
      if (!part) return part;
      const disclosure = JSON.parse(decode(part)) as [string, string, unknown];
      if (disclosure[1] !== 'payableAmount') return part;
      return Buffer.from(JSON.stringify([disclosure[0], 'payableAmount', 1.31])).toString('base64url');
    });
    expect(altered).not.toEqual(disclosures);
    await expect(verifyReceiptPresentation([jwt, ...altered].join('~'), jwksOf(merchant))).rejects.toThrow(
      /not referenced/,
    );
  });

  it('fails when a disclosure is sent twice, or the signed payload is altered', async () => {
    const presentation = await presentReceipt(credential);
    const [jwt, first] = presentation.split('~') as [string, string];
    await expect(verifyReceiptPresentation(`${presentation}${first}~`, jwksOf(merchant))).rejects.toThrow(
      /twice/,
    );
    const [header, payload, signature] = jwt.split('.') as [string, string, string];
    const claims = JSON.parse(decode(payload)) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, iss: 'https://evil.example/jwks.json' })).toString(
      'base64url',
    );
    await expect(
      verifyReceiptPresentation(
        presentation.replace(jwt, `${header}.${forged}.${signature}`),
        jwksOf(merchant),
      ),
    ).rejects.toThrow(ReceiptCredentialError);
  });

  it('fails for a JWT of another typ, even when signed by the key the JWKS holds', async () => {
    // The same signed payload under a header saying `typ: JWT`, re-signed by the merchant's own key.
    const [jwt, ...disclosures] = credential.split('~');
    const [, payload] = jwt!.split('.') as [string, string];
    const header = Buffer.from(JSON.stringify({ typ: 'JWT', alg: 'ES256', kid: merchant.kid })).toString(
      'base64url',
    );
    const signature = new Uint8Array(
      await crypto.subtle.sign(
        { name: 'ECDSA', hash: 'SHA-256' },
        merchant.privateKey,
        new TextEncoder().encode(`${header}.${payload}`),
      ),
    );
    const retyped = [
      `${header}.${payload}.${Buffer.from(signature).toString('base64url')}`,
      ...disclosures,
    ].join('~');
    await expect(verifyReceiptPresentation(retyped, jwksOf(merchant))).rejects.toThrow(
      /typ is not dc\+sd-jwt/,
    );
  });

  it('fails against a JWKS whose key under that kid is another key', async () => {
    const presentation = await presentReceipt(credential);
    const impostor = { keys: [{ ...other.publicJwk, kid: merchant.kid, alg: 'ES256', use: 'sig' }] };
    await expect(verifyReceiptPresentation(presentation, impostor)).rejects.toThrow(/does not verify/);
  });

  it('fails when the JWKS has no key of that kid (a revoked key drops out of the set)', async () => {
    const presentation = await presentReceipt(credential);
    await expect(verifyReceiptPresentation(presentation, jwksOf(other))).rejects.toThrow(/does not verify/);
    await expect(verifyReceiptPresentation(presentation, { keys: [] })).rejects.toThrow(
      ReceiptCredentialError,
    );
  });

  it('refuses to disclose a claim the credential does not have', async () => {
    await expect(presentReceipt(credential, ['Party.partyName_', 'Nope.nothing'])).rejects.toThrow(
      /Nope.nothing is not a claim/,
    );
  });

  it('any receipt, any choice of claims: the presentation verifies and discloses exactly the chosen claims and their groups', async () => {
    await fc.assert(
      fc.asyncProperty(arbitraryReceipt(), fc.infiniteStream(fc.boolean()), async (receipt, picks) => {
        const issued = await issueReceiptCredential(receipt, merchant.privateKey, merchant.kid, {
          issuer: ISSUER,
        });
        const presentable = await presentableReceiptClaims(issued);
        const chosen = presentable.filter(() => picks.next().value === true);
        const { disclosed } = await verifyReceiptPresentation(
          await presentReceipt(issued, chosen),
          jwksOf(merchant),
        );
        const withGroups = new Set(
          chosen.flatMap((path) => path.split('.').map((_, at, parts) => parts.slice(0, at + 1).join('.'))),
        );
        expect(disclosed).toEqual([...withGroups].filter((path) => presentable.includes(path)).sort());
      }),
      { numRuns: 15 },
    );
  });
});
