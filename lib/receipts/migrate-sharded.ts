import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from '../db/client.js';
import { exists } from '../db/create-tables.js';
import { receiptTableKey } from '../db/receipts.js';
import { scanTable } from '../db/scan.js';

/**
 * Issue 40: the receipts table keyed by merchantClientId alone (one partition per merchant client,
 * indexes projecting whole receipts) is replaced by `receipts-sharded` (lib/kernel/tables.ts). A table's
 * key cannot change in place, so its items are copied: each under its sharded key, unchanged otherwise,
 * and marked `migratedFrom`, which tells the webhook dispatcher the insert is no new receipt (its
 * events were raised when it was first stored). A receipt already in the new table (copied by an
 * earlier run, or stored or changed there since) is left as it is: the run can be repeated, and it
 * never undoes what the service wrote after the switch. The old table is never written: it stays, as
 * a copy, until the operator deletes it (docs/DEPLOY.md).
 */
export interface ReceiptMigrationDeps {
  client: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  tables: { legacyReceipts: string; receipts: string };
}

export interface ReceiptMigrationCounts {
  /** Receipts copied into the sharded table by this run. */
  copied: number;
  /** Receipts the sharded table already had (an earlier run, or written there since the switch). */
  alreadyThere: number;
}

/** The value of `migratedFrom` on copied receipts. */
export const MIGRATED_FROM_LEGACY = 'receipts';

export async function migrateReceiptsToShards(deps: ReceiptMigrationDeps): Promise<ReceiptMigrationCounts> {
  const counts: ReceiptMigrationCounts = { copied: 0, alreadyThere: 0 };
  // A deployment that started after the switch has no old table: nothing to copy.
  if (!(await exists(deps.client, deps.tables.legacyReceipts))) return counts;
  for await (const item of scanTable(deps.doc, deps.tables.legacyReceipts, { consistent: true })) {
    const key = receiptTableKey({
      merchantClientId: String(item.merchantClientId),
      receiptId: String(item.receiptId),
    });
    try {
      await deps.doc.send(
        new PutCommand({
          TableName: deps.tables.receipts,
          Item: { ...item, ...key, migratedFrom: MIGRATED_FROM_LEGACY },
          ConditionExpression: 'attribute_not_exists(receiptId)',
        }),
      );
      counts.copied += 1;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      counts.alreadyThere += 1;
    }
  }
  return counts;
}
