import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LruCache } from '../kernel/lru.js';
import { transactWrite } from './transact.js';

export interface UserRecord {
  userId: string;
  /**
   * The card's tag (lib/crypto/card-tag.ts), never its hashedPan. Its version says which card-tag key
   * versions it has been through; `card-key rotate` moves it to the current one.
   */
  cardTag: string;
  keyId: string;
  /** base64 DER SPKI of the user's key, copied here so encryption needs one read. */
  publicKey: string;
  /** The issuer client whose API key registered the user: the only client that may act for it. */
  clientId: string;
  status: 'active';
  registeredAt: string;
  /** Keys the user was bound to before a rotation, so an erasure can delete their bindings too. */
  retiredKeyIds?: string[];
  keyBoundAt?: string;
}

/** What an erasure leaves: who may finish it, and which key bindings it still has to delete. */
export interface ErasedUserRecord {
  userId: string;
  clientId: string;
  keyIds: string[];
  erasedAt: string;
}

export type RebindOutcome = 'rebound' | 'user-changed' | 'key-unavailable';

export type RegisterOutcome = 'registered' | 'pan-taken' | 'key-unavailable';

/** How long another process may go on wrapping for a user's previous key, or for an erased user. */
export const USER_CACHE_MAX_AGE_MS = 30_000;

/**
 * What an erasure leaves of a card for 30 days: that this client's user of this card was erased, so
 * the same client registering the card again within that time is seen (the claim allowance grind the
 * second review ran). No hashedPan, no user content; DynamoDB TTL removes it.
 */
export interface ErasedCardRecord {
  clientId: string;
  erasedAt: string;
  /** Epoch seconds. */
  ttl: number;
}

/** How long an erasure is remembered against its card and client. */
export const ERASED_CARD_DAYS = 30;

/** Users are keyed `USER#<userId>`; each card's guard, a full copy, `CARD#<cardTag>`. */
export const userPk = (userId: string) => `USER#${userId}`;
export const cardPk = (cardTag: string) => `CARD#${cardTag}`;
const erasedPk = (userId: string) => `ERASED#${userId}`;
const erasedCardPk = (cardTag: string, clientId: string) => `ERASED-CARD#${cardTag}#${clientId}`;

