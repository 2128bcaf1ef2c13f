/**
 * The keyed evidence index (DECISIONS, round 3, "Claims and evidence"): what lets a claim, or an
 * issuer's match, find a card's receipts by a card transaction with a fixed few look-ups, instead of reading
 * and unsealing every receipt the card has near that time.
 *
 * At seal time each receipt addressed to a card gets entries, one per amount it can be claimed by
 * (its total, and its total before tip), in its own time bucket:
 *
 *     evidenceId = v<n>.HMAC(K_index(n), tag ‖ amount ‖ currency ‖ bucket width ‖ bucket)
 *
 * with K_index derived (HKDF) from card-tag key version n and the card's version-n tag. Buckets are as
 * wide as the claim window, so a look-up of the claimed time's bucket and its two neighbours finds
 * every receipt within ± the window (and some up to twice it, which the exact time, sealed in the
 * entry, then rules out). Written once and read three times, not written three times and read once
 * (issue 40): a receipt's write units are the bill, a claim's three reads are small and rare. Entries
 * written under all three buckets before that are still found (a look-up keeps a receipt once).
 * The entry's body (the tag, the amount, currency, exact time and last four) is sealed with
 * AES-256-GCM under K_seal(n), bound to the entry's id and receipt, so a table copy shows no amount,
 * time or card, and an entry cannot be moved to another receipt. The body is also what lets an
 * operator move entries to a new key version (card-key rotate) without the receipt.
 *
 * A receipt whose payment the service made also gets entries keyed by the card network's references it
 * sealed in the receipt (DECISIONS, round 4, "Card-network references"), with no time bucket: the
 * network transaction id is one transaction's alone, and an authorization code is keyed with the
 * amount and currency it was given for, as the issuer's authorization record has them:
 *
 *     v<n>.HMAC(K_index(n), "authorization" ‖ tag ‖ code ‖ amount ‖ currency)
 *     v<n>.HMAC(K_index(n), "network" ‖ tag ‖ network transaction id)
 *
 * The first line (a word, never a tag's `v<n>.`) keeps the three kinds of id apart. The codes are in
 * the sealed body only, never in clear.
 *
 * Without the card-tag key nobody can compute an id: a caller without the evidence reads an empty
 * partition, in the same number of reads as a card with no receipts at all.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { tagVersion, type CardTag, type CardTagKeyring } from './card-tag.js';

/** What one entry says of its receipt: the card transaction as the card's issuer will see it. */
export interface EvidenceFacts {
  /** The card's tag (the version the entry is keyed under). */
  tag: CardTag;
  /** Minor units: the receipt's total, or its total before tip. */
  amount: number;
  currency: string;
  /** The card transaction's time, ISO 8601. */
  at: string;
  cardLast4?: string;
  /** Absent on a time entry; which reference keys the entry otherwise. */
  kind?: EvidenceKind;
  /** The network's references the receipt carries (sealed in every entry of it that has them). */
  authorizationCode?: string;
  networkTransactionId?: string;
  /** A network entry is one per receipt: every amount the receipt can be matched by. */
  amounts?: number[];
  /**
   * The stored requestDigest of the receipt the entry was written for (entries written by
   * receipts/encrypt ahead of their receipt, outside a transaction): a look-up keeps the receipt only
   * if it still has that digest, so an entry left by a request whose receipt was refused (another
   * receipt has its id) never finds the receipt that has it. Absent on entries written in their
   * receipt's transaction.
   */
  binding?: string;
}

/** The reference an entry is keyed by, besides the card: a time entry has none. */
export type EvidenceKind = 'authorization' | 'network';

/** A transaction as a claim or a match states it. */
export interface EvidenceQuery {
  amount: number;
  currency: string;
  at: string;
}

const INDEX_USE = 'receipt-evidence-index';
const SEAL_USE = 'receipt-evidence-seal';
const ID_PATTERN = /^v([1-9][0-9]{0,5})\.[A-Za-z0-9_-]{43}$/;

export const bucketOf = (at: string, widthMs: number): number => Math.floor(Date.parse(at) / widthMs);

/** The version an entry id (or a tag) is keyed under. */
export const evidenceVersion = (evidenceId: string): number | undefined => {
  const match = ID_PATTERN.exec(evidenceId);
  return match ? Number(match[1]) : undefined;
};

