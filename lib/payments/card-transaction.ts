import type { Caller } from '../api-keys/authenticator.js';
import type { AppDeps } from '../app/deps.js';
import { parsePublicKey } from '../crypto/keys.js';
import type { Recipient } from '../crypto/envelope.js';
import type { ReceiptEnvelope } from '../db/receipts.js';
import type { CardReferences, GatewayKind } from '../gateways/port.js';
import { claimFactsOf } from '../receipts/encrypt.js';
import { evidenceEntriesFor, evidenceWidthMs } from '../receipts/evidence.js';
import { cardTransactionSchema, type CardTransaction, type DigitalReceipt } from '../receipts/schemas.js';
import { sealReceipt } from '../receipts/seal.js';

export type CardTransactionDeps = Pick<
  AppDeps,
  'config' | 'repos' | 'escrow' | 'logger' | 'telemetry' | 'cardTags'
>;

/**
 * The receipt's `cardTransaction` block from the provider's references (DECISIONS, round 4,
 * "Card-network references"): only what the provider gave; undefined when that is nothing the schema
 * accepts (it is then left out rather than half-written).
 */
export function cardTransactionOf(
  gateway: GatewayKind,
  references: CardReferences,
): CardTransaction | undefined {
  const parsed = cardTransactionSchema.safeParse({ gateway, ...references });
  return parsed.success ? parsed.data : undefined;
}

/**
 * After the charge: the sale's plaintext, still in hand, sealed again with the network's references
 * for the recipient the stored envelope is for (the card's user, or escrow), and stored in its place
 * with the evidence entries the references give (keyed by authorization code and by network
 * transaction id, lib/crypto/evidence.ts). The receipt was stored before the charge so that a refused
 * request leaves nothing charged; this is the only place its envelope changes for the same recipient.
 * A claim or key change between the two (the envelope no longer the one read) wins: the receipt keeps
 * its first envelope, without references, which is logged and counted. Returns the receipt sealed.
 */
export async function sealCardTransaction(
  deps: CardTransactionDeps,
  input: {
    receipt: DigitalReceipt;
    gateway: GatewayKind;
    references: CardReferences;
    caller: Caller;
    requestId: string;
    /** The card the request named, to key its evidence; never stored. */
    recipientHashedPan?: string | undefined;
  },
): Promise<boolean> {
  const cardTransaction = cardTransactionOf(input.gateway, input.references);
  if (!cardTransaction) return false;
  const key = { merchantClientId: input.caller.clientId, receiptId: input.receipt.receiptId };
  const stored = await deps.repos.receipts.get(key);
  if (!stored) return false;
  const receipt: DigitalReceipt = { ...input.receipt, cardTransaction };
  let recipient: Recipient;
  if (stored.recipientUserId) {
    const user = await deps.repos.users.getById(stored.recipientUserId);
    if (!user || user.keyId !== stored.envelope.keyId) return skipped(deps, input, 'recipient changed');
    recipient = { keyId: user.keyId, publicKey: parsePublicKey(user.publicKey) };
  } else if (stored.envelope.isEscrowed) {
    recipient = { keyId: deps.escrow.keyId, publicKey: await deps.escrow.publicKey() };
  } else {
    return skipped(deps, input, 'no recipient');
  }
  const sealed = sealReceipt(deps, receipt, recipient, { requestId: input.requestId });
  const envelope: ReceiptEnvelope = {
    ...stored.envelope,
    ...sealed,
  };
  const keyring = input.recipientHashedPan ? await deps.cardTags.keyring() : null;
  const evidence =
    keyring && input.recipientHashedPan
      ? evidenceEntriesFor(keyring, {
          tag: keyring.tagsOf(input.recipientHashedPan)[0]!,
          facts: claimFactsOf(receipt),
          receipt: key,
          ttl: stored.ttl,
          widthMs: evidenceWidthMs(deps),
          binding: stored.requestDigest,
        })
      : [];
  const replaced = await deps.repos.receipts.resealIf(
    { ...key, requestDigest: stored.requestDigest },
    stored.envelope.keyBundle.encryptedAesKey,
    envelope,
    evidence,
  );
  return replaced || skipped(deps, input, 'envelope changed meanwhile');
}

function skipped(
  deps: Pick<CardTransactionDeps, 'logger' | 'telemetry'>,
  input: { receipt: DigitalReceipt; requestId: string },
  reason: string,
): false {
  // Ids and the reason only: never the references themselves.
  deps.logger.warn("the payment's network references were not sealed into its receipt", {
    requestId: input.requestId,
    receiptId: input.receipt.receiptId,
    reason,
  });
  deps.telemetry.count('CardReferencesNotSealed');
  return false;
}
