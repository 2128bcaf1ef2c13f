import { randomBytes } from 'node:crypto';
import { compactVerify, decodeProtectedHeader, importJWK } from 'jose';
import { canonicalJson, hasHighS } from '@receipt-service/receipt-core';
import type { CoreDeps } from '../app/deps.js';
import type { SigningAlgorithm, SigningJwk } from '../db/merchant-keys.js';
import { epochSeconds } from '../kernel/clock.js';
import { InvalidRequestError } from '../kernel/errors.js';
import { KeyChangeProofRequiredError } from './vocabulary.js';

/**
 * Proofs over a merchant's signing keys (DECISIONS, Round 4, "Merchant keys and gateway events"):
 * a registration proves possession of the new key, and once a client holds an active key every
 * change to its keys or its policy is signed by one of them. Each proof is a compact JWS over the
 * RFC 8785 JSON of `{ action, clientId, kid | target, nonce }`, the nonce a challenge the service
 * issued to this client (single use, CHALLENGE_SECONDS).
 */
export type ProofDeps = { repos: Pick<CoreDeps['repos'], 'merchantKeys'> } & Pick<CoreDeps, 'clock'>;

export const CHALLENGE_SECONDS = 300;

export type KeyChangeAction = 'add-key' | 'revoke-key' | 'signing-policy';

/** POST /merchants/signing-keys/challenges: a fresh nonce for this client, valid CHALLENGE_SECONDS. */
export async function issueKeyChallenge(
  deps: ProofDeps,
  clientId: string,
): Promise<{ nonce: string; expiresAt: string }> {
  const now = deps.clock.now();
  const nonce = randomBytes(32).toString('base64url');
  const expires = new Date(now.getTime() + CHALLENGE_SECONDS * 1000);
  await deps.repos.merchantKeys.putChallenge({
    nonce,
    ownerClientId: clientId,
    expiresAt: expires.toISOString(),
    ttl: epochSeconds(expires) + 3_600,
  });
  return { nonce, expiresAt: expires.toISOString() };
}

/** ES256's s at most n/2 (one spelling per signature); high-S twins of valid signatures are refused. */
export function isHighS(alg: SigningAlgorithm, signature: Uint8Array): boolean {
  return alg === 'ES256' && hasHighS(signature);
}

interface ProofCheck {
  jws: string;
  /** The key that must have made it, and its alg. */
  key: { publicKey: SigningJwk; alg: SigningAlgorithm; kid: string };
  /** What it must say, less the nonce. */
  statement: Record<string, string>;
}

type ProofProblem = { reason: string; message: string };

/** Checks one proof; the nonce it carries when it holds, else what is wrong with it. */
async function checkProof(check: ProofCheck): Promise<{ nonce: string } | ProofProblem> {
  const parts = check.jws.split('.');
  if (parts.length !== 3 || parts.some((part) => !/^[A-Za-z0-9_-]+$/.test(part))) {
    return { reason: 'malformed', message: 'is not a compact JWS (<protected>.<payload>.<signature>)' };
  }
  let header: { alg?: unknown; kid?: unknown; b64?: unknown; crit?: unknown };
  let statement: unknown;
  try {
    header = decodeProtectedHeader(check.jws);
    statement = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
  } catch {
    return { reason: 'malformed', message: 'has no readable protected header or JSON payload' };
  }
  if (header.b64 !== undefined || header.crit !== undefined) {
    return { reason: 'malformed', message: 'may not carry b64 or crit' };
  }
  if (header.alg !== check.key.alg) {
    return {
      reason: 'algorithm',
      message: `must be signed with ${check.key.alg} by the key ${check.key.kid}`,
    };
  }
  if (header.kid !== undefined && header.kid !== check.key.kid) {
    return { reason: 'kid_mismatch', message: `names the key ${String(header.kid)}, not ${check.key.kid}` };
  }
  const nonce = (statement as { nonce?: unknown } | null)?.nonce;
  if (typeof nonce !== 'string') return { reason: 'statement', message: 'carries no nonce' };
  const expected = canonicalJson({ ...check.statement, nonce });
  if (Buffer.from(parts[1]!, 'base64url').toString('utf8') !== expected) {
    return {
      reason: 'statement',
      message: `must sign exactly the RFC 8785 JSON of ${canonicalJson({ ...check.statement, nonce: '…' })}`,
    };
  }
  if (isHighS(check.key.alg, Buffer.from(parts[2]!, 'base64url'))) {
    return { reason: 'high_s', message: 'is an ES256 signature in high-S form: sign with s ≤ n/2' };
  }
  try {
    await compactVerify(check.jws, await importJWK(check.key.publicKey, check.key.alg), {
      algorithms: [check.key.alg],
    });
  } catch {
    return { reason: 'mismatch', message: `does not verify under the key ${check.key.kid}` };
  }
  return { nonce };
}

