import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** The public half of a generated pair. The private half is never stored. */
export interface KeyPairRecord {
  keyId: string;
  /** base64 DER SubjectPublicKeyInfo */
  publicKey: string;
  clientId: string;
  createdAt: string;
  /** Set once, when a user registers with this key. */
  userId?: string;
}

export class KeyPairRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async create(record: KeyPairRecord): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: record,
        ConditionExpression: 'attribute_not_exists(keyId)',
      }),
    );
  }

  async get(keyId: string): Promise<KeyPairRecord | null> {
    const result = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { keyId } }));
    return (result.Item as KeyPairRecord | undefined) ?? null;
  }
}
