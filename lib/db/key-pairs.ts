import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from './client.js';

/** The public half of a generated pair. The private half is never stored. */
export interface KeyPairRecord {
  keyId: string;
  /** base64 DER SubjectPublicKeyInfo */
  publicKey: string;
  clientId: string;
  createdAt: string;
  /** Set once, when a user registers with this key. */
  userId?: string;
  /** When a key rotation moved its user to another key. */
  retiredAt?: string;
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

  /** Deletes a key pair bound to this user (an erasure); false when there is none. */
  async deleteBoundTo(keyId: string, userId: string): Promise<boolean> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { keyId },
          ConditionExpression: 'userId = :userId',
          ExpressionAttributeValues: { ':userId': userId },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }
}