/** The id of the entries for this card, amount, currency and bucket: one partition a look-up reads. */
export function evidenceId(
  keyring: CardTagKeyring,
  tag: CardTag,
  query: { amount: number; currency: string },
  bucket: number,
  widthMs: number,
): string {
  const version = tagVersion(tag);
  if (version === undefined) throw new Error('not a card tag');
  // Newline-separated: no field holds one (a tag is base64url, the rest are numbers and a code).
  const mac = createHmac('sha256', keyring.derivedKey(INDEX_USE, version).key)
    .update([tag, query.amount, query.currency, widthMs, bucket].join('\n'))
    .digest('base64url');
  return `v${version}.${mac}`;
}

const referenceId = (keyring: CardTagKeyring, tag: CardTag, parts: (string | number)[]): string => {
  const version = tagVersion(tag);
  if (version === undefined) throw new Error('not a card tag');
  const mac = createHmac('sha256', keyring.derivedKey(INDEX_USE, version).key)
    .update(parts.join('\n'))
    .digest('base64url');
  return `v${version}.${mac}`;
};

/** The id of a card's entries for one authorization code, amount and currency. */
export const authorizationEvidenceId = (
  keyring: CardTagKeyring,
  tag: CardTag,
  query: { authorizationCode: string; amount: number; currency: string },
): string =>
  referenceId(keyring, tag, ['authorization', tag, query.authorizationCode, query.amount, query.currency]);

/** The id of a card's entry for one network transaction id. */
export const networkEvidenceId = (
  keyring: CardTagKeyring,
  tag: CardTag,
  networkTransactionId: string,
): string => referenceId(keyring, tag, ['network', tag, networkTransactionId]);

/**
 * The id an entry with these facts is written under (one: a time entry's own bucket, a reference
 * entry's reference). What an operator re-keys an entry by, from its opened body.
 */
export function evidenceIdsOf(
  keyring: CardTagKeyring,
  facts: Pick<
    EvidenceFacts,
    'tag' | 'amount' | 'currency' | 'at' | 'kind' | 'authorizationCode' | 'networkTransactionId'
  >,
  widthMs: number,
): string[] {
  if (facts.kind === 'authorization' && facts.authorizationCode)
    return [
      authorizationEvidenceId(keyring, facts.tag, { ...facts, authorizationCode: facts.authorizationCode }),
    ];
  if (facts.kind === 'network' && facts.networkTransactionId)
    return [networkEvidenceId(keyring, facts.tag, facts.networkTransactionId)];
  if (facts.kind !== undefined) throw new Error('a reference entry without its reference');
  return [evidenceId(keyring, facts.tag, facts, bucketOf(facts.at, widthMs), widthMs)];
}

/** The ids a look-up reads: the claimed time's bucket and the two beside it, always three. */
export const lookupIdsOf = (
  keyring: CardTagKeyring,
  tag: CardTag,
  query: EvidenceQuery,
  widthMs: number,
): string[] => {
  const bucket = bucketOf(query.at, widthMs);
  return [bucket - 1, bucket, bucket + 1].map((each) => evidenceId(keyring, tag, query, each, widthMs));
};

const additionalData = (id: string, receiptRef: string) => Buffer.from(`${id}\n${receiptRef}`, 'utf8');

/** The entry's body, sealed for this id and receipt: `iv.ciphertext.tag`, base64url. */
export function sealEvidence(
  keyring: CardTagKeyring,
  id: string,
  receiptRef: string,
  facts: EvidenceFacts,
): string {
  const version = evidenceVersion(id);
  if (version === undefined) throw new Error('not an evidence id');
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyring.derivedKey(SEAL_USE, version).key, iv);
  cipher.setAAD(additionalData(id, receiptRef));
  const body = Buffer.concat([cipher.update(JSON.stringify(facts), 'utf8'), cipher.final()]);
  return [iv, body, cipher.getAuthTag()].map((part) => part.toString('base64url')).join('.');
}

/** The body sealed for this id and receipt, or undefined when it was sealed for others or altered. */
export function openEvidence(
  keyring: CardTagKeyring,
  id: string,
  receiptRef: string,
  sealed: string,
): EvidenceFacts | undefined {
  const version = evidenceVersion(id);
  const [iv, body, authTag, extra] = sealed.split('.');
  if (version === undefined || iv === undefined || body === undefined || authTag === undefined)
    return undefined;
  if (extra !== undefined) return undefined;
  try {
    const decipher = createDecipheriv(
      'aes-256-gcm',
      keyring.derivedKey(SEAL_USE, version).key,
      Buffer.from(iv, 'base64url'),
    );
    decipher.setAAD(additionalData(id, receiptRef));
    decipher.setAuthTag(Buffer.from(authTag, 'base64url'));
    const plain = Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as EvidenceFacts;
  } catch {
    return undefined;
  }
}
