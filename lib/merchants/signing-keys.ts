import { ed25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';
import { calculateJwkThumbprint } from 'jose';
import type { Caller } from '../api-keys/authenticator.js';
import type { CoreDeps } from '../app/deps.js';
import type { AuditAction } from '../db/audit.js';
import type { MerchantKeyRecord, SigningAlgorithm, SigningJwk } from '../db/merchant-keys.js';
import { ConflictError, InvalidRequestError, NotFoundError, type FieldProblem } from '../kernel/errors.js';
import { logKeyEvents, type KeyEventStep } from '../key-log/log.js';
import { announceToClient } from '../webhooks/announce.js';
import { checkKeyChangeProof, checkPossession, proofNonceRefused, spendNonces } from './key-proofs.js';

/**
 * Merchant signing keys (DECISIONS, Round 3, "Merchant-signed receipts"): registered, listed and
 * revoked by the merchant client that owns them, read by anyone who must check a receipt. A key is
 * named by its RFC 7638 thumbprint, so one public key has one kid and one owner.
 */
export type SigningKeyDeps = {
  repos: Pick<CoreDeps['repos'], 'merchantKeys' | 'webhooks' | 'webhookDeliveries' | 'keyLog'>;
} & Pick<CoreDeps, 'clock'> & {
    audit: Pick<CoreDeps['audit'], 'record'>;
  };

export type KeyChange =
  | { change: 'key-registered'; kid: string }
  | { change: 'key-revoked'; kid: string }
  | { change: 'key-taken-over'; kid: string }
  | { change: 'signing-policy'; requireSignatures: boolean }
  | { change: 'keys-reset-by-operator'; revokedKids: string[] };

const AUDIT_ACTION = {
  'key-registered': 'signing-key.register',
  'key-revoked': 'signing-key.revoke',
  'key-taken-over': 'signing-key.take-over',
  'signing-policy': 'signing-policy.set',
  'keys-reset-by-operator': 'signing-key.reset',
} as const satisfies Record<KeyChange['change'], AuditAction>;

/**
 * Every change to a client's keys or policy is audited and announced to it (merchant.keys.changed),
 * so a change it did not make is news to it at once. `by` says who: the merchant's API key with a
 * proof, its API key alone (no active key yet), or the operator.
 */
async function recordKeyChange(
  deps: SigningKeyDeps,
  input: { clientId: string; requestId: string; by: 'api' | 'operator'; change: KeyChange },
): Promise<void> {
  const { change, ...what } = input.change;
  await deps.audit.record({
    action: AUDIT_ACTION[change],
    outcome: 'success',
    requestId: input.requestId,
    clientId: input.clientId,
    reason: `${input.by}: ${JSON.stringify(what)}`,
  });
  const at = deps.clock.now().toISOString();
  await announceToClient(deps, {
    clientId: input.clientId,
    type: 'merchant.keys.changed',
    eventKey: `${input.requestId}|${change}`,
    data: { clientId: input.clientId, change, ...what, by: input.by, at },
  });
}

/** Active keys one merchant client may hold at once (revoked ones do not count). */
export const maxActiveSigningKeys = 20;

export interface SigningKey {
  kid: string;
  alg: SigningAlgorithm;
  publicKey: SigningJwk;
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt: string | null;
}

export const signingKeyOf = (record: MerchantKeyRecord): SigningKey => ({
  kid: record.kid,
  alg: record.alg,
  publicKey: record.publicKey,
  status: record.revokedAt ? 'revoked' : 'active',
  createdAt: record.createdAt,
  revokedAt: record.revokedAt ?? null,
});

/** Members a private JWK has and a public one never does (RFC 7518 §6.2.2, §6.3.2, §6.4). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const KNOWN_MEMBERS = ['kty', 'crv', 'x', 'y', 'alg', 'use', 'key_ops', 'ext', 'kid'];
const ALG_OF = { Ed25519: 'EdDSA', 'P-256': 'ES256' } as const;

const refuse = (problems: FieldProblem[]): never => {
  throw new InvalidRequestError(
    `The signing key is refused: ${problems.map((p) => p.message).join('; ')}`,
    problems,
  );
};

/** 32 bytes of canonical unpadded base64url, or undefined. */
function coordinate(value: unknown): Uint8Array | undefined {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(value)) return undefined;
  const bytes = Buffer.from(value, 'base64url');
  // The 43rd character carries 4 bits of padding that must be zero: one spelling per key.
  return bytes.length === 32 && bytes.toString('base64url') === value ? new Uint8Array(bytes) : undefined;
}

