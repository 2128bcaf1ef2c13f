import { randomUUID } from 'node:crypto';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CardTagKeyring, tagVersion, type CardTagKeyStore } from '../../lib/crypto/card-tag.js';
import type { AuditLog } from '../../lib/db/audit.js';
import { isConditionFailure } from '../../lib/db/client.js';
import { transactWrite } from '../../lib/db/transact.js';
import { cardPk } from '../../lib/db/users.js';
import { rekeyEvidence } from '../../lib/receipts/evidence-backfill.js';
import { receiptItemKey, scanTable } from '../../lib/db/scan.js';

/**
 * Card-tag key administration for the operator (`npm run admin -- card-key …`), with the operator's
 * credentials: it scans the users and receipts tables, which no function may.
 */
export interface CardKeyAdminDeps {
  doc: DynamoDBDocumentClient;
  tables: { users: string; receipts: string; evidence: string };
  store: CardTagKeyStore;
  audit: AuditLog;
  /** The claim window in ms (CLAIM_WINDOW_MINUTES): evidence entries are re-keyed for it. */
  widthMs: number;
}

export interface RetagCounts {
  /** Card guards (CARD#<tag>) moved to a new key. */
  guards: number;
  users: number;
  /** Escrowed receipts stored before the evidence index whose pending tag and sealed facts were moved. */
  receipts: number;
  /** Evidence entries rewritten under the new key version. */
  evidence: number;
  /** Records changed by someone else between the scan and the write: run retag again. */
  skipped: number;
}

/**
 * Moves every stored card tag older than the current key version to it, from the stored tag (the
 * chain in lib/crypto/card-tag.ts): evidence entries and escrowed receipts first, so a claim that
 * reads a user's newer tag finds them, then card guards and users. Each write is conditioned on the value it replaces, so a
 * concurrent change is skipped and counted, never overwritten; running it again finishes the job.
 */
export async function retagCardRecords(deps: CardKeyAdminDeps): Promise<RetagCounts> {
  const keyring = new CardTagKeyring(await deps.store.load());
  const counts: RetagCounts = { guards: 0, users: 0, receipts: 0, evidence: 0, skipped: 0 };
  // Evidence first, like escrowed receipts: a claim that reads a user's newer tag then finds it.
  const evidence = { receiptsIndexed: 0, entriesRekeyed: 0, entriesNamed: 0, skipped: 0 };
  await rekeyEvidence({ doc: deps.doc, tables: deps.tables, keyring, widthMs: deps.widthMs }, evidence);
  counts.evidence = evidence.entriesRekeyed;
  counts.skipped += evidence.skipped;
  const lagging = (tag: unknown): tag is string =>
    typeof tag === 'string' && tagVersion(tag) !== undefined && !keyring.isCurrent(tag);

  for await (const item of scanTable(deps.doc, deps.tables.receipts, {
    filter: 'attribute_exists(pendingRecipient)',
    consistent: true,
  })) {
    const old = item.pendingRecipient;
    if (!lagging(old)) continue;
    const tag = keyring.advance(old);
    const facts = typeof item.claimFacts === 'string' ? keyring.openFacts(old, item.claimFacts) : undefined;
    try {
      await deps.doc.send(
        new UpdateCommand({
          TableName: deps.tables.receipts,
          Key: receiptItemKey(item),
          UpdateExpression: facts
            ? 'SET pendingRecipient = :tag, claimFacts = :facts'
            : 'SET pendingRecipient = :tag',
          ConditionExpression: 'pendingRecipient = :old',
          ExpressionAttributeValues: {
            ':tag': tag,
            ':old': old,
            ...(facts ? { ':facts': keyring.sealFacts(tag, facts) } : {}),
          },
        }),
      );
      counts.receipts += 1;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      counts.skipped += 1;
    }
  }

  for await (const item of scanTable(deps.doc, deps.tables.users, { consistent: true })) {
    const old = item.cardTag;
    const pk = String(item.pk);
    if (!lagging(old)) continue;
    const tag = keyring.advance(old);
    if (pk.startsWith('CARD#')) {
      // A guard is keyed by its tag: a new item under the new key, and the old one removed with it.
      const outcome = await transactWrite(deps.doc, {
        TransactItems: [
          {
            Put: {
              TableName: deps.tables.users,
              Item: { ...item, pk: cardPk(tag), cardTag: tag },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Delete: {
              TableName: deps.tables.users,
              Key: { pk },
              ConditionExpression: 'cardTag = :old AND userId = :userId',
              ExpressionAttributeValues: { ':old': old, ':userId': item.userId },
            },
          },
        ],
      });
      if (outcome.ok) counts.guards += 1;
      else counts.skipped += 1;
      continue;
    }
    try {
      await deps.doc.send(
        new UpdateCommand({
          TableName: deps.tables.users,
          Key: { pk },
          UpdateExpression: 'SET cardTag = :tag',
          ConditionExpression: 'cardTag = :old',
          ExpressionAttributeValues: { ':tag': tag, ':old': old },
        }),
      );
      counts.users += 1;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      counts.skipped += 1;
    }
  }
  return counts;
}

/**
 * Starts a new card-tag key version and re-tags what is stored. Functions read the key again within
 * their cache age (5 minutes in AWS, 5 seconds locally) and may write under the old version until
 * then; those records are still found (look-ups try older versions), and `card-key retag` moves them.
 */
export async function rotateCardTagKey(
  deps: CardKeyAdminDeps,
  operator = 'operator',
): Promise<{ version: number; counts: RetagCounts }> {
  const version = await deps.store.addVersion();
  const counts = await retagCardRecords(deps);
  await deps.audit.record({
    action: 'card-key.rotate',
    outcome: 'success',
    requestId: randomUUID(),
    clientId: operator,
    reason: `card-tag key version ${version}`,
    counts: { ...counts, version },
  });
  return { version, counts };
}
