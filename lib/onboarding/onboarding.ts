import { randomUUID } from 'node:crypto';
import type * as z from 'zod';
import type { Caller } from '../api-keys/authenticator.js';
import { cardTagPrefix } from '../crypto/card-tag.js';
import {
  generateRsaKeyPair,
  parseImportedPublicKey,
  parsePublicKey,
  publicKeyDer,
  type KeyWrapAlgorithm,
} from '../crypto/keys.js';
import { sealingProblem } from '../crypto/envelope.js';
import { InvalidPublicKeyError } from '../crypto/errors.js';
import type { KeyPairRecord } from '../db/key-pairs.js';
import { ERASED_CARD_DAYS, type UserRecord } from '../db/users.js';
import type { AppDeps } from '../app/deps.js';
import type { registerBody } from './schemas.js';
import { InvalidRequestError, KeyGenerationError } from '../kernel/errors.js';
import { AlreadyRegisteredError, KeyNotFoundError } from './vocabulary.js';

export interface GeneratedKeyPair {
  keyId: string;
  publicKey: string;
  privateKey: string;
  algorithm: 'RSA-OAEP-256';
}

type OnboardingDeps = Pick<AppDeps, 'clock' | 'repos' | 'audit' | 'logger'>;

/** Stores a public key bound to the caller's client under a new keyId, and audits it. */
async function storePublicKey(
  deps: OnboardingDeps,
  caller: Caller,
  requestId: string,
  key: Pick<KeyPairRecord, 'publicKey' | 'algorithm' | 'origin'>,
): Promise<string> {
  const keyId = randomUUID();
  await deps.repos.keyPairs.create({
    keyId,
    clientId: caller.clientId,
    createdAt: deps.clock.now().toISOString(),
    ...key,
  });
  await deps.audit.record({
    action: key.origin === 'imported' ? 'key.import' : 'key.generate',
    outcome: 'success',
    requestId,
    clientId: caller.clientId,
    keyId,
  });
  return keyId;
}

/** RSA-2048 off the event loop; only the public half is stored, the private half is returned once. */
export async function generateKeyPairFor(
  deps: OnboardingDeps,
  caller: Caller,
  requestId: string,
): Promise<GeneratedKeyPair> {
  let pair: { publicKey: string; privateKey: string };
  try {
    pair = await generateRsaKeyPair();
  } catch (error) {
    deps.logger.error('key generation failed', {
      requestId,
      error: error instanceof Error ? error.name : 'unknown',
    });
    throw new KeyGenerationError();
  }
  const keyId = await storePublicKey(deps, caller, requestId, {
    publicKey: pair.publicKey,
    algorithm: 'RSA-OAEP-256',
    origin: 'generated',
  });
  return { keyId, publicKey: pair.publicKey, privateKey: pair.privateKey, algorithm: 'RSA-OAEP-256' };
}

export interface ImportedKey {
  keyId: string;
  publicKey: string;
  algorithm: KeyWrapAlgorithm;
}

/**
 * Stores the public half of a key pair made on a device, in canonical form (a compressed P-256 point
 * decompressed), once a test envelope has been sealed to it. Bound to the importing client exactly like a
 * generated pair, so register and rotate-user-key treat the two alike and no other client can use it.
 * The algorithm is recorded for readers of the table; sealing derives it from the SPKI's key type.
 */
export async function importKeyFor(
  deps: OnboardingDeps,
  caller: Caller,
  publicKey: unknown,
  requestId: string,
): Promise<ImportedKey> {
  const imported = parseImportedPublicKey(publicKey, 'publicKey');
  // Proven, not only parsed: a key nothing can be sealed to would fail every merchant paying the card.
  const problem = sealingProblem(imported.key);
  if (problem !== undefined) throw new InvalidPublicKeyError('publicKey', problem);
  const keyId = await storePublicKey(deps, caller, requestId, {
    publicKey: imported.spki,
    algorithm: imported.algorithm,
    origin: 'imported',
  });
  return { keyId, publicKey: imported.spki, algorithm: imported.algorithm };
}

