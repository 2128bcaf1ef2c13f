/**
 * Presentable receipts (DECISIONS, round 4, "Key transparency and presentable receipts"; docs/ENVELOPE.md,
 * "The receipt credential"): the till issues the receipt as an SD-JWT VC (`typ: dc+sd-jwt`) under its
 * merchant signing key, the cardholder presents only the claims a warranty desk or an expense claim
 * needs (the merchant, the date, the total), and anyone checks the presentation with the merchant's
 * JWKS. The claims carry the vReceipt names (toVReceipt, EWC ds011) where a receipt has them; every
 * claim below the top-level groups is selectively disclosable, and so is every group.
 *
 * The SD-JWT mechanics are @sd-jwt/core's (issue, present, verify); the JWS check is jose's
 * (the JWKS key the header's kid names, ES256 only; `typ` checked after it); WebCrypto hashes, salts and signs.
 * No holder binding: a presentation proves the merchant issued the receipt, not who shows it.
 *
 * An entry point of its own (`@receipt-service/receipt-core/credential`, the SDK's
 * `@receipt-service/sdk/credential`): @sd-jwt/core, @sd-jwt/decode and jose are optional peer
 * dependencies, so an app that does not present receipts installs none of them. @sd-jwt/core rather than
 * @sd-jwt/sd-jwt-vc: the latter adds zod (whose eval probe a strict Content-Security-Policy reports),
 * a status-list client and pako, none of which a receipt uses; the `typ`, `vct` and `iss` it would check
 * are checked here.
 */
import { decodeSdJwt, unpack } from '@sd-jwt/decode';
import { SDJwtInstance, type SdJwtPayload } from '@sd-jwt/core';
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { encodeBase64Url } from './base64.js';
import { currencyExponent, decimalAmount, localDate, type DigitalReceipt12 } from './formats/receipt.js';
import { VRECEIPT_VCT, vReceiptParty, type VReceiptParty } from './formats/vreceipt.js';
import { lowS } from './signing.js';
import { subtle, type WebCryptoKey } from './webcrypto.js';

/** The JWS `typ` of an SD-JWT VC (draft-ietf-oauth-sd-jwt-vc). */
export const RECEIPT_CREDENTIAL_TYP = 'dc+sd-jwt';

/** What `presentReceipt` shows when asked for the basics: the seller, the date, the total and its currency. */
export const RECEIPT_PRESENTATION_BASICS: readonly string[] = [
  'Party.partyName_',
  'PurchaseReceipt.issueDate',
  'MonetaryTotal.payableAmount',
  'PurchaseReceipt.documentCurrencyCode',
];

/** The path of a merchant client's JWKS on a deployment: a credential's `iss` is the absolute URL of it. */
export const merchantJwksPath = (merchantClientId: string): string =>
  `/api/v1/merchants/${encodeURIComponent(merchantClientId)}/jwks.json`;

/** @sd-jwt/core's instance, its JWS `typ` that of an SD-JWT VC. */
class ReceiptSdJwt extends SDJwtInstance<SdJwtPayload> {
  protected override type = RECEIPT_CREDENTIAL_TYP;
}

export class ReceiptCredentialError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ReceiptCredentialError';
  }
}

interface ItemProperty {
  itemPropertyName: string;
  value: string;
}

/** The credential's claims once every disclosure is shown (the JWT's own `iss`, `iat`, `vct` aside). */
export interface ReceiptCredentialClaims {
  PurchaseReceipt: {
    iD: string;
    issueDate: string;
    documentCurrencyCode: string;
    note?: string;
    salesDocumentReference?: string;
  };
  MonetaryTotal: { lineExtensionAmount: number; payableAmount: number };
  TaxTotal: { taxAmount: number };
  Party: VReceiptParty;
  PurchaseReceiptLine: {
    iD: string;
    quantity: number;
    item_: { itemInstance_: { additionalItemProperty: ItemProperty[] } };
  }[];
  CardAccount?: { networkID?: string; accountNumberID: string };
  Payment: { paidAmount: number; transactionID: string };
}

