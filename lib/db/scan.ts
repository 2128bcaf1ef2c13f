import { ScanCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { tableDefinitions } from '../kernel/tables.js';

type Item = Record<string, unknown>;

/**
 * Every item of a table (that passes `filter`), page after page: the operator's reads, with the
 * operator's credentials (no function is granted Scan; the admin CLI and the local stack call these).
 */
export async function* scanTable(
  doc: DynamoDBDocumentClient,
  table: string,
  options: { filter?: string; values?: Item; consistent?: boolean } = {},
): AsyncGenerator<Item> {
  let startKey: Item | undefined;
  do {
    const page = await doc.send(
      new ScanCommand({
        TableName: table,
        ExclusiveStartKey: startKey,
        ...(options.consistent ? { ConsistentRead: true } : {}),
        ...(options.filter ? { FilterExpression: options.filter } : {}),
        ...(options.values ? { ExpressionAttributeValues: options.values } : {}),
      }),
    );
    yield* page.Items ?? [];
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

/** A receipt item's table key, as lib/kernel/tables.ts declares it. */
export const receiptItemKey = (item: Item): Item => {
  const { partitionKey, sortKey } = tableDefinitions.receipts as { partitionKey: string; sortKey?: string };
  return { [partitionKey]: item[partitionKey], ...(sortKey ? { [sortKey]: item[sortKey] } : {}) };
};