/**
 * The public key a registration sends, checked member by member: each problem named, the private
 * ones first (a key whose private half was sent has left the till and should be replaced).
 */
export function parseSigningJwk(jwk: Record<string, unknown>): {
  publicKey: SigningJwk;
  alg: SigningAlgorithm;
} {
  const field = (member: string) => `publicKey.${member}`;
  const secret = PRIVATE_MEMBERS.filter((member) => member in jwk);
  if (secret.length > 0) {
    refuse(
      secret.map((member) => ({
        field: field(member),
        message: `${member} is private key material: send the public key only (and make a new key, since this one has left the till)`,
      })),
    );
  }
  const { kty, crv } = jwk;
  if (kty === 'RSA' || kty === 'oct') {
    refuse([
      {
        field: field('kty'),
        message: `kty ${kty} is not accepted: a signing key is Ed25519 (OKP) or P-256 (EC)`,
      },
    ]);
  }
  if (kty !== 'OKP' && kty !== 'EC') {
    refuse([{ field: field('kty'), message: 'must be OKP (Ed25519) or EC (P-256)' }]);
  }
  const wanted = kty === 'OKP' ? 'Ed25519' : 'P-256';
  if (crv !== wanted) {
    const said =
      typeof crv === 'string'
        ? `crv ${crv} is not accepted`
        : crv === undefined
          ? 'crv is missing'
          : 'crv must be a string';
    refuse([{ field: field('crv'), message: `${said}: an ${kty} signing key is ${wanted}` }]);
  }
  const curve = crv as 'Ed25519' | 'P-256';
  const alg = ALG_OF[curve];
  const problems: FieldProblem[] = [];
  for (const member of Object.keys(jwk)) {
    if (!KNOWN_MEMBERS.includes(member))
      problems.push({ field: field(member), message: 'is not a member of a public signing JWK' });
  }
  if (jwk.alg !== undefined && jwk.alg !== alg && !(curve === 'Ed25519' && jwk.alg === 'Ed25519')) {
    problems.push({ field: field('alg'), message: `must be ${alg} for a ${curve} key` });
  }
  if (jwk.use !== undefined && jwk.use !== 'sig')
    problems.push({ field: field('use'), message: 'must be sig' });
  if (
    jwk.key_ops !== undefined &&
    !(Array.isArray(jwk.key_ops) && jwk.key_ops.every((op) => op === 'verify') && jwk.key_ops.length > 0)
  ) {
    problems.push({ field: field('key_ops'), message: 'may list verify only' });
  }
  if (jwk.ext !== undefined && typeof jwk.ext !== 'boolean')
    problems.push({ field: field('ext'), message: 'must be a boolean' });
  const x = coordinate(jwk.x);
  if (!x)
    problems.push({ field: field('x'), message: 'must be 32 bytes in unpadded base64url (43 characters)' });
  const y = curve === 'P-256' ? coordinate(jwk.y) : undefined;
  if (curve === 'P-256' && !y) {
    problems.push({ field: field('y'), message: 'must be 32 bytes in unpadded base64url (43 characters)' });
  }
  if (curve === 'Ed25519' && jwk.y !== undefined)
    problems.push({ field: field('y'), message: 'an Ed25519 key has no y' });
  if (problems.length > 0) refuse(problems);

  if (curve === 'Ed25519') {
    let point;
    try {
      point = ed25519.Point.fromBytes(x!);
    } catch {
      refuse([{ field: field('x'), message: 'is not a point of Ed25519' }]);
    }
    // A small-order key verifies signatures nobody made; a mixed-order one makes them malleable.
    if (point!.isSmallOrder()) {
      refuse([{ field: field('x'), message: 'is a small-order point of Ed25519: a weak key, refused' }]);
    }
    if (!point!.isTorsionFree()) {
      refuse([{ field: field('x'), message: 'is a mixed-order point of Ed25519: a weak key, refused' }]);
    }
    return { publicKey: { kty: 'OKP', crv: 'Ed25519', x: jwk.x as string }, alg };
  }
  try {
    p256.Point.fromBytes(new Uint8Array([4, ...x!, ...y!])).assertValidity();
  } catch {
    refuse([{ field: field('x'), message: '(x, y) is not a point on P-256' }]);
  }
  return { publicKey: { kty: 'EC', crv: 'P-256', x: jwk.x as string, y: jwk.y as string }, alg };
}