const defined = <T extends object>(value: T): T =>
  Object.fromEntries(Object.entries(value).filter(([, member]) => member !== undefined)) as T;

/**
 * The claims of a receipt's credential, named as toVReceipt names them. Unlike toVReceipt, nothing a
 * receipt may lack is required: lines carry their net amounts as item properties (a line's tax need not
 * be stated), and no VAT breakdown is asked for.
 */
export function receiptCredentialClaims(receipt: DigitalReceipt12): ReceiptCredentialClaims {
  const { summary, merchant, transaction } = receipt;
  const exponent = currencyExponent(summary.currency);
  const amount = (minor: number) => Number(decimalAmount(minor, exponent));
  const card = transaction.cardDetails;
  return {
    PurchaseReceipt: defined({
      iD: receipt.receiptId,
      issueDate: localDate(transaction.datetime, transaction.timezone),
      documentCurrencyCode: summary.currency,
      note: receipt.notes ?? undefined,
      salesDocumentReference: receipt.type === 'refund' ? (receipt.relatedReceiptId ?? undefined) : undefined,
    }),
    MonetaryTotal: {
      lineExtensionAmount: amount(receipt.items.reduce((total, item) => total + item.totalPrice, 0)),
      payableAmount: amount(summary.total),
    },
    TaxTotal: { taxAmount: amount(summary.totalTax) },
    Party: vReceiptParty(merchant),
    PurchaseReceiptLine: receipt.items.map((item, index) => ({
      iD: String(index + 1),
      quantity: item.quantity,
      item_: {
        itemInstance_: {
          additionalItemProperty: [
            { itemPropertyName: 'name', value: item.name },
            ...(item.sku ? [{ itemPropertyName: 'sku', value: item.sku }] : []),
            { itemPropertyName: 'unitPrice', value: decimalAmount(item.unitPrice, exponent) },
            { itemPropertyName: 'totalPrice', value: decimalAmount(item.totalPrice, exponent) },
          ],
        },
      },
    })),
    ...(transaction.paymentMethod === 'card' && card?.last4
      ? { CardAccount: defined({ accountNumberID: card.last4, networkID: card.brand ?? undefined }) }
      : {}),
    Payment: { paidAmount: amount(summary.total), transactionID: transaction.transactionId },
  };
}

/** Every claim disclosable: each group, each member of a group, each line and each member of a line. */
function disclosureFrame(claims: ReceiptCredentialClaims) {
  const members = (group: object) => ({ _sd: Object.keys(group) });
  return {
    _sd: Object.keys(claims),
    PurchaseReceipt: members(claims.PurchaseReceipt),
    MonetaryTotal: members(claims.MonetaryTotal),
    TaxTotal: members(claims.TaxTotal),
    Party: members(claims.Party),
    PurchaseReceiptLine: {
      _sd: claims.PurchaseReceiptLine.map((_, index) => index),
      ...Object.fromEntries(claims.PurchaseReceiptLine.map((line, index) => [index, members(line)])),
    },
    ...(claims.CardAccount ? { CardAccount: members(claims.CardAccount) } : {}),
    Payment: members(claims.Payment),
  };
}

/** SHA-256 by WebCrypto: the one `_sd_alg` issued and accepted. */
async function hasher(data: string | ArrayBuffer, alg: string): Promise<Uint8Array> {
  if (alg.toLowerCase() !== 'sha-256') throw new ReceiptCredentialError(`_sd_alg ${alg} is not sha-256`);
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(data);
  return new Uint8Array(await subtle().digest('SHA-256', bytes));
}

/** 128 bits of salt per disclosure, from the platform's CSPRNG. */
function saltGenerator(length: number): string {
  return encodeBase64Url(globalThis.crypto.getRandomValues(new Uint8Array(length)));
}

