import { flattenedVerify, importJWK } from 'jose';
import {
  parseSignature,
  ReceiptSignatureError,
  signedReceiptBytes,
  type MerchantSignature,
  type ParsedSignature,
  type SignableReceipt,
} from '@receipt-service/receipt-core';
import type { Caller } from '../api-keys/authenticator.js';
import type { CoreDeps } from '../app/deps.js';
import { ReceiptSignatureRefusedError } from './vocabulary.js';
import { isHighS } from './key-proofs.js';

/**
 * The Receipt-Signature header of a create, encrypt or refund request (docs/ENVELOPE.md, "The
 * merchant's signature"). The profile (compact, detached, EdDSA or ES256, a kid) and the signed bytes
 * (RFC 8785 JSON of the receipt less merchantSignature) are the SDK's own functions, the very ones
 * a till signs with; the signature itself is checked by jose. Every refusal is 400 invalid_signature
 * naming what failed, and comes before anything is charged or stored.
 */
export type SignatureDeps = Pick<CoreDeps, 'repos' | 'audit'>;

export type { MerchantSignature };

/** How the request is to be signed: with the header it carries, or not at all. */
export type Signing = { jws: string } | null;

/**
 * Whether this request is signed: it is when it carries the header. Without one it is refused when
 * the merchant client requires signatures.
 */
export async function signingOf(
  deps: SignatureDeps,
  caller: Caller,
  header: string | undefined,
  requestId: string,
): Promise<Signing> {
  if (header !== undefined) return { jws: header };
  const policy = await deps.repos.merchantKeys.policy(caller.clientId);
  if (!policy?.requireSignatures) return null;
  return refuse(deps, caller, requestId, {
    reason: 'unsigned',
    message:
      'This merchant client requires signed receipts: send Receipt-Signature, a detached JWS over the receipt',
  });
}

interface Refusal {
  reason: string;
  message: string;
  kid?: string;
}

/** Audits the refusal (a merchant's signing going wrong may be someone else using its API key) and throws. */
async function refuse(
  deps: SignatureDeps,
  caller: Caller,
  requestId: string,
  refusal: Refusal,
): Promise<never> {
  await deps.audit.record({
    action: 'receipt.signature',
    outcome: 'failure',
    requestId,
    clientId: caller.clientId,
    reason: `${refusal.reason}${refusal.kid ? ` (kid ${refusal.kid})` : ''}`,
  });
  throw new ReceiptSignatureRefusedError(
    refusal.message,
    refusal.reason,
    refusal.kid ? { kid: refusal.kid } : {},
  );
}

/**
 * Checks `jws` over `receipt` (exactly what will be sealed) for the calling merchant client, and
 * returns what the sealed receipt then carries. The key must be the caller's, registered and not
 * revoked, and of the header's alg.
 */
export async function checkReceiptSignature(
  deps: SignatureDeps,
  input: { caller: Caller; jws: string; receipt: SignableReceipt; requestId: string },
): Promise<MerchantSignature> {
  const { caller, requestId } = input;
  const fail = (refusal: Refusal) => refuse(deps, caller, requestId, refusal);
  let parsed: ParsedSignature;
  let payload: Uint8Array;
  try {
    parsed = parseSignature(input.jws);
    payload = signedReceiptBytes(input.receipt);
  } catch (error) {
    if (!(error instanceof ReceiptSignatureError)) throw error;
    return fail({ reason: error.reason, message: error.message });
  }
  const { kid } = parsed;
  const key = await deps.repos.merchantKeys.get(kid);
  if (!key) return fail({ reason: 'unknown_kid', message: `No signing key has the kid ${kid}`, kid });
  if (key.clientId !== caller.clientId) {
    return fail({
      reason: 'foreign_kid',
      message: `The signing key ${kid} belongs to another merchant client: sign with a key of your own`,
      kid,
    });
  }
  if (key.revokedAt) {
    return fail({
      reason: 'revoked_kid',
      message: `The signing key ${kid} was revoked at ${key.revokedAt}`,
      kid,
    });
  }
  if (key.alg !== parsed.alg) {
    return fail({
      reason: 'algorithm',
      message: `The JWS alg ${parsed.alg} is not the alg of the signing key ${kid} (${key.alg})`,
      kid,
    });
  }
  const [, , signature] = input.jws.split('.');
  if (isHighS(key.alg, parsed.signature)) {
    return fail({
      reason: 'high_s',
      message:
        'The ES256 signature is in high-S form: only s ≤ n/2 is accepted (one spelling per signature; the SDK signs so)',
      kid,
    });
  }
  try {
    await flattenedVerify(
      {
        protected: parsed.protectedHeader,
        payload: Buffer.from(payload).toString('base64url'),
        signature: signature!,
      },
      await importJWK(key.publicKey, key.alg),
      { algorithms: [key.alg] },
    );
  } catch {
    return fail({
      reason: 'mismatch',
      message:
        'The signature does not verify over the receipt this request makes: sign the RFC 8785 JSON of the ' +
        'DigitalReceipt the service seals (the SDK: toDigitalReceipt, then signReceipt), not the request body',
      kid,
    });
  }
  return { kid, jws: input.jws };
}

/**
 * The receipt to seal: as it is when the request is not signed, else with the merchant's checked
 * signature inside it (a refusal throws before anything is stored).
 */
export async function sealedWithSignature<R extends SignableReceipt>(
  deps: SignatureDeps,
  signing: Signing,
  input: { caller: Caller; receipt: R; requestId: string },
): Promise<R & { merchantSignature?: MerchantSignature }> {
  if (!signing) return input.receipt;
  const merchantSignature = await checkReceiptSignature(deps, { ...input, jws: signing.jws });
  return { ...input.receipt, merchantSignature };
}