export class UserRepository {
  // Bounded in age because a key rotation or an erasure in another function's process changes a user:
  // this process forgets it at once, the others within this long.
  private readonly registered = new LruCache<string, UserRecord>(10_000, USER_CACHE_MAX_AGE_MS);

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** Only registration writes key pairs; functions that only read users are not given the table. */
    private readonly keyPairsTable: string | undefined,
  ) {}

  /**
   * Binds a key pair to a user inside the caller's transaction: only a pair this client generated,
   * with this public key, and bound to nobody yet (register and key rotation alike).
   */
  private bindKeyPair(userId: string, clientId: string, key: { keyId: string; publicKey: string }) {
    return {
      Update: {
        TableName: this.keyPairsTable,
        Key: { keyId: key.keyId },
        UpdateExpression: 'SET userId = :userId',
        ConditionExpression:
          'attribute_exists(keyId) AND attribute_not_exists(userId) AND clientId = :clientId AND publicKey = :publicKey',
        ExpressionAttributeValues: { ':userId': userId, ':clientId': clientId, ':publicKey': key.publicKey },
      },
    };
  }

  /**
   * The user, its card guard and the key binding are written in one transaction, so concurrent
   * registrations of one card or one key leave exactly one winner. `olderTags` are the same card's
   * tags under older key versions: a guard not re-tagged yet still holds the card.
   */
  async register(user: UserRecord, olderTags: readonly string[] = []): Promise<RegisterOutcome> {
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
            // A full copy, so finding a recipient by card is one read on the encrypt path.
            Item: { pk: cardPk(user.cardTag), ...user },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        this.bindKeyPair(user.userId, user.clientId, user),
        ...olderTags.map((tag) => ({
          ConditionCheck: {
            TableName: this.tableName,
            Key: { pk: cardPk(tag) },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        })),
      ],
    });
    if (outcome.ok) return 'registered';
    if (outcome.reasons[1] === 'ConditionalCheckFailed') return 'pan-taken';
    if (outcome.reasons.slice(3).includes('ConditionalCheckFailed')) return 'pan-taken';
    if (outcome.reasons[2] === 'ConditionalCheckFailed') return 'key-unavailable';
    // Conflicts that outlived the retries: another registration of this PAN or key is in flight.
    return outcome.reasons[1] === 'TransactionConflict' ? 'pan-taken' : 'key-unavailable';
  }

  getById(userId: string): Promise<UserRecord | null> {
    return this.read(userPk(userId));
  }

  /**
   * A found user is kept in memory for up to USER_CACHE_MAX_AGE_MS: encrypting for a regular recipient
   * then costs no read. Misses are not kept, or a new registration would go unseen.
   */
  async getByCardTags(tags: readonly string[]): Promise<UserRecord | null> {
    // Current version first: after a rotation's re-tagging that is the only read.
    for (const tag of tags) {
      const known = this.registered.get(tag);
      if (known) return known;
      const user = await this.read(cardPk(tag));
      if (user) {
        this.registered.set(tag, user);
        return user;
      }
    }
    return null;
  }

  private async read(pk: string): Promise<UserRecord | null> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk }, ConsistentRead: true }),
    );
    if (!result.Item) return null;
    const { pk: _pk, ...user } = result.Item;
    return user as UserRecord;
  }

  /** The card guard of a user: the one place that knows how it is keyed. */
  private guardPk(user: UserRecord): string {
    return cardPk(user.cardTag);
  }

  /**
   * Binds the user to another key this client generated and nobody holds: the user, its card guard
   * (the copy encryption reads) and both key bindings change in one transaction, conditioned on the
   * key the caller read, so two concurrent rotations leave one winner.
   */
  async rebindKey(
    user: UserRecord,
    next: { keyId: string; publicKey: string },
    at: string,
  ): Promise<RebindOutcome> {
    if (!this.keyPairsTable) throw new Error('UserRepository.rebindKey needs the key-pairs table');
    const userUpdate = {
      UpdateExpression:
        'SET keyId = :next, publicKey = :publicKey, keyBoundAt = :at, ' +
        'retiredKeyIds = list_append(if_not_exists(retiredKeyIds, :none), :retired)',
      ConditionExpression: 'keyId = :current AND clientId = :clientId',
      ExpressionAttributeValues: {
        ':next': next.keyId,
        ':publicKey': next.publicKey,
        ':at': at,
        ':none': [],
        ':retired': [user.keyId],
        ':current': user.keyId,
        ':clientId': user.clientId,
      },
    };
    const outcome = await transactWrite(this.doc, {
      TransactItems: [
        { Update: { TableName: this.tableName, Key: { pk: userPk(user.userId) }, ...userUpdate } },
        { Update: { TableName: this.tableName, Key: { pk: this.guardPk(user) }, ...userUpdate } },
        this.bindKeyPair(user.userId, user.clientId, next),
        {
          // The old key stays bound, so it can never be registered again, and is marked retired.
          Update: {
            TableName: this.keyPairsTable,
            Key: { keyId: user.keyId },
            UpdateExpression: 'SET retiredAt = :at',
            ConditionExpression: 'userId = :userId',
            ExpressionAttributeValues: { ':at': at, ':userId': user.userId },
          },
        },
      ],
    });
    this.registered.delete(user.cardTag);
    if (outcome.ok) return 'rebound';
    return outcome.reasons[2] === 'ConditionalCheckFailed' ? 'key-unavailable' : 'user-changed';
  }

  /**
   * Removes the user and its card guard and leaves an erasure record, in one transaction conditioned
   * on the key the caller read (a concurrent rotation makes the caller read again). From here on no
   * function finds the user, so nothing new is wrapped for it and no token is granted.
   */
  async markErased(user: UserRecord, erasedAt: string): Promise<ErasedUserRecord | null> {
    const erased: ErasedUserRecord = {
      userId: user.userId,
      clientId: user.clientId,
      keyIds: [...(user.retiredKeyIds ?? []), user.keyId],
      erasedAt,
    };
    // Not the userId: the erased user is linked to its card no longer (the audit has the erasure).
    const erasedCard: ErasedCardRecord = {
      clientId: user.clientId,
      erasedAt,
      ttl: Math.floor(Date.parse(erasedAt) / 1000) + ERASED_CARD_DAYS * 86_400,
    };
    const outcome = await transactWrite(this.doc, {
      TransactItems: [
        {
          Delete: {
            TableName: this.tableName,
            Key: { pk: userPk(user.userId) },
            ConditionExpression: 'keyId = :keyId AND clientId = :clientId',
            ExpressionAttributeValues: { ':keyId': user.keyId, ':clientId': user.clientId },
          },
        },
        {
          Delete: {
            TableName: this.tableName,
            Key: { pk: this.guardPk(user) },
            ConditionExpression: 'userId = :userId',
            ExpressionAttributeValues: { ':userId': user.userId },
          },
        },
        {
          Put: {
            TableName: this.tableName,
            Item: { pk: erasedPk(user.userId), ...erased },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        // The latest erasure of the card by this client wins: it is the one a re-registration follows.
        {
          Put: {
            TableName: this.tableName,
            Item: { pk: erasedCardPk(user.cardTag, user.clientId), ...erasedCard },
          },
        },
      ],
    });
    this.registered.delete(user.cardTag);
    return outcome.ok ? erased : null;
  }

  /**
   * This client's erasure of the card (under any of its tags) within the last ERASED_CARD_DAYS, if
   * any. TTL deletes late, so the age is checked here too.
   */
  async recentErasureOfCard(
    tags: readonly string[],
    clientId: string,
    now: Date,
  ): Promise<ErasedCardRecord | null> {
    for (const tag of tags) {
      const result = await this.doc.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: erasedCardPk(tag, clientId) },
          ConsistentRead: true,
        }),
      );
      const record = result.Item as (ErasedCardRecord & { pk: string }) | undefined;
      if (record && record.ttl * 1000 > now.getTime()) {
        const { pk: _pk, ...erased } = record;
        return erased;
      }
    }
    return null;
  }

  /** The erasure record of a user, so the client that erased it can finish a sweep cut short. */
  async getErased(userId: string): Promise<ErasedUserRecord | null> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: erasedPk(userId) }, ConsistentRead: true }),
    );
    if (!result.Item) return null;
    const { pk: _pk, ...erased } = result.Item;
    return erased as ErasedUserRecord;
  }
}