function isP256(key: WebCryptoKey): boolean {
  const { name, namedCurve } = key.algorithm as { name: string; namedCurve?: string };
  return name === 'ECDSA' && namedCurve === 'P-256';
}

export interface IssueOptions {
  /** The merchant's JWKS URL (`iss`): `${baseUrl}/api/v1/merchants/{merchantClientId}/jwks.json`. */
  issuer: string;
  /** When the credential was issued (`iat`); now unless given. */
  issuedAt?: Date;
}

/**
 * The till's credential for `receipt` (what the service seals: `toDigitalReceipt(body)` for a flattened
 * request), signed ES256 with the merchant's P-256 signing key `kid`. Send it as `receiptCredential`
 * beside the receipt; the service checks it and seals it inside the receipt for the cardholder.
 */
export async function issueReceiptCredential(
  receipt: DigitalReceipt12,
  privateKey: WebCryptoKey,
  kid: string,
  options: IssueOptions,
): Promise<string> {
  if (!isP256(privateKey)) {
    throw new ReceiptCredentialError('A receipt credential is signed ES256: the key must be ECDSA P-256');
  }
  if (!/^https?:\/\//.test(options.issuer)) {
    throw new ReceiptCredentialError("The issuer must be the merchant's JWKS URL");
  }
  const claims = receiptCredentialClaims(receipt);
  const sdjwt = new ReceiptSdJwt({
    hasher,
    hashAlg: 'sha-256',
    saltGenerator,
    signAlg: 'ES256',
    // WebCrypto signs (r ‖ s, the JWS form), given low-S as the house's ES256 signatures are.
    signer: async (data) =>
      encodeBase64Url(
        lowS(
          'ES256',
          new Uint8Array(
            await subtle().sign(
              { name: 'ECDSA', hash: 'SHA-256' },
              privateKey,
              new TextEncoder().encode(data),
            ),
          ),
        ),
      ),
  });
  return sdjwt.issue(
    {
      iss: options.issuer,
      iat: Math.floor((options.issuedAt ?? new Date()).getTime() / 1000),
      vct: VRECEIPT_VCT,
      ...claims,
    },
    // The frame's member lists are the claims' own keys; @sd-jwt's type wants them as literal unions.
    disclosureFrame(claims) as never,
    { header: { kid } },
  );
}

const presenter = () => new ReceiptSdJwt({ hasher });

/** The dotted paths a credential can disclose (`PurchaseReceipt.issueDate`, `PurchaseReceiptLine.0.quantity`, …). */
export async function presentableReceiptClaims(credential: string): Promise<string[]> {
  try {
    return (await presenter().presentableKeys(credential)).sort();
  } catch (error) {
    throw new ReceiptCredentialError('This is not a receipt credential', { cause: error });
  }
}

type Frame = { [key: string]: true | Frame };

/**
 * A presentation of `credential` that discloses the claims at `disclose` (dotted paths as
 * presentableReceiptClaims names them; a group's members need not list the group) and nothing else:
 * the undisclosed claims' disclosures are left out, so the presentation does not carry them.
 */
export async function presentReceipt(
  credential: string,
  disclose: readonly string[] = RECEIPT_PRESENTATION_BASICS,
): Promise<string> {
  const presentable = new Set(await presentableReceiptClaims(credential));
  const frame: Frame = {};
  for (const path of disclose) {
    if (!presentable.has(path)) {
      throw new ReceiptCredentialError(`${path} is not a claim this credential can disclose`);
    }
    const segments = path.split('.');
    let node = frame;
    segments.forEach((segment, index) => {
      if (index === segments.length - 1) {
        if (node[segment] === undefined) node[segment] = true;
        return;
      }
      const next = node[segment];
      node = next === undefined || next === true ? (node[segment] = {}) : next;
    });
  }
  return presenter().present(credential, frame as never);
}