/**
 * POST /merchants/signing-keys: 201 with the key; the same key again from its owner is the same answer.
 * The registration proves possession of the key (`proof`), and once the client holds an active key the
 * addition is signed by one of them (`keyChangeProof`). A key another client registered without proof
 * (before proofs were asked for) is taken over by the client that proves it holds it: a squatter that
 * never held the private key cannot keep its owner out. A key another client proved is refused (409):
 * two merchants hold the same private key, and each should make a new one.
 */
export async function registerSigningKey(
  deps: SigningKeyDeps,
  input: {
    publicKey: Record<string, unknown>;
    proof: string | undefined;
    keyChangeProof: string | undefined;
    caller: Caller;
    requestId: string;
  },
): Promise<SigningKey> {
  const clientId = input.caller.clientId;
  const { publicKey, alg } = parseSigningJwk(input.publicKey);
  const kid = await calculateJwkThumbprint(publicKey, 'sha256');
  if (input.publicKey.kid !== undefined && input.publicKey.kid !== kid) {
    throw new InvalidRequestError('The signing key is refused: its kid is not its thumbprint', [
      {
        field: 'publicKey.kid',
        message: `is assigned by the service as the key's RFC 7638 thumbprint (${kid}): leave it out`,
      },
    ]);
  }
  const possessionNonce = await checkPossession({
    proof: input.proof,
    clientId,
    key: { publicKey, alg, kid },
  });
  const existing = await deps.repos.merchantKeys.get(kid);
  if (existing && existing.clientId === clientId) {
    if (existing.revokedAt) {
      throw new ConflictError(`This key was revoked at ${existing.revokedAt}: make a new key`, {
        field: 'publicKey',
        kid,
        revokedAt: existing.revokedAt,
      });
    }
    // Already this client's: the same answer, and nothing changes, so nothing to prove but possession.
    return signingKeyOf(existing);
  }
  if (existing?.proven) {
    throw new ConflictError(
      'Another merchant client proved it holds this private key: a key belongs to one merchant, so make a new key',
      { field: 'publicKey', kid },
    );
  }
  const changeNonce = await checkKeyChangeProof(deps, {
    header: input.keyChangeProof,
    clientId,
    action: 'add-key',
    target: kid,
  });
  const active = (await deps.repos.merchantKeys.listForClient(clientId)).filter((key) => !key.revokedAt);
  if (active.length >= maxActiveSigningKeys) {
    throw new ConflictError(
      `A merchant client may hold at most ${maxActiveSigningKeys} active signing keys: revoke one first`,
      { limit: maxActiveSigningKeys },
    );
  }
  await spendNonces(deps, clientId, [
    { nonce: possessionNonce, refusal: proofNonceRefused('proof') },
    ...(changeNonce ? [{ nonce: changeNonce, refusal: proofNonceRefused('Key-Change-Proof') }] : []),
  ]);
  const record = { kid, clientId, alg, publicKey, createdAt: deps.clock.now().toISOString(), proven: true };
  // The log first: a key taken over leaves its old owner's name in the log, then joins the new one's.
  const steps: KeyEventStep[] = [
    ...(existing && !existing.revokedAt
      ? [{ merchantClientId: existing.clientId, event: 'revoked' as const }]
      : []),
    { merchantClientId: clientId, event: 'registered' },
  ];
  await logKeyEvents(deps, { kid, jwk: publicKey, steps, at: record.createdAt });
  const stored = existing
    ? await deps.repos.merchantKeys.takeOver(record, existing.clientId)
    : (await deps.repos.merchantKeys.register(record)).stored;
  if (!stored) {
    throw new ConflictError('This key was registered by another request meanwhile: try again', {
      field: 'publicKey',
      kid,
      retryable: true,
    });
  }
  if (existing) {
    await recordKeyChange(deps, {
      clientId: existing.clientId,
      requestId: input.requestId,
      by: 'api',
      change: { change: 'key-taken-over', kid },
    });
  }
  await recordKeyChange(deps, {
    clientId,
    requestId: input.requestId,
    by: 'api',
    change: { change: 'key-registered', kid },
  });
  return signingKeyOf({ pk: '', ...record });
}

