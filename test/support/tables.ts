import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { requireAllTables } from '../../lib/kernel/config.js';
import type { TestStack } from './stack.js';

/** Every item of every table of the stack, as text: what a table copy would show. */
export async function dumpTables(stack: Pick<TestStack, 'config' | 'deps'>): Promise<string> {
  const dumps: string[] = [];
  for (const table of Object.values(requireAllTables(stack.config))) {
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await stack.deps.dynamo.doc.send(
        new ScanCommand({ TableName: table, ExclusiveStartKey: startKey }),
      );
      // Sets (a receipt's evidenceIds) as arrays: JSON.stringify would show them as {}.
      dumps.push(
        JSON.stringify(page.Items ?? [], (_key, value: unknown) =>
          value instanceof Set ? [...value] : value,
        ),
      );
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    // Index projections are the same items; nothing else is stored.
  }
  return dumps.join('\n');
}

/** The evidence entries of one receipt, found by a scan of the table (it has no index by receipt). */
export async function evidenceOfReceipt(
  doc: DynamoDBDocumentClient,
  evidenceTable: string,
  receiptRef: string,
): Promise<{ evidenceId: string; receiptRef: string; ttl: number }[]> {
  const entries: { evidenceId: string; receiptRef: string; ttl: number }[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new ScanCommand({
        TableName: evidenceTable,
        FilterExpression: 'receiptRef = :ref',
        ExpressionAttributeValues: { ':ref': receiptRef },
        ProjectionExpression: 'evidenceId, receiptRef, #ttl',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    entries.push(...((page.Items ?? []) as { evidenceId: string; receiptRef: string; ttl: number }[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return entries;
}
