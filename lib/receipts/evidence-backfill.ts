import { randomUUID } from 'node:crypto';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tagVersion, type CardTagKeyring } from '../crypto/card-tag.js';
import { evidenceIdsOf, openEvidence, sealEvidence } from '../crypto/evidence.js';
import type { AuditLog } from '../db/audit.js';
import { isConditionFailure } from '../db/client.js';
import { EvidenceRepository, receiptKeyOf, type EvidenceEntry, type EvidenceKey } from '../db/evidence.js';
import { receiptTableKey } from '../db/receipts.js';
import { evidenceEntriesFor } from './evidence.js';
import { receiptItemKey, scanTable } from '../db/scan.js';

/**
 * The evidence index for what was stored before it, and after the keys it is made with change (and
 * the receipts' names of their entries, for receipts stored before they had them): one
 * use case, which the admin CLI (`npm run admin -- evidence backfill`; `card-key rotate` and
 * `card-key retag` run the re-keying part) and the local stack (on every start) both call. With the
 * operator's credentials: it scans tables, which no function may. Every step is safe to repeat: entries are rewritten whole under their own key, and
 * each receipt is changed on the condition that it still holds what was read.
 */
export interface EvidenceAdminDeps {
  doc: DynamoDBDocumentClient;
  tables: { receipts: string; evidence: string };
  keyring: CardTagKeyring;
  /** The claim window in ms (CLAIM_WINDOW_MINUTES): evidence buckets are as wide. */
  widthMs: number;
  /** Delete entries whose receipt is gone (`evidence backfill --remove-orphans`): see removeOrphans. */
  removeOrphans?: OrphanRemoval;
}

export interface OrphanRemoval {
  /** The receipts table before issue 40, while it exists: a receipt not copied from it yet is not gone. */
  legacyReceipts?: string;
  /**
   * Waits between finding an entry without its receipt and looking again: entries are written just
   * before their receipt, so one seen in that moment has its receipt by then.
   */
  settle: () => Promise<void>;
}

export interface EvidenceCounts {
  /** Escrowed receipts stored before the index (tag, time and sealed facts on the receipt) indexed. */
  receiptsIndexed: number;
  /** Entries written under the current key version and bucket width in place of older ones. */
  entriesRekeyed: number;
  /**
   * Entries their receipt did not name yet (stored before receipts carried their entries' ids), now
   * named by it; or whose receipt was released with a longer expiry than theirs, now extended.
   */
  entriesNamed: number;
  /** Records nothing could be done with (facts that no longer open), or changed meanwhile. */
  skipped: number;
  /** With removeOrphans: entries deleted because their receipt was gone, and still was after settle. */
  orphansRemoved?: number;
}

/**
 * Escrowed receipts stored before the index carried their card's tag, transaction time and sealed
 * claim facts: each gets its entries, then loses the three (so no receipt shows its card beside its
 * time any more). A receipt whose facts do not open is left as it is and counted.
 */
async function indexStoredReceipts(deps: EvidenceAdminDeps, counts: EvidenceCounts): Promise<void> {
  const evidence = new EvidenceRepository(deps.doc, deps.tables.evidence);
  for await (const item of scanTable(deps.doc, deps.tables.receipts, {
    filter: 'attribute_exists(pendingRecipient)',
    consistent: true,
  })) {
    const tag = item.pendingRecipient;
    const facts =
      typeof tag === 'string' && tagVersion(tag) !== undefined && typeof item.claimFacts === 'string'
        ? deps.keyring.openFacts(tag, item.claimFacts)
        : undefined;
    if (typeof tag !== 'string' || !facts) {
      counts.skipped += 1;
      continue;
    }
    const entries = evidenceEntriesFor(deps.keyring, {
      tag,
      facts,
      receipt: { merchantClientId: String(item.merchantClientId), receiptId: String(item.receiptId) },
      ttl: Number(item.ttl),
      widthMs: deps.widthMs,
    });
    await evidence.putAll(entries);
    try {
      // The receipt names its new entries (StoredReceipt.evidenceIds) as it loses the card's tag.
      await deps.doc.send(
        new UpdateCommand({
          TableName: deps.tables.receipts,
          Key: receiptItemKey(item),
          UpdateExpression: 'REMOVE pendingRecipient, claimAt, claimFacts ADD evidenceIds :ids',
          ConditionExpression: 'pendingRecipient = :tag',
          ExpressionAttributeValues: {
            ':tag': tag,
            ':ids': new Set(entries.map((entry) => entry.evidenceId)),
          },
        }),
      );
      counts.receiptsIndexed += 1;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      counts.skipped += 1;
    }
  }
}

/**
 * Entries keyed under an older card-tag key version, or bucketed by another claim window, are
 * rewritten under the current ones (from their sealed body, which holds the tag, amount, currency
 * and time) and the old ones removed: a look-up computes ids with the current version and window.
 */
