import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LruCache } from '../lru.js';
import { transactWrite } from './transact.js';

export interface UserRecord {
  userId: string;
  hashedPan: string;
  keyId: string;
  /** base64 DER SPKI of the user's key, copied here so encryption needs one read. */
  publicKey: string;
  /** The issuer client whose API key registered the user: the only client that may act for it. */
  clientId: string;
  status: 'active';
  registeredAt: string;
}

export type RegisterOutcome = 'registered' | 'pan-taken' | 'key-unavailable';

const userPk = (userId: string) => `USER#${userId}`;
const panPk = (hashedPan: string) => `PAN#${hashedPan}`;

export class UserRepository {
  private readonly registered = new LruCache<string, UserRecord>(10_000);

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** Only registration writes key pairs; functions that only read users are not given the table. */
    private readonly keyPairsTable: string | undefined,
  ) {}

  /**
   * The user, its hashedPan guard and the key binding are written in one transaction, so concurrent
   * registrations of one hashedPan or one key leave exactly one winner.
   */
  async register(user: UserRecord): Promise<RegisterOutcome> {
    if (!this.keyPairsTable) throw new Error('UserRepository.register needs the key-pairs table');
    const outcome = await transactWrite(this.doc, {
      TransactItems: [
        {
          Put: {
            TableName: this.tableName,
            Item: { pk: userPk(user.userId), ...user },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        {
          Put: {
            TableName: this.tableName,
            // A full copy, so finding a recipient by hashedPan is one read on the encrypt path.
            Item: { pk: panPk(user.hashedPan), ...user },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        {
          Update: {
            TableName: this.keyPairsTable,
            Key: { keyId: user.keyId },
            UpdateExpression: 'SET userId = :userId',
            ConditionExpression:
              'attribute_exists(keyId) AND attribute_not_exists(userId) AND clientId = :clientId AND publicKey = :publicKey',
            ExpressionAttributeValues: {
              ':userId': user.userId,
              ':clientId': user.clientId,
              ':publicKey': user.publicKey,
            },
          },
        },
      ],
    });
    if (outcome.ok) return 'registered';
    if (outcome.reasons[1] === 'ConditionalCheckFailed') return 'pan-taken';
    if (outcome.reasons[2] === 'ConditionalCheckFailed') return 'key-unavailable';
    // Conflicts that outlived the retries: another registration of this PAN or key is in flight.
    return outcome.reasons[1] === 'TransactionConflict' ? 'pan-taken' : 'key-unavailable';
  }

  getById(userId: string): Promise<UserRecord | null> {
    return this.read(userPk(userId));
  }

  /**
   * Registered users never change, so a found one is kept in memory: encrypting for a regular
   * recipient then costs no read. Misses are not kept, or a new registration would go unseen.
   */
  async getByHashedPan(hashedPan: string): Promise<UserRecord | null> {
    const known = this.registered.get(hashedPan);
    if (known) return known;
    const user = await this.read(panPk(hashedPan));
    if (user) this.registered.set(hashedPan, user);
    return user;
  }

  private async read(pk: string): Promise<UserRecord | null> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk }, ConsistentRead: true }),
    );
    if (!result.Item) return null;
    const { pk: _pk, ...user } = result.Item;
    return user as UserRecord;
  }
}
