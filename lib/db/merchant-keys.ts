import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure, putIfAbsent, queryIndexAll, type PutIfAbsentOutcome } from './client.js';

export type SigningAlgorithm = 'EdDSA' | 'ES256';

/** A merchant signing key's public members (RFC 7517), as registered. */
export type SigningJwk =
  { kty: 'OKP'; crv: 'Ed25519'; x: string } | { kty: 'EC'; crv: 'P-256'; x: string; y: string };

export interface MerchantKeyRecord {
  pk: string;
  /** The key's RFC 7638 thumbprint (SHA-256, base64url). */
  kid: string;
  /** The merchant client that registered it: the only one that signs with it or revokes it. */
  clientId: string;
  alg: SigningAlgorithm;
  publicKey: SigningJwk;
  createdAt: string;
  /** Set once, by a revocation; the key then verifies nothing new but stays readable. */
  revokedAt?: string;
}

export interface SigningPolicyRecord {
  pk: string;
  requireSignatures: boolean;
  updatedAt: string;
}

const keyPk = (kid: string) => `KEY#${kid}`;
const policyPk = (clientId: string) => `POLICY#${clientId}`;

export class MerchantKeyRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Stores the key unless its kid is taken; then returns the record already there. */
  register(record: Omit<MerchantKeyRecord, 'pk'>): Promise<PutIfAbsentOutcome<MerchantKeyRecord>> {
    const item: MerchantKeyRecord = { pk: keyPk(record.kid), ...record };
    return putIfAbsent(this.doc, this.tableName, item, 'pk', () => this.get(record.kid));
  }

  async get(kid: string): Promise<MerchantKeyRecord | null> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: keyPk(kid) }, ConsistentRead: true }),
    );
    return (result.Item as MerchantKeyRecord | undefined) ?? null;
  }

  /** The client's keys, oldest first (the index is eventually consistent in AWS). */
  listForClient(clientId: string): Promise<MerchantKeyRecord[]> {
    return queryIndexAll(this.doc, {
      table: this.tableName,
      index: 'by-client',
      attribute: 'clientId',
      value: clientId,
    });
  }

  /**
   * Revokes the client's key at `at`, once: a key already revoked keeps its first revocation time.
   * Null when the kid is no key of this client.
   */
  async revoke(kid: string, clientId: string, at: Date): Promise<MerchantKeyRecord | null> {
    try {
      const result = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: keyPk(kid) },
          UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :at)',
          ConditionExpression: 'clientId = :client',
          ExpressionAttributeValues: { ':at': at.toISOString(), ':client': clientId },
          ReturnValues: 'ALL_NEW',
        }),
      );
      return result.Attributes as MerchantKeyRecord;
    } catch (error) {
      if (isConditionFailure(error)) return null;
      throw error;
    }
  }

  async policy(clientId: string): Promise<SigningPolicyRecord | null> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: policyPk(clientId) }, ConsistentRead: true }),
    );
    return (result.Item as SigningPolicyRecord | undefined) ?? null;
  }

  async setPolicy(clientId: string, requireSignatures: boolean, at: Date): Promise<SigningPolicyRecord> {
    const item: SigningPolicyRecord = {
      pk: policyPk(clientId),
      requireSignatures,
      updatedAt: at.toISOString(),
    };
    await this.doc.send(new PutCommand({ TableName: this.tableName, Item: item }));
    return item;
  }
}