/** GET /merchants/signing-keys: the caller's keys, revoked ones included, and its policy. */
export async function listSigningKeys(
  deps: Pick<CoreDeps, 'repos'>,
  caller: Caller,
): Promise<{ signingKeys: SigningKey[]; requireSignatures: boolean }> {
  const [keys, policy] = await Promise.all([
    deps.repos.merchantKeys.listForClient(caller.clientId),
    deps.repos.merchantKeys.policy(caller.clientId),
  ]);
  return {
    signingKeys: keys.toSorted((a, b) => a.createdAt.localeCompare(b.createdAt)).map(signingKeyOf),
    requireSignatures: policy?.requireSignatures ?? false,
  };
}

/**
 * Every key event goes into the key log (lib/key-log) before the key's record changes, so no key is
 * served that the log does not show: a crash between the two leaves an event the merchant can see
 * and a record that never changed, and the retried request logs nothing twice (logKeyEvents).
 */
const logRevocation = (deps: SigningKeyDeps, key: MerchantKeyRecord, now: Date) =>
  logKeyEvents(deps, {
    kid: key.kid,
    jwk: key.publicKey,
    steps: [{ merchantClientId: key.clientId, event: 'revoked' }],
    at: now.toISOString(),
  });

const unknownKey = () => new NotFoundError('No signing key with this kid', { field: 'kid' });

/**
 * DELETE /merchants/signing-keys/{kid}: revoked at once, whatever the policy (a key that leaked must
 * stop signing now), proven by an active key of the client (which may be the one revoked). Another
 * client's key is the same 404 as an unknown one. A second revocation keeps the first one's time.
 */
export async function revokeSigningKey(
  deps: SigningKeyDeps,
  input: { kid: string; keyChangeProof: string | undefined; caller: Caller; requestId: string },
): Promise<SigningKey> {
  const clientId = input.caller.clientId;
  const key = await deps.repos.merchantKeys.get(input.kid);
  if (!key || key.clientId !== clientId) throw unknownKey();
  const nonce = await checkKeyChangeProof(deps, {
    header: input.keyChangeProof,
    clientId,
    action: 'revoke-key',
    target: input.kid,
  });
  if (nonce) {
    await spendNonces(deps, clientId, [{ nonce, refusal: proofNonceRefused('Key-Change-Proof') }]);
  }
  const now = deps.clock.now();
  if (!key.revokedAt) await logRevocation(deps, key, now);
  const revoked = await deps.repos.merchantKeys.revoke(input.kid, clientId, now);
  if (!revoked) throw unknownKey();
  if (!key.revokedAt) {
    await recordKeyChange(deps, {
      clientId,
      requestId: input.requestId,
      by: 'api',
      change: { change: 'key-revoked', kid: input.kid },
    });
  }
  return signingKeyOf(revoked);
}

/** GET /merchant-keys/{kid}: any issuer or merchant; a revoked key with its revocation time. */
export async function getMerchantKey(deps: Pick<CoreDeps, 'repos'>, kid: string): Promise<SigningKey> {
  const record = await deps.repos.merchantKeys.get(kid);
  if (!record) throw unknownKey();
  return signingKeyOf(record);
}

