/**
 * Finding a card's receipts by a card transaction: the keyed evidence index (lib/crypto/evidence.ts)
 * written at seal time, read by claims (escrowed receipts: lib/receipts/claim.ts) and by an issuer's
 * match (the user's own receipts). The same look-ups per transaction and card-tag version (three for a
 * time, one for a reference), whatever the card has near that time: a caller without the evidence reads an empty partition in the same calls as for
 * a card with no receipts at all, and every receipt the evidence matches is found, however many
 * others share the window.
 */
import type { CardTag, CardTagKeyring, ClaimFacts } from '../crypto/card-tag.js';
import {
  authorizationEvidenceId,
  evidenceIdsOf,
  lookupIdsOf,
  networkEvidenceId,
  openEvidence,
  sealEvidence,
  type EvidenceFacts,
  type EvidenceKind,
} from '../crypto/evidence.js';
import { receiptKeyOf, receiptRefOf, type EvidenceEntry } from '../db/evidence.js';
import type { ReceiptKey, StoredReceipt } from '../db/receipts.js';
import type { CoreDeps } from '../app/deps.js';
import { InvalidRequestError } from '../kernel/errors.js';

export type EvidenceDeps = Pick<CoreDeps, 'config' | 'repos' | 'cardTags'>;

/**
 * A card transaction as a claim or a match names it: amount, currency and time; or its authorization
 * code with amount and currency; or its network transaction id; any of them beside the others
 * (lib/receipts/requests.ts checks that one of the three is whole). Every field given must match.
 */
export interface EvidenceTransaction {
  amount?: number | undefined;
  currency?: string | undefined;
  transactionDate?: string | undefined;
  cardLast4?: string | undefined;
  authorizationCode?: string | undefined;
  networkTransactionId?: string | undefined;
}

/** The card a look-up is for: a registered user's (its stored tag, maybe of an older key version). */
export interface EvidenceCard {
  cardTag: CardTag;
}

/** Buckets are as wide as the claim window (CLAIM_WINDOW_MINUTES). */
export const evidenceWidthMs = (deps: Pick<CoreDeps, 'config'>): number =>
  deps.config.claimWindowMinutes * 60_000;

/**
 * A receipt's entries: per amount it can be claimed by, one in its own time bucket (a look-up reads
 * the neighbours too), under the card's current tag. `ttl` is the receipt's own.
 */
export function evidenceEntriesFor(
  keyring: CardTagKeyring,
  input: {
    tag: CardTag;
    facts: ClaimFacts;
    receipt: ReceiptKey;
    ttl: number;
    widthMs: number;
    /** The receipt's requestDigest, for entries written ahead of their receipt (EvidenceFacts.binding). */
    binding?: string;
  },
): EvidenceEntry[] {
  const tag = keyring.advance(input.tag);
  const receiptRef = receiptRefOf(input.receipt);
  const { currency, at, cardLast4, authorizationCode, networkTransactionId } = input.facts;
  const amounts = [...new Set(input.facts.amounts)];
  const { binding } = input;
  const entry = (body: EvidenceFacts): EvidenceEntry[] =>
    evidenceIdsOf(keyring, body, input.widthMs).map((evidenceId) => ({
      evidenceId,
      receiptRef,
      sealed: sealEvidence(keyring, evidenceId, receiptRef, binding ? { ...body, binding } : body),
      ttl: input.ttl,
      ...(binding ? { binding } : {}),
    }));
  const references = {
    ...(authorizationCode ? { authorizationCode } : {}),
    ...(networkTransactionId ? { networkTransactionId } : {}),
  };
  const base = (amount: number) => ({ tag, amount, currency, at, ...(cardLast4 ? { cardLast4 } : {}) });
  return [
    ...amounts.flatMap((amount) => entry(base(amount))),
    // The network's references, when the service sealed them: keyed by each, both in each body.
    ...(authorizationCode
      ? amounts.flatMap((amount) => entry({ ...base(amount), kind: 'authorization', ...references }))
      : []),
    ...(networkTransactionId ? entry({ ...base(amounts[0]!), kind: 'network', amounts, ...references }) : []),
  ];
}

/** The tags a card's records may be under: the current version's, and its stored one while it lags. */
export function tagsOfCard(card: EvidenceCard, keyring: CardTagKeyring): CardTag[] {
  const current = keyring.advance(card.cardTag);
  return current === card.cardTag ? [current] : [current, card.cardTag];
}

/**
 * The kind of entry a transaction is looked up by, the most specific it names: its network
 * transaction id, else its authorization code (with amount and currency), else amount, currency and time.
 */
export const lookupKindOf = (transaction: EvidenceTransaction): EvidenceKind | undefined =>
  transaction.networkTransactionId !== undefined
    ? 'network'
    : transaction.authorizationCode !== undefined
      ? 'authorization'
      : undefined;

