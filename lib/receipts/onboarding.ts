import { randomUUID } from 'node:crypto';
import type { Caller } from '../api-key-auth.js';
import { rewrapEnvelope, unwrapContentKey } from '../crypto/envelope.js';
import { generateRsaKeyPair, parsePublicKey, publicKeyDer } from '../crypto/keys.js';
import { panHashPrefix } from '../db/audit.js';
import type { ReceiptEnvelope } from '../db/receipts.js';
import type { UserRecord } from '../db/users.js';
import type { AppDeps } from '../deps.js';
import {
  AlreadyRegisteredError,
  InvalidRequestError,
  KeyGenerationError,
  KeyNotFoundError,
} from '../errors.js';

export interface GeneratedKeyPair {
  keyId: string;
  publicKey: string;
  privateKey: string;
  algorithm: 'RSA-OAEP-256';
}

type OnboardingDeps = Pick<AppDeps, 'clock' | 'repos' | 'audit' | 'logger'>;

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
  const keyId = randomUUID();
  await deps.repos.keyPairs.create({
    keyId,
    publicKey: pair.publicKey,
    clientId: caller.clientId,
    createdAt: deps.clock.now().toISOString(),
  });
  await deps.audit.record({
    action: 'key.generate',
    outcome: 'success',
    requestId,
    clientId: caller.clientId,
    keyId,
  });
  return { keyId, publicKey: pair.publicKey, privateKey: pair.privateKey, algorithm: 'RSA-OAEP-256' };
}

export interface RegisterInput {
  hashedPan: string;
  publicKey: string;
  keyId: string;
}

const DAY_MS = 86_400_000;

/**
 * Registers a user for a key this client generated and has not bound yet, then hands the user any
 * receipts escrowed for its hashedPan before it registered.
 */
export async function registerUser(
  deps: Pick<AppDeps, 'clock' | 'repos' | 'audit' | 'logger' | 'escrow' | 'config'>,
  caller: Caller,
  input: RegisterInput,
  requestId: string,
): Promise<{ user: UserRecord; claimedReceipts: number }> {
  const keyPair = await deps.repos.keyPairs.get(input.keyId);
  // Another client's key is reported exactly like a missing one.
  if (!keyPair || keyPair.clientId !== caller.clientId) throw new KeyNotFoundError();
  if (keyPair.userId)
    throw new AlreadyRegisteredError('This keyId is already bound to a user', { field: 'keyId' });
  const presented = publicKeyDer(parsePublicKey(input.publicKey)).toString('base64');
  if (presented !== keyPair.publicKey) {
    throw new InvalidRequestError('publicKey is not the public key generated for this keyId', [
      { field: 'publicKey', message: 'does not match the key pair generated for keyId' },
    ]);
  }
  const user: UserRecord = {
    userId: randomUUID(),
    hashedPan: input.hashedPan,
    keyId: input.keyId,
    publicKey: keyPair.publicKey,
    clientId: caller.clientId,
    status: 'active',
    registeredAt: deps.clock.now().toISOString(),
  };
  const outcome = await deps.repos.users.register(user);
  if (outcome === 'pan-taken')
    throw new AlreadyRegisteredError('This hashedPan is already registered', { field: 'hashedPan' });
  if (outcome === 'key-unavailable')
    throw new AlreadyRegisteredError('This keyId is already bound to a user', { field: 'keyId' });
  await deps.audit.record({
    action: 'user.register',
    outcome: 'success',
    requestId,
    clientId: caller.clientId,
    userId: user.userId,
    keyId: user.keyId,
    panHashPrefix: panHashPrefix(user.hashedPan),
  });
  const claimedReceipts = await claimEscrowedReceipts(deps, user, requestId);
  return { user, claimedReceipts };
}

/** Re-wraps receipts escrowed for this hashedPan to the user's key (only keyBundle and keyId change). */
async function claimEscrowedReceipts(
  deps: Pick<AppDeps, 'repos' | 'audit' | 'escrow' | 'config' | 'logger'>,
  user: UserRecord,
  requestId: string,
): Promise<number> {
  const pending = await deps.repos.receipts.pendingFor(user.hashedPan);
  const recipient = { keyId: user.keyId, publicKey: parsePublicKey(user.publicKey) };
  let claimed = 0;
  for (const receipt of pending) {
    try {
      const cek = await unwrapContentKey(receipt.envelope, (encryptedKey) =>
        deps.escrow.unwrap(encryptedKey),
      );
      const rewrapped = rewrapEnvelope(receipt.envelope, cek, recipient);
      cek.fill(0);
      const createdAt = Date.parse(receipt.envelope.createdAt);
      const expiresAt = new Date(createdAt + deps.config.receiptRetentionDays * DAY_MS);
      const envelope: ReceiptEnvelope = {
        ...receipt.envelope,
        ...rewrapped,
        isEscrowed: false,
        escrowKeyId: null,
        expiresAt: expiresAt.toISOString(),
      };
      if (
        await deps.repos.receipts.claim(
          receipt.receiptId,
          envelope,
          user.userId,
          Math.floor(expiresAt.getTime() / 1000),
        )
      ) {
        claimed += 1;
        await deps.audit.record({
          action: 'escrow.claim',
          outcome: 'success',
          requestId,
          clientId: user.clientId,
          userId: user.userId,
          receiptId: receipt.receiptId,
          escrowKeyId: deps.escrow.keyId,
        });
      }
    } catch (error) {
      // One unreadable escrowed receipt must not fail the registration; it stays escrowed and audited.
      deps.logger.warn('escrow claim failed', {
        requestId,
        receiptId: receipt.receiptId,
        error: error instanceof Error ? error.name : 'unknown',
      });
      await deps.audit.record({
        action: 'escrow.claim',
        outcome: 'failure',
        reason: error instanceof Error ? error.name : 'unknown',
        requestId,
        clientId: user.clientId,
        userId: user.userId,
        receiptId: receipt.receiptId,
      });
    }
  }
  return claimed;
}
