import {
  GetCommand,
  PutCommand,
  ScanCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { ApiKeyEnvironment } from '../kernel/config.js';
import type { Role } from '../kernel/route.js';
import type { TierName } from '../kernel/tiers.js';
import { isConditionFailure } from './client.js';

/** A client's API key as stored: only a hash of the secret part is kept. */
export interface ApiKeyRecord {
  keyId: string;
  clientId: string;
  name: string;
  roles: Role[];
  tier: TierName;
  /** Absent on records made before keys named their environment: those are local keys. */
  environment?: ApiKeyEnvironment;
  secretHash: string;
  status: 'active' | 'revoked';
  createdAt: string;
  revokedAt?: string;
  /** API Gateway key id when the key also exists at the edge (deployed stacks). */
  edgeKeyId?: string;
}

export class ApiKeyRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(record: ApiKeyRecord): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: record,
        ConditionExpression: 'attribute_not_exists(keyId)',
      }),
    );
  }

  async get(keyId: string): Promise<ApiKeyRecord | null> {
    const result = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { keyId } }));
    return (result.Item as ApiKeyRecord | undefined) ?? null;
  }

  async list(): Promise<ApiKeyRecord[]> {
    const records: ApiKeyRecord[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new ScanCommand({ TableName: this.tableName, ExclusiveStartKey: startKey }),
      );
      records.push(...((page.Items as ApiKeyRecord[] | undefined) ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return records.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** Returns false when no such key exists. */
  async update(
    keyId: string,
    changes: Partial<Pick<ApiKeyRecord, 'status' | 'revokedAt' | 'tier' | 'edgeKeyId'>>,
  ): Promise<boolean> {
    const entries = Object.entries(changes).filter(([, value]) => value !== undefined);
    if (entries.length === 0) return true;
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { keyId },
          ConditionExpression: 'attribute_exists(keyId)',
          UpdateExpression: `SET ${entries.map((_, index) => `#f${index} = :v${index}`).join(', ')}`,
          ExpressionAttributeNames: Object.fromEntries(
            entries.map(([field], index) => [`#f${index}`, field]),
          ),
          ExpressionAttributeValues: Object.fromEntries(
            entries.map(([, value], index) => [`:v${index}`, value]),
          ),
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }
}