/** The ids a transaction is looked up by, for this tag: a reference's one, or a time's three buckets. */
export function lookupIdsFor(
  keyring: CardTagKeyring,
  tag: CardTag,
  transaction: EvidenceTransaction,
  widthMs: number,
): string[] {
  const { amount, currency, transactionDate, authorizationCode, networkTransactionId } = transaction;
  if (networkTransactionId !== undefined) return [networkEvidenceId(keyring, tag, networkTransactionId)];
  if (authorizationCode !== undefined && amount !== undefined && currency !== undefined)
    return [authorizationEvidenceId(keyring, tag, { authorizationCode, amount, currency })];
  if (amount === undefined || currency === undefined || transactionDate === undefined)
    throw new Error('a transaction names neither a reference nor amount, currency and time');
  return lookupIdsOf(keyring, tag, { amount, currency, at: transactionDate }, widthMs);
}

/**
 * Whether an entry's opened facts match the transaction, for this tag: an entry of the kind looked up,
 * and every field the transaction gives equal to the entry's (amount and currency, the time within ±
 * the window, the authorization code and network transaction id), the last four digits when both
 * sides have them. An entry that did not open (another key, altered) matches nothing; neither does a
 * code the receipt does not carry.
 */
export function evidenceMatches(
  facts: ReturnType<typeof openEvidence>,
  tag: CardTag,
  transaction: EvidenceTransaction,
  widthMs: number,
): boolean {
  if (facts === undefined || facts.tag !== tag || facts.kind !== lookupKindOf(transaction)) return false;
  const { amount, currency, transactionDate, cardLast4, authorizationCode, networkTransactionId } =
    transaction;
  const amounts = facts.amounts ?? [facts.amount];
  return (
    (amount === undefined || amounts.includes(amount)) &&
    (currency === undefined || facts.currency === currency) &&
    (transactionDate === undefined ||
      Math.abs(Date.parse(facts.at) - Date.parse(transactionDate)) <= widthMs) &&
    (authorizationCode === undefined || facts.authorizationCode === authorizationCode) &&
    (networkTransactionId === undefined || facts.networkTransactionId === networkTransactionId) &&
    (cardLast4 === undefined || facts.cardLast4 === undefined || facts.cardLast4 === cardLast4)
  );
}

/**
 * Every stored receipt of this card whose evidence matches the transaction: same currency, the
 * amount equal to its total or its total before tip, its transaction time within ± the claim window,
 * and its last four digits when both sides have them; or the same by its authorization code or network
 * transaction id, with whatever else the transaction gives. Escrowed or not: the caller decides which it
 * may act on (a claim releases escrowed ones, a match lists the user's own).
 */
export async function findByEvidence(
  deps: EvidenceDeps,
  card: EvidenceCard,
  transaction: EvidenceTransaction,
): Promise<StoredReceipt[]> {
  const keyring = await deps.cardTags.keyring();
  const widthMs = evidenceWidthMs(deps);
  // receiptRef → the bindings of its matching entries (null: an entry written in its receipt's transaction).
  const found = new Map<string, Set<string | null>>();
  for (const tag of tagsOfCard(card, keyring)) {
    const ids = lookupIdsFor(keyring, tag, transaction, widthMs);
    const partitions = await Promise.all(ids.map((id) => deps.repos.evidence.entries(id)));
    // A receipt stored before entries were written once may be under all three ids: kept once.
    for (const entry of partitions.flat()) {
      const facts = openEvidence(keyring, entry.evidenceId, entry.receiptRef, entry.sealed);
      if (!evidenceMatches(facts, tag, transaction, widthMs)) continue;
      const bindings = found.get(entry.receiptRef) ?? new Set<string | null>();
      bindings.add(facts?.binding ?? null);
      found.set(entry.receiptRef, bindings);
    }
  }
  const receipts = await Promise.all(
    [...found].map(async ([receiptRef, bindings]) => {
      const receipt = await deps.repos.receipts.get(receiptKeyOf(receiptRef));
      // An entry written ahead of its receipt finds only the receipt it was written for.
      return receipt && (bindings.has(null) || bindings.has(receipt.requestDigest)) ? receipt : null;
    }),
  );
  return receipts.filter((receipt): receipt is StoredReceipt => receipt !== null);
}

const DAY_MS = 86_400_000;

/**
 * A card transaction's time must be one a stored receipt can have: no later than a day from now (time
 * zones, clocks) and no earlier than the longest a receipt is kept. Anything else (9999-12-31, say)
 * is the caller's mistake, a 400 naming the field, before any allowance is spent.
 */
export function checkTransactionDates(
  deps: Pick<CoreDeps, 'config' | 'clock'>,
  transactions: readonly Pick<EvidenceTransaction, 'transactionDate'>[],
  field = 'transactions',
): void {
  const now = deps.clock.now().getTime();
  const keptDays = Math.max(deps.config.receiptRetentionDays, deps.config.escrowRetentionDays);
  const earliest = new Date(now - keptDays * DAY_MS);
  const latest = new Date(now + DAY_MS);
  const fields = transactions.flatMap(({ transactionDate }, index) => {
    if (transactionDate === undefined) return [];
    const at = Date.parse(transactionDate);
    return at >= earliest.getTime() && at <= latest.getTime()
      ? []
      : [
          {
            field: `${field}.${index}.transactionDate`,
            message: `must lie between ${earliest.toISOString()} and ${latest.toISOString()}`,
          },
        ];
  });
  if (fields.length > 0) throw new InvalidRequestError('Invalid request body', fields);
}
