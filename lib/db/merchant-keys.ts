import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
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
  /**
   * True when its registration carried a proof of possession (a JWS by the key itself). A key
   * registered before proofs were required lacks it, and its owner's proven registration takes it over.
   */
  proven?: boolean;
}

/**
 * A challenge for a key change (`CHALLENGE#<nonce>`): single use, for one merchant client, until
 * `expiresAt`. Its owner is not `clientId`, so the by-client index never lists it.
 */
export interface KeyChallengeRecord {
  pk: string;
  nonce: string;
  ownerClientId: string;
  expiresAt: string;
  /** Epoch seconds: DynamoDB's TTL removes it after it expired unused. */
  ttl: number;
}

export interface SigningPolicyRecord {
  pk: string;
  requireSignatures: boolean;
  updatedAt: string;
}

const keyPk = (kid: string) => `KEY#${kid}`;
const policyPk = (clientId: string) => `POLICY#${clientId}`;
const challengePk = (nonce: string) => `CHALLENGE#${nonce}`;

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

  /**
   * Takes over a key registered without proof of possession by another client (or by nobody now): the
   * proven registration replaces it, on the condition that it is still the unproven record read.
   * False when it changed meanwhile.
   */
  async takeOver(record: Omit<MerchantKeyRecord, 'pk'>, previousClientId: string): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: keyPk(record.kid), ...record },
          ConditionExpression: 'clientId = :previous AND attribute_not_exists(proven)',
          ExpressionAttributeValues: { ':previous': previousClientId },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  async putChallenge(record: Omit<KeyChallengeRecord, 'pk'>): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { pk: challengePk(record.nonce), ...record },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  }

  /**
   * Spends a challenge: deleted on the condition that it is this client's and unexpired at `now`, so
   * it is spent once however many requests carry it. False when it is unknown, spent, another
   * client's or expired.
   */
  async consumeChallenge(nonce: string, clientId: string, now: Date): Promise<boolean> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: challengePk(nonce) },
          ConditionExpression: 'ownerClientId = :client AND expiresAt > :now',
          ExpressionAttributeValues: { ':client': clientId, ':now': now.toISOString() },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
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
