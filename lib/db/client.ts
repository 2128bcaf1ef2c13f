import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, paginateQuery, PutCommand } from '@aws-sdk/lib-dynamodb';

export interface DynamoClients {
  client: DynamoDBClient;
  doc: DynamoDBDocumentClient;
}

/**
 * One client per cold start, shared by every repository. `endpoint` is set only for DynamoDB Local.
 * `instrument` sees the client before anything uses it: in Lambda, X-Ray's capture, which the
 * document client then shares (it sends through the same middleware stack).
 */
export function createDynamoClients(options: {
  region: string;
  endpoint?: string | undefined;
  instrument?: (client: DynamoDBClient) => DynamoDBClient;
}): DynamoClients {
  const created = new DynamoDBClient({
    region: options.region,
    ...(options.endpoint
      ? {
          endpoint: options.endpoint,
          // DynamoDB Local accepts any credentials; fixed ones keep a developer's real profile out of it.
          credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        }
      : {}),
    maxAttempts: 3,
  });
  const client = options.instrument ? options.instrument(created) : created;
  const doc = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  return { client, doc };
}

export const isConditionFailure = (error: unknown): boolean =>
  error instanceof Error && error.name === 'ConditionalCheckFailedException';

export const isTransactionCanceled = (error: unknown): boolean =>
  error instanceof Error && error.name === 'TransactionCanceledException';

export type PutIfAbsentOutcome<T> = { stored: true } | { stored: false; existing: T };

/** Writes an item unless its key is taken; when it is, returns what is there instead. */
export async function putIfAbsent<T extends object>(
  doc: DynamoDBDocumentClient,
  tableName: string,
  item: T,
  keyAttribute: keyof T & string,
  readExisting: () => Promise<T | null>,
): Promise<PutIfAbsentOutcome<T>> {
  try {
    await doc.send(
      new PutCommand({
        TableName: tableName,
        Item: item as Record<string, unknown>,
        ConditionExpression: 'attribute_not_exists(#key)',
        ExpressionAttributeNames: { '#key': keyAttribute },
      }),
    );
    return { stored: true };
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    const existing = await readExisting();
    if (!existing) throw error;
    return { stored: false, existing };
  }
}

/**
 * Every item under one partition of an index, page after page (paginateQuery follows
 * LastEvaluatedKey). For look-ups whose partitions stay small: all of it is held in memory.
 */
export async function queryIndexAll<T>(
  doc: DynamoDBDocumentClient,
  input: { table: string; index: string; attribute: string; value: string },
): Promise<T[]> {
  const items: T[] = [];
  const pages = paginateQuery(
    { client: doc },
    {
      TableName: input.table,
      IndexName: input.index,
      KeyConditionExpression: '#key = :value',
      ExpressionAttributeNames: { '#key': input.attribute },
      ExpressionAttributeValues: { ':value': input.value },
    },
  );
  for await (const page of pages) items.push(...((page.Items as T[] | undefined) ?? []));
  return items;
}