/**
 * A JWK Set (RFC 7517 §5) as GET /api/v1/merchants/{merchantClientId}/jwks.json serves it. Declared here,
 * not as jose's type, so an app's declarations compile without the optional peers installed.
 */
export interface ReceiptJwks {
  keys: { kty: string; kid?: string; alg?: string; use?: string; crv?: string; x?: string; y?: string }[];
}

export interface VerifiedPresentation {
  /** The claims the presentation discloses, vReceipt-named, with the JWT's `iss`, `iat` and `vct`. */
  claims: Partial<ReceiptCredentialClaims> & { iss: string; iat?: number; vct: string };
  /** The dotted paths of the disclosures it carries. */
  disclosed: string[];
  /** The merchant key that signed it. */
  kid: string;
}

/**
 * The paths of the presentation's disclosures, each referenced by a digest in the signed payload or in
 * another disclosure (@sd-jwt's own unpacking). RFC 9901 §7.1: a disclosure no digest references, or one
 * sent twice, rejects the whole presentation; @sd-jwt 0.19's verify would leave it out silently, so an
 * altered claim would vanish instead of failing.
 */
async function referencedDisclosures(presentation: string): Promise<string[]> {
  const { jwt, disclosures } = await decodeSdJwt(presentation, hasher);
  const { disclosureKeymap } = await unpack(jwt.payload, disclosures, hasher);
  const referenced = new Set(Object.values(disclosureKeymap));
  const digests = await Promise.all(
    disclosures.map((disclosure) => disclosure.digest({ hasher, alg: 'sha-256' })),
  );
  if (new Set(digests).size !== digests.length) throw new Error('a disclosure is sent twice');
  if (digests.some((digest) => !referenced.has(digest))) {
    throw new Error('a disclosure is not referenced by the signed credential (altered or foreign)');
  }
  return Object.keys(disclosureKeymap).sort();
}

/**
 * Checks a presentation (or a whole credential) against the merchant's JWKS (GET
 * /api/v1/merchants/{merchantClientId}/jwks.json, whose URL is the credential's `iss`): the issuer's
 * ES256 signature by the key the header's kid names, `typ` dc+sd-jwt, `vct` the vReceipt type, and
 * every disclosure's digest in the signed payload. Resolves to the disclosed claims; throws
 * ReceiptCredentialError for a bad signature, a kid not in the set, or an altered disclosure.
 */
export async function verifyReceiptPresentation(
  presentation: string,
  jwks: ReceiptJwks,
): Promise<VerifiedPresentation> {
  const keys = createLocalJWKSet(jwks as JSONWebKeySet);
  let kid = '';
  const verifier = new ReceiptSdJwt({
    hasher,
    verifier: async (data: string, signature: string) => {
      const { protectedHeader } = await compactVerify(`${data}.${signature}`, keys, {
        algorithms: ['ES256'],
      });
      if (protectedHeader.typ !== RECEIPT_CREDENTIAL_TYP) {
        throw new ReceiptCredentialError(`The JWS typ is not ${RECEIPT_CREDENTIAL_TYP}`);
      }
      kid = protectedHeader.kid ?? '';
      return true;
    },
  });
  let verified: { payload: Record<string, unknown> };
  let disclosed: string[];
  try {
    verified = (await verifier.verify(presentation)) as { payload: Record<string, unknown> };
    disclosed = await referencedDisclosures(presentation);
  } catch (error) {
    throw new ReceiptCredentialError(
      `The receipt presentation does not verify: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const { payload } = verified;
  if (payload.vct !== VRECEIPT_VCT) {
    throw new ReceiptCredentialError(`The credential's vct is not ${VRECEIPT_VCT}`);
  }
  if (typeof payload.iss !== 'string') throw new ReceiptCredentialError('The credential names no issuer');
  const claims = payload as VerifiedPresentation['claims'];
  return { claims, disclosed, kid };
}
