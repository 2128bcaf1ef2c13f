import {
  CreateTableCommand,
  DescribeTableCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  type AttributeDefinition,
  type DynamoDBClient,
  type KeySchemaElement,
} from '@aws-sdk/client-dynamodb';
import { tableDefinitions, tableKeys, type TableDefinition, type TableNames } from '../kernel/tables.js';

const keySchema = (partitionKey: string, sortKey?: string): KeySchemaElement[] => [
  { AttributeName: partitionKey, KeyType: 'HASH' },
  ...(sortKey ? [{ AttributeName: sortKey, KeyType: 'RANGE' as const }] : []),
];

/** Whether a table of this name exists. */
export async function exists(client: DynamoDBClient, name: string): Promise<boolean> {
  try {
    await client.send(new DescribeTableCommand({ TableName: name }));
    return true;
  } catch (error) {
    if (error instanceof Error && error.name === 'ResourceNotFoundException') return false;
    throw error;
  }
}

async function createTable(
  client: DynamoDBClient,
  name: string,
  definition: TableDefinition,
  options: EnsureTablesOptions,
): Promise<void> {
  const attributes = new Set<string>([definition.partitionKey]);
  if (definition.sortKey) attributes.add(definition.sortKey);
  for (const index of definition.indexes ?? []) {
    attributes.add(index.partitionKey);
    if (index.sortKey) attributes.add(index.sortKey);
  }
  const indexes = definition.indexes ?? [];
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [...attributes].map((attribute): AttributeDefinition => ({
        AttributeName: attribute,
        AttributeType: 'S',
      })),
      KeySchema: keySchema(definition.partitionKey, definition.sortKey),
      ...(indexes.length > 0
        ? {
            GlobalSecondaryIndexes: indexes.map((index) => ({
              IndexName: index.name,
              KeySchema: keySchema(index.partitionKey, index.sortKey),
              Projection: { ProjectionType: index.projection ?? 'ALL' },
            })),
          }
        : {}),
      ...(definition.stream
        ? { StreamSpecification: { StreamEnabled: true, StreamViewType: definition.stream } }
        : {}),
    }),
  );
  if (definition.ttlAttribute && options.timeToLive !== false) {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: name,
        TimeToLiveSpecification: { AttributeName: definition.ttlAttribute, Enabled: true },
      }),
    );
  }
}

/** A data folder written before an index was declared gets it, as CloudFormation adds it in AWS. */
async function addMissingIndexes(client: DynamoDBClient, name: string, definition: TableDefinition) {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
  const present = new Set((Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
  for (const index of (definition.indexes ?? []).filter((candidate) => !present.has(candidate.name))) {
    await client.send(
      new UpdateTableCommand({
        TableName: name,
        AttributeDefinitions: [index.partitionKey, ...(index.sortKey ? [index.sortKey] : [])].map(
          (attribute): AttributeDefinition => ({ AttributeName: attribute, AttributeType: 'S' }),
        ),
        GlobalSecondaryIndexUpdates: [
          {
            Create: {
              IndexName: index.name,
              KeySchema: keySchema(index.partitionKey, index.sortKey),
              Projection: { ProjectionType: index.projection ?? 'ALL' },
            },
          },
        ],
      }),
    );
  }
}

/** A data folder written before the table had its stream gets it (the dispatcher reads it from then on). */
async function enableMissingStream(client: DynamoDBClient, name: string, definition: TableDefinition) {
  if (!definition.stream) return;
  const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
  if (Table?.StreamSpecification?.StreamEnabled) return;
  await client.send(
    new UpdateTableCommand({
      TableName: name,
      StreamSpecification: { StreamEnabled: true, StreamViewType: definition.stream },
    }),
  );
}

/**
 * A table's key cannot change in place. A data folder from before merchant namespaces keys receipts
 * and transactions by id alone, and every read of it would fail; say what to do instead.
 */
async function checkKeySchema(client: DynamoDBClient, name: string, definition: TableDefinition) {
  const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
  const found = (Table?.KeySchema ?? []).map((key) => `${key.AttributeName}:${key.KeyType}`).join(', ');
  const wanted = keySchema(definition.partitionKey, definition.sortKey)
    .map((key) => `${key.AttributeName}:${key.KeyType}`)
    .join(', ');
  if (found !== wanted) {
    throw new Error(
      `Table ${name} is keyed (${found}) but this version keys it (${wanted}): it was made by an earlier ` +
        'version. Start from an empty data folder (remove .local-data, or the LOCAL_DATA_DIR folder) or ' +
        'copy its items into a new table.',
    );
  }
}

export interface EnsureTablesOptions {
  /**
   * Whether new tables expire items by their TTL attribute (default: yes, as in AWS). DynamoDB Local
   * deletes an item within seconds of its TTL by the machine's clock, so a test whose injected clock
   * is fixed at a date now past would see its items vanish at a moment it does not control; the
   * tests turn it off (no code relies on TTL deletion, which AWS makes up to days late).
   */
  timeToLive?: boolean;
}

/** Creates whichever of the service's tables are missing (the local stack's equivalent of the CDK stack). */
export async function ensureTables(
  client: DynamoDBClient,
  names: TableNames,
  options: EnsureTablesOptions = {},
): Promise<void> {
  await Promise.all(
    tableKeys.map(async (key) => {
      const definition: TableDefinition = tableDefinitions[key];
      if (!(await exists(client, names[key]))) await createTable(client, names[key], definition, options);
      else {
        await checkKeySchema(client, names[key], definition);
        await addMissingIndexes(client, names[key], definition);
        await enableMissingStream(client, names[key], definition);
      }
    }),
  );
}