/**
 * GET /merchants/{merchantClientId}/jwks.json: the client's active keys as a JWK Set, for any verifier.
 * A client that never registered a key is a 404; one whose keys are all revoked has an empty set.
 */
export async function merchantJwks(
  deps: Pick<CoreDeps, 'repos'>,
  merchantClientId: string,
): Promise<{ keys: Array<SigningJwk & { kid: string; alg: SigningAlgorithm; use: 'sig' }> }> {
  const records = await deps.repos.merchantKeys.listForClient(merchantClientId);
  if (records.length === 0)
    throw new NotFoundError('No merchant client with signing keys has this id', {
      field: 'merchantClientId',
    });
  const active = records
    .filter((record) => !record.revokedAt)
    .toSorted((a, b) => a.createdAt.localeCompare(b.createdAt));
  return {
    keys: active.map((record) => ({ ...record.publicKey, kid: record.kid, alg: record.alg, use: 'sig' })),
  };
}

/**
 * Whether the merchant client's create, encrypt and refund requests must be signed: the API
 * (POST /merchants/signing-policy) and the admin CLI (`merchants require-signatures`) both set it
 * here. Requiring signatures needs an active key, or every request would be refused. Through the API,
 * turning it off while the client has an active key needs a Key-Change-Proof (`authority.proof`);
 * the operator's CLI needs none, and says so in the audit and the announcement.
 */
export async function setSigningPolicy(
  deps: SigningKeyDeps,
  input: {
    clientId: string;
    requireSignatures: boolean;
    requestId: string;
    authority: { keyChangeProof: string | undefined } | 'operator';
  },
): Promise<{ requireSignatures: boolean; updatedAt: string }> {
  if (input.requireSignatures) {
    const keys = await deps.repos.merchantKeys.listForClient(input.clientId);
    if (!keys.some((key) => !key.revokedAt)) {
      throw new ConflictError(
        'Register a signing key before requiring signatures: every request would be refused',
        {
          field: 'requireSignatures',
        },
      );
    }
  } else if (input.authority !== 'operator') {
    const nonce = await checkKeyChangeProof(deps, {
      header: input.authority.keyChangeProof,
      clientId: input.clientId,
      action: 'signing-policy',
      target: 'requireSignatures=false',
    });
    if (nonce) {
      await spendNonces(deps, input.clientId, [{ nonce, refusal: proofNonceRefused('Key-Change-Proof') }]);
    }
  }
  const policy = await deps.repos.merchantKeys.setPolicy(
    input.clientId,
    input.requireSignatures,
    deps.clock.now(),
  );
  await recordKeyChange(deps, {
    clientId: input.clientId,
    requestId: input.requestId,
    by: input.authority === 'operator' ? 'operator' : 'api',
    change: { change: 'signing-policy', requireSignatures: input.requireSignatures },
  });
  return { requireSignatures: policy.requireSignatures, updatedAt: policy.updatedAt };
}

/**
 * The operator's recovery of a merchant client that lost every signing key (admin CLI only): all its
 * keys revoked and signatures no longer required, so it can register a new key with its API key
 * alone. Audited and announced to the merchant, whose webhooks hear of it at once.
 */
export async function resetSigningKeys(
  deps: SigningKeyDeps,
  input: { clientId: string; requestId: string },
): Promise<{ revokedKids: string[]; requireSignatures: false }> {
  const now = deps.clock.now();
  const active = (await deps.repos.merchantKeys.listForClient(input.clientId)).filter(
    (key) => !key.revokedAt,
  );
  for (const key of active) {
    await logRevocation(deps, key, now);
    await deps.repos.merchantKeys.revoke(key.kid, input.clientId, now);
  }
  await deps.repos.merchantKeys.setPolicy(input.clientId, false, now);
  const revokedKids = active.map((key) => key.kid);
  await recordKeyChange(deps, {
    clientId: input.clientId,
    requestId: input.requestId,
    by: 'operator',
    change: { change: 'keys-reset-by-operator', revokedKids },
  });
  return { revokedKids, requireSignatures: false };
}
