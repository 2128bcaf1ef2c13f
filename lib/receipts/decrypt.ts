import type * as z from 'zod';
import type { Caller } from '../api-keys/authenticator.js';
import { openEnvelope } from '../crypto/envelope.js';
import { matchesPublicKey, parsePrivateKey } from '../crypto/keys.js';
import type { AuditAction } from '../db/audit.js';
import type { AppDeps } from '../app/deps.js';
import { DecryptionError } from '../crypto/errors.js';
import { redactEverywhere } from '../kernel/log.js';
import type { DecryptRefusal } from './vocabulary.js';

import type { decryptReceiptBody } from './requests.js';
import { digitalReceiptSchema, type DigitalReceipt } from './schemas.js';

export type DecryptDeps = Pick<AppDeps, 'clock' | 'repos' | 'audit' | 'telemetry'>;

export type DecryptInput = z.infer<typeof decryptReceiptBody> & {
  caller: Caller;
  requestId: string;
  sourceIp: string;
  action: Extract<AuditAction, 'receipt.decrypt' | 'payment.decrypt'>;
};

/** A refusal decided here: its metric dimension travels with the audit's wording. */
class Refusal extends DecryptionError {
  constructor(
    readonly refusal: DecryptRefusal,
    reason: string,
  ) {
    super(reason);
  }
}

const refuse = (refusal: DecryptRefusal, reason: string): never => {
  throw new Refusal(refusal, reason);
};

/**
 * Opens an envelope for the caller. The token must be live, issued to this client, for the user's
 * registered key, and the envelope must be wrapped for that key; the private key must be that key's.
 * Every refusal is the same DecryptionError; the reason reaches only the audit log.
 */
export async function decryptForCaller(deps: DecryptDeps, input: DecryptInput): Promise<DigitalReceipt> {
  const { caller, envelope } = input;
  let userId: string | undefined;
  // What a DecryptionError from the crypto module means depends on the step that threw it.
  let step: DecryptRefusal = 'token_unknown';
  try {
    const token = await deps.repos.accessTokens.find(input.accessTokenId);
    if (!token) return refuse('token_unknown', 'access token unknown');
    // A real token id from here on: whatever logs it later, by whatever name, logs it redacted.
    redactEverywhere(input.accessTokenId);
    userId = token.userId;
    if (Date.parse(token.expiresAt) <= deps.clock.now().getTime())
      refuse('token_expired', 'access token expired');
    if (token.purpose !== 'decrypt') refuse('token_purpose', 'access token purpose is not decrypt');
    if (token.clientId !== caller.clientId)
      refuse('token_other_client', 'access token belongs to another client');
    const user = await deps.repos.users.getById(token.userId);
    if (!user || user.clientId !== caller.clientId)
      refuse('user_other_client', 'user belongs to another client');
    if (user!.keyId !== token.keyId) refuse('token_other_key', 'access token is for another key');
    if (envelope.isEscrowed === true) refuse('envelope_escrowed', 'envelope is escrowed');
    if (envelope.keyId !== token.keyId || envelope.keyBundle.keyId !== token.keyId)
      refuse('envelope_other_key', 'envelope is wrapped for another key');
    step = 'private_key_invalid';
    const privateKey = parsePrivateKey(input.privateKey);
    if (!matchesPublicKey(privateKey, user!.publicKey))
      refuse('private_key_mismatch', 'private key does not match the registered key');
    step = 'envelope_unopenable';
    const plaintext = openEnvelope(envelope, privateKey);
    step = 'content_not_receipt';
    const parsed = digitalReceiptSchema.safeParse(JSON.parse(plaintext.toString('utf8')));
    plaintext.fill(0);
    if (!parsed.success) refuse('content_not_receipt', 'decrypted content is not a receipt');
    await deps.audit.record({
      action: input.action,
      outcome: 'success',
      requestId: input.requestId,
      clientId: caller.clientId,
      userId,
      keyId: token.keyId,
      receiptId: envelope.receiptId,
      sourceIp: input.sourceIp,
    });
    return parsed.data!;
  } catch (error) {
    // Storage outages stay 5xx; only refusals (and undecodable plaintext) are the uniform 403.
    if (!(error instanceof DecryptionError) && !(error instanceof SyntaxError)) throw error;
    const reason = error instanceof DecryptionError ? error.reason : 'decrypted content is not JSON';
    deps.telemetry.count('DecryptRefusals', { reason: error instanceof Refusal ? error.refusal : step });
    await deps.audit.record({
      action: input.action,
      outcome: 'failure',
      reason,
      requestId: input.requestId,
      clientId: caller.clientId,
      receiptId: envelope.receiptId.slice(0, 64),
      sourceIp: input.sourceIp,
      ...(userId ? { userId } : {}),
    });
    throw error instanceof DecryptionError ? error : new DecryptionError(reason);
  }
}