export async function rekeyEvidence(deps: EvidenceAdminDeps, counts: EvidenceCounts): Promise<void> {
  const evidence = new EvidenceRepository(deps.doc, deps.tables.evidence);
  const written = new Set<string>();
  for await (const item of scanTable(deps.doc, deps.tables.evidence, { consistent: true })) {
    const entry = item as unknown as EvidenceEntry;
    const body = openEvidence(deps.keyring, entry.evidenceId, entry.receiptRef, entry.sealed);
    if (!body) {
      counts.skipped += 1;
      continue;
    }
    const current = { ...body, tag: deps.keyring.advance(body.tag) };
    const ids = evidenceIdsOf(deps.keyring, current, deps.widthMs);
    if (ids.includes(entry.evidenceId)) continue;
    const fresh = ids
      .filter((id) => !written.has(`${id}\n${entry.receiptRef}`))
      .map((evidenceId) => ({
        evidenceId,
        receiptRef: entry.receiptRef,
        sealed: sealEvidence(deps.keyring, evidenceId, entry.receiptRef, current),
        ttl: entry.ttl,
        ...(body.binding ? { binding: body.binding } : {}),
      }));
    await evidence.putAll(fresh);
    for (const id of ids) written.add(`${id}\n${entry.receiptRef}`);
    // The receipt names the new ids before the old one goes, so it never misses an entry it has.
    await updateReceipt(deps, entry.receiptRef, 'ADD evidenceIds :ids', new Set(ids));
    const old: EvidenceKey = { evidenceId: entry.evidenceId, receiptRef: entry.receiptRef };
    await evidence.deleteAll([old]);
    await updateReceipt(deps, entry.receiptRef, 'DELETE evidenceIds :ids', new Set([entry.evidenceId]));
    counts.entriesRekeyed += 1;
  }
}

/** A change of a receipt's evidenceIds, if the receipt is there (false if not). */
async function updateReceipt(
  deps: EvidenceAdminDeps,
  receiptRef: string,
  update: string,
  ids: Set<string>,
): Promise<boolean> {
  try {
    await deps.doc.send(
      new UpdateCommand({
        TableName: deps.tables.receipts,
        Key: receiptTableKey(receiptKeyOf(receiptRef)),
        UpdateExpression: update,
        ConditionExpression: 'attribute_exists(receiptId)',
        ExpressionAttributeValues: { ':ids': ids },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** A stored receipt's evidenceIds and ttl, strongly consistent; undefined when it is not stored. */
async function receiptOf(deps: EvidenceAdminDeps, receiptRef: string) {
  const { Item } = await deps.doc.send(
    new GetCommand({
      TableName: deps.tables.receipts,
      Key: receiptTableKey(receiptKeyOf(receiptRef)),
      ProjectionExpression: 'evidenceIds, #ttl',
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ConsistentRead: true,
    }),
  );
  return Item;
}

/** Whether the receipts table before issue 40 (keyed by merchantClientId and receiptId) holds it. */
async function inLegacyTable(
  doc: DynamoDBDocumentClient,
  table: string,
  receiptRef: string,
): Promise<boolean> {
  try {
    const { Item } = await doc.send(
      new GetCommand({ TableName: table, Key: receiptKeyOf(receiptRef), ConsistentRead: true }),
    );
    return Item !== undefined;
  } catch (error) {
    if (error instanceof Error && error.name === 'ResourceNotFoundException') return false;
    throw error;
  }
}

/**
 * Receipts stored before they carried their entries' ids (issue 40; the evidence table's `by-receipt`
 * index found them before) are given them, so a release and an erasure find their entries; and an
 * entry of a receipt released meanwhile (its release could not find the entry to extend it) gets the
 * receipt's expiry. An entry whose receipt is not stored is left alone (it may be one written just
 * ahead of its receipt, and it expires with its own `ttl`), unless removeOrphans is asked for: then,
 * after `settle`, it is deleted if its receipt is still nowhere, which is what an erasure between the
 * deployment and this run leaves (DEPLOY.md).
 */
export async function nameEvidenceOnReceipts(deps: EvidenceAdminDeps, counts: EvidenceCounts): Promise<void> {
  const evidence = new EvidenceRepository(deps.doc, deps.tables.evidence);
  const orphans: EvidenceKey[] = [];
  for await (const item of scanTable(deps.doc, deps.tables.evidence, { consistent: true })) {
    const entry = item as unknown as EvidenceEntry;
    const receipt = await receiptOf(deps, entry.receiptRef);
    if (!receipt) {
      if (deps.removeOrphans) orphans.push({ evidenceId: entry.evidenceId, receiptRef: entry.receiptRef });
      continue;
    }
    const named = (receipt.evidenceIds as Set<string> | undefined)?.has(entry.evidenceId) === true;
    const longer = typeof receipt.ttl === 'number' && receipt.ttl > entry.ttl;
    if (named && !longer) continue;
    if (!named)
      await updateReceipt(deps, entry.receiptRef, 'ADD evidenceIds :ids', new Set([entry.evidenceId]));
    if (longer) await evidence.setTtl([entry], receipt.ttl as number);
    counts.entriesNamed += 1;
  }
  if (!deps.removeOrphans) return;
  const { settle, legacyReceipts } = deps.removeOrphans;
  counts.orphansRemoved = 0;
  if (orphans.length === 0) return;
  await settle();
  for (const orphan of orphans) {
    if (await receiptOf(deps, orphan.receiptRef)) continue;
    if (legacyReceipts && (await inLegacyTable(deps.doc, legacyReceipts, orphan.receiptRef))) continue;
    await evidence.deleteAll([orphan]);
    counts.orphansRemoved += 1;
  }
}

/** Both, audited: what `npm start` runs before serving and `npm run admin -- evidence backfill` runs. */
export async function backfillEvidence(
  deps: EvidenceAdminDeps & { audit?: AuditLog },
  operator = 'operator',
): Promise<EvidenceCounts> {
  const counts: EvidenceCounts = { receiptsIndexed: 0, entriesRekeyed: 0, entriesNamed: 0, skipped: 0 };
  await indexStoredReceipts(deps, counts);
  await rekeyEvidence(deps, counts);
  await nameEvidenceOnReceipts(deps, counts);
  if (deps.audit && Object.values(counts).some((count) => count > 0)) {
    await deps.audit.record({
      action: 'evidence.backfill',
      outcome: 'success',
      requestId: randomUUID(),
      clientId: operator,
      counts: { ...counts },
    });
  }
  return counts;
}
