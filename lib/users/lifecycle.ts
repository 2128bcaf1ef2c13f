import type { Caller } from '../api-keys/authenticator.js';
import type { ErasedUserRecord, UserRecord } from '../db/users.js';
import type { CoreDeps } from '../app/deps.js';
import { ConflictError, NotFoundError } from '../kernel/errors.js';
import { AlreadyRegisteredError, KeyNotFoundError } from '../onboarding/vocabulary.js';
import { auditorFor } from '../access/tokens.js';

type LifecycleDeps = Pick<CoreDeps, 'clock' | 'repos' | 'audit'>;

interface LifecycleInput {
  userId: string;
  caller: Caller;
  requestId: string;
  sourceIp: string;
}

export interface KeyRotation {
  userId: string;
  keyId: string;
  status: 'active';
  keyBoundAt: string;
  /** Live tokens of the previous key, deleted with their slots. */
  tokensRevoked: number;
}

export interface UserErasure {
  userId: string;
  status: 'erased';
  erasedAt: string;
  /** Receipts wrapped for the user that this call deleted. */
  receiptsDeleted: number;
  /** False when the per-call cap was reached: the same DELETE carries on where this one stopped. */
  complete: boolean;
}

/** Receipts one erasure call deletes at most, so a call stays well inside the function's timeout. */
export const ERASE_RECEIPTS_PER_CALL = 500;
/** One BatchWriteItem's worth. */
const DELETE_BATCH = 25;
/** Time kept back to audit and answer: an erasure stops deleting when less than this remains. */
const TIME_RESERVE_MS = 2_000;
/** Rounds of read-and-write when a concurrent rotation keeps changing the user under an erasure. */
const ATTEMPTS = 3;

// A foreign user and a missing one are the same answer, so a userId says nothing about other clients.
const noSuchUser = () => new NotFoundError('No user with this userId', { field: 'userId' });

/** The user if it is this client's; anyone else's is reported exactly like a missing one. */
async function ownUser(deps: LifecycleDeps, userId: string, caller: Caller): Promise<UserRecord | null> {
  const user = await deps.repos.users.getById(userId);
  return user && user.clientId === caller.clientId ? user : null;
}

/**
 * Binds one of this client's users to another key it generated (a lost or new device). Later
 * receipts are wrapped for the new key; the old key's tokens are revoked, and any that slipped past
 * are refused because grant and decrypt compare a token's key with the user's current one. Receipts
 * already wrapped for the old key are left as they are.
 */
export async function rotateUserKey(
  deps: LifecycleDeps,
  input: LifecycleInput & { keyId: string },
): Promise<KeyRotation> {
  const { caller } = input;
  const audit = auditorFor(deps.audit, 'user.rekey', input);
  const user = await ownUser(deps, input.userId, caller);
  if (!user) {
    await audit('failure', 'unknown user or user of another client');
    throw noSuchUser();
  }
  const keyPair = await deps.repos.keyPairs.get(input.keyId);
  if (!keyPair || keyPair.clientId !== caller.clientId) {
    await audit('failure', 'unknown key or key of another client');
    throw new KeyNotFoundError();
  }
  if (keyPair.userId) {
    await audit('failure', 'key already bound');
    throw new AlreadyRegisteredError('This keyId is already bound to a user', { field: 'keyId' });
  }
  const keyBoundAt = deps.clock.now().toISOString();
  const outcome = await deps.repos.users.rebindKey(
    user,
    { keyId: keyPair.keyId, publicKey: keyPair.publicKey },
    keyBoundAt,
  );
  if (outcome === 'key-unavailable') {
    await audit('failure', 'key bound concurrently');
    throw new AlreadyRegisteredError('This keyId is already bound to a user', { field: 'keyId' });
  }
  if (outcome === 'user-changed') {
    await audit('failure', 'user changed concurrently');
    if (!(await ownUser(deps, input.userId, caller))) throw noSuchUser();
    throw new ConflictError("The user's key was changed by a concurrent request; read it and retry", {
      field: 'userId',
    });
  }
  const tokensRevoked = await deps.repos.accessTokens.revokeAllFor(
    user.userId,
    (token) => token.keyId === keyPair.keyId,
  );
  await audit('success', `replaces key ${user.keyId}`);
  return { userId: user.userId, keyId: keyPair.keyId, status: 'active', keyBoundAt, tokensRevoked };
}

/**
 * Erases one of this client's users. The user and its card guard go first, in one transaction that
 * leaves an erasure record, so nothing new is wrapped for the user and no token is granted; then its
 * live tokens, its key bindings and every receipt wrapped for it are deleted. A call deletes at most
 * ERASE_RECEIPTS_PER_CALL receipts, stops while it has time to answer, and says whether it finished; the client that erased the user
 * repeats the call to carry on (the erasure record lets it, and only it).
 */
export async function eraseUser(
  deps: LifecycleDeps,
  input: LifecycleInput & { remainingMs: () => number },
): Promise<UserErasure> {
  const audit = auditorFor(deps.audit, 'user.erase', input);
  const erased = await markErased(deps, input);
  if (!erased) {
    await audit('failure', 'unknown user or user of another client');
    throw noSuchUser();
  }
  await deps.repos.accessTokens.revokeAllFor(erased.userId);
  for (const keyId of erased.keyIds) await deps.repos.keyPairs.deleteBoundTo(keyId, erased.userId);
  const { keys, more } = await deps.repos.receipts.keysForRecipient(erased.userId, ERASE_RECEIPTS_PER_CALL);
  let receiptsDeleted = 0;
  for (let start = 0; start < keys.length; start += DELETE_BATCH) {
    // Stop while there is time to answer: the caller repeats the call rather than see it time out.
    if (input.remainingMs() < TIME_RESERVE_MS) break;
    const batch = keys.slice(start, start + DELETE_BATCH);
    // Their evidence entries first: a call cut short between the two finds the receipts again.
    // Named by the receipts themselves (StoredReceipt.evidenceIds).
    await deps.repos.evidence.deleteAll(await deps.repos.receipts.evidenceKeysOfTableKeys(batch));
    await deps.repos.receipts.deleteAll(batch);
    receiptsDeleted += batch.length;
  }
  const complete = !more && receiptsDeleted === keys.length;
  await audit('success', complete ? undefined : 'receipts remain: erasure to be repeated');
  return { userId: erased.userId, status: 'erased', erasedAt: erased.erasedAt, receiptsDeleted, complete };
}

/** The erasure record: made now for a live user, or found when this client erased it before. */
async function markErased(deps: LifecycleDeps, input: LifecycleInput): Promise<ErasedUserRecord | null> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const user = await ownUser(deps, input.userId, input.caller);
    if (!user) {
      const erased = await deps.repos.users.getErased(input.userId);
      return erased && erased.clientId === input.caller.clientId ? erased : null;
    }
    const erased = await deps.repos.users.markErased(user, deps.clock.now().toISOString());
    if (erased) return erased;
  }
  throw new ConflictError('The user kept changing during the erasure; retry', { field: 'userId' });
}