/** Spends the proof's nonce (single use); false when it is unknown, spent, another client's or expired. */
const spend = (deps: ProofDeps, nonce: string, clientId: string) =>
  deps.repos.merchantKeys.consumeChallenge(nonce, clientId, deps.clock.now());

/**
 * The registration's `proof`: a JWS by the key being registered over
 * `{ action: "register", clientId, kid, nonce }`. Missing or wrong is 400 INVALID_REQUEST naming
 * what failed (details.reason, details.fields[0].field "proof"). Returns the nonce, spent later with the rest of the request's (spendNonces).
 */
export async function checkPossession(input: {
  proof: string | undefined;
  clientId: string;
  key: ProofCheck['key'];
}): Promise<string> {
  const refuse = (reason: string, message: string): never => {
    throw new InvalidRequestError(message, [{ field: 'proof', message }], { reason, kid: input.key.kid });
  };
  if (input.proof === undefined) {
    return refuse(
      'proof_missing',
      'proof is missing: registering a signing key needs a proof of possession, a compact JWS by the new key ' +
        'over the RFC 8785 JSON of { action: "register", clientId, kid, nonce } (nonce from POST ' +
        '/api/v1/merchants/signing-keys/challenges)',
    );
  }
  const checked = await checkProof({
    jws: input.proof,
    key: input.key,
    statement: { action: 'register', clientId: input.clientId, kid: input.key.kid },
  });
  if ('reason' in checked) return refuse(`proof_${checked.reason}`, `proof ${checked.message}`);
  return checked.nonce;
}

/**
 * The Key-Change-Proof header of a change to a client's keys or policy, needed while it has an
 * active key: a JWS by one of its active keys (named by the header's kid) over
 * `{ action, clientId, target, nonce }`. Anything missing or wrong is 403 KEY_CHANGE_PROOF_REQUIRED
 * naming it. Returns the nonce to spend, or null when the client has no active key (nothing to prove).
 */
export async function checkKeyChangeProof(
  deps: ProofDeps,
  input: { header: string | undefined; clientId: string; action: KeyChangeAction; target: string },
): Promise<string | null> {
  const active = (await deps.repos.merchantKeys.listForClient(input.clientId)).filter(
    (key) => !key.revokedAt,
  );
  if (active.length === 0) return null;
  const statement = { action: input.action, clientId: input.clientId, target: input.target };
  const refuse = (reason: string, message: string): never => {
    throw new KeyChangeProofRequiredError(message, reason);
  };
  if (input.header === undefined) {
    return refuse(
      'proof_missing',
      'This merchant client has an active signing key, so this change needs a Key-Change-Proof header: a compact ' +
        `JWS by one of its active keys over the RFC 8785 JSON of ${canonicalJson({ ...statement, nonce: '…' })} ` +
        '(nonce from POST /api/v1/merchants/signing-keys/challenges)',
    );
  }
  let kid: unknown;
  try {
    kid = decodeProtectedHeader(input.header).kid;
  } catch {
    kid = undefined;
  }
  const key = active.find((candidate) => candidate.kid === kid);
  if (!key) {
    return refuse(
      'unknown_kid',
      'Key-Change-Proof must name (kid) an active signing key of this merchant client in its protected header',
    );
  }
  const checked = await checkProof({ jws: input.header, key, statement });
  if ('reason' in checked) return refuse(checked.reason, `Key-Change-Proof ${checked.message}`);
  return checked.nonce;
}

/**
 * Spends the request's nonces, once each, after every check passed and before anything changes: a
 * replayed proof finds its nonce gone. A nonce refused here refuses the request with `refusal`.
 */
export async function spendNonces(
  deps: ProofDeps,
  clientId: string,
  nonces: { nonce: string; refusal: () => Error }[],
): Promise<void> {
  const spent = new Set<string>();
  for (const { nonce, refusal } of nonces) {
    if (spent.has(nonce)) continue;
    if (!(await spend(deps, nonce, clientId))) throw refusal();
    spent.add(nonce);
  }
}

export const proofNonceRefused = (what: 'proof' | 'Key-Change-Proof') => (): Error =>
  what === 'proof'
    ? new InvalidRequestError(
        'proof carries a nonce that is unknown, already used, expired or issued to another client: ask for a new challenge',
        [{ field: 'proof', message: 'its nonce is unknown, used, expired or not yours' }],
        { reason: 'proof_nonce' },
      )
    : new KeyChangeProofRequiredError(
        'Key-Change-Proof carries a nonce that is unknown, already used, expired or issued to another client: ask ' +
          'for a new challenge',
        'nonce',
      );