export type RegisterInput = z.infer<typeof registerBody>;

/**
 * Registers a user for a key this client generated or imported and has not bound yet. Nothing escrowed is handed
 * over here: registering proves nothing about who issues the card, so escrowed receipts wait for a
 * claim with the card transaction (lib/receipts/claim.ts). The card is kept as its card tag only.
 */
export async function registerUser(
  deps: Pick<AppDeps, 'clock' | 'repos' | 'audit' | 'logger' | 'cardTags' | 'telemetry'>,
  caller: Caller,
  input: RegisterInput,
  requestId: string,
): Promise<{ user: UserRecord }> {
  const keyPair = await deps.repos.keyPairs.get(input.keyId);
  // Another client's key is reported exactly like a missing one.
  if (!keyPair || keyPair.clientId !== caller.clientId) throw new KeyNotFoundError();
  if (keyPair.userId) {
    // Every 409 of register is counted, as the register-conflicts alarm reads it (infra/monitoring.ts).
    deps.telemetry.count('RegisterConflicts');
    throw new AlreadyRegisteredError('This keyId is already bound to a user', { field: 'keyId' });
  }
  const presented = publicKeyDer(parsePublicKey(input.publicKey)).toString('base64');
  if (presented !== keyPair.publicKey) {
    throw new InvalidRequestError('publicKey is not the public key generated for this keyId', [
      { field: 'publicKey', message: 'does not match the key pair generated for keyId' },
    ]);
  }
  const [cardTag, ...olderTags] = (await deps.cardTags.keyring()).tagsOf(input.hashedPan);
  const user: UserRecord = {
    userId: randomUUID(),
    cardTag: cardTag!,
    keyId: input.keyId,
    publicKey: keyPair.publicKey,
    clientId: caller.clientId,
    status: 'active',
    registeredAt: deps.clock.now().toISOString(),
  };
  const outcome = await deps.repos.users.register(user, olderTags);
  if (outcome !== 'registered') {
    // A card registered twice may be a fintech user typing in someone else's card, or its issuer
    // arriving after a wrong registration: an operator looks (alarm), and can unbind the wrong one.
    deps.telemetry.count('RegisterConflicts');
    await deps.audit.record({
      action: 'user.register-conflict',
      outcome: 'failure',
      reason: outcome === 'pan-taken' ? 'card already registered' : 'key already bound',
      requestId,
      clientId: caller.clientId,
      keyId: user.keyId,
      cardTagPrefix: cardTagPrefix(user.cardTag),
    });
    if (outcome === 'pan-taken')
      throw new AlreadyRegisteredError('This hashedPan is already registered', { field: 'hashedPan' });
    throw new AlreadyRegisteredError('This keyId is already bound to a user', { field: 'keyId' });
  }
  await deps.audit.record({
    action: 'user.register',
    outcome: 'success',
    requestId,
    clientId: caller.clientId,
    userId: user.userId,
    keyId: user.keyId,
    cardTagPrefix: cardTagPrefix(user.cardTag),
  });
  // Erase then register the same card again: a client grinding claims (the allowance is per card and
  // client, so it gains nothing) or a cardholder who came back. Either way an operator looks (alarm).
  const erased = await deps.repos.users.recentErasureOfCard(
    [cardTag!, ...olderTags],
    caller.clientId,
    deps.clock.now(),
  );
  if (erased) {
    deps.telemetry.count('ReRegistrations');
    await deps.audit.record({
      action: 'user.re-register',
      outcome: 'success',
      reason: `card registered again ${ERASED_CARD_DAYS} days or less after this client erased its user (at ${erased.erasedAt})`,
      requestId,
      clientId: caller.clientId,
      userId: user.userId,
      keyId: user.keyId,
      cardTagPrefix: cardTagPrefix(user.cardTag),
    });
  }
  return { user };
}
