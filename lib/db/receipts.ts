import { createHash } from 'node:crypto';
import {
  BatchGetCommand,
  BatchWriteCommand,
  GetCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { SealedEnvelope } from '../crypto/envelope.js';
import { BATCH_WRITE_MAX, sendInBatches } from './batch.js';
import { isConditionFailure, putIfAbsent, queryIndexAll, type PutIfAbsentOutcome } from './client.js';
import type { PaymentStatus } from '../kernel/payment-status.js';
import { EvidenceRepository, receiptRefOf, type EvidenceEntry, type EvidenceKey } from './evidence.js';
import { tableDefinitions } from '../kernel/tables.js';
import type { TransactItem } from './payments.js';

/**
 * The envelope as stored and returned to merchants (spec: EncryptedReceiptEnvelope): what the crypto
 * module sealed, plus its lifetime and escrow state.
 */
export type ReceiptEnvelope = SealedEnvelope & {
  createdAt: string;
  expiresAt: string;
  isEscrowed: boolean;
  escrowKeyId: string | null;
};

export interface StoredReceipt {
  receiptId: string;
  envelope: ReceiptEnvelope;
  /** The merchant client that encrypted it. */
  merchantClientId: string;
  /** Registered recipient, when there was one at encryption time or after a claim. */
  recipientUserId?: string;
  /**
   * Written before the evidence index (issue 20) on escrowed receipts addressed to a card: its tag, the
   * transaction time and the sealed claim facts. `npm run admin -- evidence backfill` (and `npm start`
   * locally) turns them into evidence entries and removes them; nothing writes them any more, so no
   * receipt shows its card beside its time (and, through the transactions table, its amount).
   */
  pendingRecipient?: string;
  claimAt?: string;
  claimFacts?: string;
  /** sha256 of the validated request, so an identical retry returns the first envelope. */
  requestDigest: string;
  /**
   * The ids of its evidence entries (each keyed by the id and this receipt's ref): what a release
   * finds them by to extend their expiry, and an erasure to delete them, instead of an index of the
   * evidence table that every entry would be written to again (issue 40). A string set, so adding the
   * ids a resealing brings is idempotent. Receipts stored before it get theirs from
   * `npm run admin -- evidence backfill`.
   */
  evidenceIds?: Set<string>;
  createdAt: string;
  ttl: number;
  /**
   * In clear beside the envelope, never inside it: the payment's state for a sale made by
   * payments/create, the refund's for a refund receipt; absent on receipts made by receipts/encrypt.
   */
  paymentStatus?: PaymentStatus;
  /** A refund receipt: the sale it refunds. */
  relatedReceiptId?: string;
  /** A sale: its refund receipts, oldest first (a claim that releases the sale releases them). */
  refundReceiptIds?: string[];
  /** A sale: the refund receipt of its latest refund, named by the receipt.updated it raises. */
  lastRefundReceiptId?: string;
}

/** How a sale's stored state may change in a refund's or a status change's transaction. */
export interface SaleChange {
  paymentStatus: PaymentStatus;
  /** A refund receipt to add to the sale. */
  refundReceiptId?: string;
  /** The refund receipt whose refund this change is about: the receipt.updated it raises names it. */
  cause?: string;
  /**
   * Who the sale must still be for, as the refund receipt was sealed: its user, or escrow (a claim
   * that released it in between makes the transaction fail, and the refund is sealed again).
   */
  recipient?: { userId: string } | 'escrow';
}

/** A receiptId is unique within its merchant client only (DECISIONS: merchant namespaces). */
export type ReceiptKey = Pick<StoredReceipt, 'merchantClientId' | 'receiptId'>;

/**
 * Partitions a merchant client's receipts are spread over (docs/SCALE.md): DynamoDB gives one partition
 * ~1,000 write units a second, about 250 receipts of 4 units; sixteen give a client ~4,000 a second.
 * Changing it moves every receipt: only with a migration.
 */
export const RECEIPT_SHARDS = 16;

/** The receipt's shard: a hash of its receiptId, so a GetItem computes its key. */
export const receiptShardOf = (receiptId: string): number =>
  createHash('sha256').update(receiptId).digest().readUInt32BE(0) % RECEIPT_SHARDS;

/** The table key of a receipt: `pk` = `<merchantClientId>#<shard>`, and its receiptId. */
export const receiptTableKey = ({
  merchantClientId,
  receiptId,
}: ReceiptKey): { pk: string; receiptId: string } => ({
  pk: `${merchantClientId}#${receiptShardOf(receiptId)}`,
  receiptId,
});
const keyOf = receiptTableKey;

/** A receipt's key from its table key (as the by-recipient-user index gives it): the pk less its shard. */
export const receiptKeyOfTableKey = (key: Record<string, unknown>): ReceiptKey => {
  const pk = String(key.pk);
  return { merchantClientId: pk.slice(0, pk.lastIndexOf('#')), receiptId: String(key.receiptId) };
};

/** A receipt as stored: with its table key. */
const itemOf = (receipt: StoredReceipt): Record<string, unknown> => ({
  ...receipt,
  ...receiptTableKey(receipt),
});

/** A stored item as the service reads it: without its partition key. */
const receiptOf = (item: Record<string, unknown> | undefined): StoredReceipt | null => {
  if (!item) return null;
  const { pk: _pk, ...receipt } = item;
  return receipt as unknown as StoredReceipt;
};

/** The keys of a receipt's evidence entries, from the ids it carries. */
export const evidenceKeysOf = (receipt: ReceiptKey & Pick<StoredReceipt, 'evidenceIds'>): EvidenceKey[] => {
  const receiptRef = receiptRefOf(receipt);
  return [...(receipt.evidenceIds ?? [])].map((evidenceId) => ({ evidenceId, receiptRef }));
};

export class ReceiptRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    /** Only functions that seal receipts for cards write evidence entries beside them. */
    private readonly evidenceTable?: string,
  ) {
    this.evidenceRepository = evidenceTable ? new EvidenceRepository(doc, evidenceTable) : undefined;
  }

  private readonly evidenceRepository: EvidenceRepository | undefined;

  /**
   * Stores a receipt unless its key is taken (then returns what is there), its evidence entries first:
   * a receipt is never stored without the entries a claim finds it by. Not in one transaction, which
   * bills every item twice (issue 40): each entry is bound to the receipt's requestDigest (sealed in
   * it, EvidenceFacts.binding), so an entry of a request whose receipt is refused here never finds the
   * receipt that has its id (findByEvidence), and is removed. An entry another request left under the
   * same key (its receipt never stored) is overwritten once this receipt is the one stored.
   */
  async putIfAbsent(
    receipt: StoredReceipt,
    evidence: readonly EvidenceEntry[] = [],
  ): Promise<PutIfAbsentOutcome<StoredReceipt>> {
    if (evidence.length === 0)
      return putIfAbsent(
        this.doc,
        this.tableName,
        itemOf(receipt) as unknown as StoredReceipt,
        'receiptId',
        () => this.get(receipt),
      );
    if (!this.evidenceRepository)
      throw new Error('ReceiptRepository: evidence entries need the evidence table');
    if (evidence.some((entry) => entry.binding !== receipt.requestDigest))
      throw new Error(
        "ReceiptRepository: evidence written ahead of its receipt must be bound to the receipt's digest",
      );
    const evidenceRepository = this.evidenceRepository;
    const taken = await evidenceRepository.putBound(evidence);
    const ids = new Set(evidence.map((entry) => entry.evidenceId));
    const outcome = await putIfAbsent(
      this.doc,
      this.tableName,
      itemOf({ ...receipt, evidenceIds: ids }) as unknown as StoredReceipt,
      'receiptId',
      () => this.get(receipt),
    );
    if (outcome.stored || outcome.existing.requestDigest === receipt.requestDigest) {
      // This request's receipt is the one stored (or a retry of it): entries left by another are stale.
      if (taken.length > 0) await evidenceRepository.putAll(taken);
      // A retry whose entries have other ids (a card-tag key rotated in between): the receipt names them too.
      if (!outcome.stored && [...ids].some((id) => !outcome.existing.evidenceIds?.has(id)))
        await this.addEvidenceIds(receipt, ids);
      return outcome;
    }
    const written = evidence.filter((entry) => !taken.includes(entry));
    await evidenceRepository.deleteAll(
      written.map(({ evidenceId, receiptRef }) => ({ evidenceId, receiptRef })),
    );
    return outcome;
  }

  async get(key: ReceiptKey): Promise<StoredReceipt | null> {
    // Ids can come straight from a caller's envelope; DynamoDB refuses an empty key rather than finding nothing.
    if (key.receiptId === '' || key.merchantClientId === '') return null;
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: keyOf(key), ConsistentRead: true }),
    );
    return receiptOf(result.Item);
  }

  /** Receipts by table key (as an index gives them), in that order, strongly consistent; gone ones left out. */
  private async getByTableKeys(
    keys: readonly Record<string, unknown>[],
    projection?: string,
  ): Promise<StoredReceipt[]> {
    const found = new Map<string, StoredReceipt>();
    const id = (key: Record<string, unknown>) => `${String(key.pk)}\n${String(key.receiptId)}`;
    await sendInBatches(
      keys.map((key) => ({ pk: key.pk, receiptId: key.receiptId })),
      100,
      async (pending) => {
        const result = await this.doc.send(
          new BatchGetCommand({
            RequestItems: {
              [this.tableName]: {
                Keys: pending,
                ConsistentRead: true,
                ...(projection ? { ProjectionExpression: projection } : {}),
              },
            },
          }),
        );
        for (const item of result.Responses?.[this.tableName] ?? []) found.set(id(item), receiptOf(item)!);
        return (result.UnprocessedKeys?.[this.tableName]?.Keys ?? []) as typeof pending;
      },
      'receipt reads',
    );
    return keys.flatMap((key) => found.get(id(key)) ?? []);
  }

  /** Replaces an escrowed envelope with one wrapped for its now-registered recipient, once. */
  claim(key: ReceiptKey, envelope: ReceiptEnvelope, recipientUserId: string, ttl: number): Promise<boolean> {
    // What receipts stored before the evidence index carried beside the tag goes too.
    return this.releaseEscrowed(
      key,
      { envelope, recipientUserId, ttl },
      { alsoRemove: ['pendingRecipient', 'claimAt', 'claimFacts'] },
    );
  }

  /**
   * Replaces a receipt's envelope with one sealed for the same recipient (the sale's plaintext with the
   * network's references added after the charge), only while the envelope still holds the content key
   * it was read with, so a claim or a key change that came in between is never undone; false when it
   * had. The evidence entries those references give are written first, bound to the receipt's
   * requestDigest (not in one transaction, which bills every item twice: issue 40): they are true of
   * this receipt's card and charge whether or not the envelope is replaced, so a refused replacement
   * leaves them (the time entries among them are the ones it already had).
   */
  async resealIf(
    key: ReceiptKey & Pick<StoredReceipt, 'requestDigest'>,
    previousEncryptedKey: string,
    envelope: ReceiptEnvelope,
    evidence: readonly EvidenceEntry[],
  ): Promise<boolean> {
    if (evidence.length > 0 && !this.evidenceRepository)
      throw new Error('ReceiptRepository: evidence entries need the evidence table');
    if (evidence.some((entry) => entry.binding !== key.requestDigest))
      throw new Error(
        "ReceiptRepository: evidence written ahead of its receipt must be bound to the receipt's digest",
      );
    const taken = evidence.length > 0 ? await this.evidenceRepository!.putBound(evidence) : [];
    // Entries under the same keys bound to another digest were left by a request whose receipt never was.
    if (taken.length > 0) await this.evidenceRepository!.putAll(taken);
    const ids = new Set(evidence.map((entry) => entry.evidenceId));
    // The receipt names its entries in the same write (ADD: the ids it has already are kept once).
    const replaced = await this.updateIf(key, {
      UpdateExpression: `SET envelope = :envelope${ids.size > 0 ? ' ADD evidenceIds :ids' : ''}`,
      ConditionExpression: 'envelope.keyBundle.encryptedAesKey = :previous',
      ExpressionAttributeValues: {
        ':envelope': envelope,
        ':previous': previousEncryptedKey,
        ...(ids.size > 0 ? { ':ids': ids } : {}),
      },
    });
    // Refused, the entries stay (they are true of this receipt): it names them all the same.
    if (!replaced && ids.size > 0) await this.addEvidenceIds(key, ids);
    return replaced;
  }

  /**
   * Adds entry ids to a stored receipt. Should the receipt be gone (erased meanwhile), the entries
   * just written for it would be found by nothing: they are deleted.
   */
  private async addEvidenceIds(key: ReceiptKey, ids: ReadonlySet<string>): Promise<void> {
    const added = await this.updateIf(key, {
      UpdateExpression: 'ADD evidenceIds :ids',
      ConditionExpression: 'attribute_exists(receiptId)',
      ExpressionAttributeValues: { ':ids': ids },
    });
    if (!added && this.evidenceRepository)
      await this.evidenceRepository.deleteAll(evidenceKeysOf({ ...key, evidenceIds: new Set(ids) }));
  }

  /** The keys of one receipt's evidence entries, read from it strongly consistent (none if it is gone). */
  async evidenceKeysOfReceipt(key: ReceiptKey): Promise<EvidenceKey[]> {
    const { Item } = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: keyOf(key),
        ProjectionExpression: 'evidenceIds',
        ConsistentRead: true,
      }),
    );
    return Item ? evidenceKeysOf({ ...key, evidenceIds: Item.evidenceIds as Set<string> | undefined }) : [];
  }

  /**
   * The keys of the evidence entries of receipts given by table key (as by-recipient-user gives
   * them): read from the receipts themselves, strongly consistent. Gone receipts give none.
   */
  async evidenceKeysOfTableKeys(keys: readonly Record<string, unknown>[]): Promise<EvidenceKey[]> {
    const receipts = await this.getByTableKeys(keys, 'pk, receiptId, merchantClientId, evidenceIds');
    return receipts.flatMap(evidenceKeysOf);
  }

  /** Sets a receipt's paymentStatus when it is still `from` (a payment declined at creation). */
  setPaymentStatus(key: ReceiptKey, from: PaymentStatus, to: PaymentStatus): Promise<boolean> {
    return this.updateIf(key, {
      UpdateExpression: 'SET paymentStatus = :to',
      ConditionExpression: 'paymentStatus = :from',
      ExpressionAttributeValues: { ':from': from, ':to': to },
    });
  }

  /** A sale's status (and a new refund receipt of it) inside the payment's transaction. */
  saleChange(key: ReceiptKey, change: SaleChange): TransactItem {
    const sets = ['paymentStatus = :status'];
    const conditions = ['attribute_exists(receiptId)'];
    const values: Record<string, unknown> = { ':status': change.paymentStatus };
    if (change.refundReceiptId) {
      sets.push('refundReceiptIds = list_append(if_not_exists(refundReceiptIds, :none), :refund)');
      values[':none'] = [];
      values[':refund'] = [change.refundReceiptId];
    }
    const cause = change.cause ?? change.refundReceiptId;
    if (cause) {
      sets.push('lastRefundReceiptId = :cause');
      values[':cause'] = cause;
    }
    if (change.recipient === 'escrow') {
      conditions.push('envelope.isEscrowed = :escrowed');
      values[':escrowed'] = true;
    } else if (change.recipient) {
      conditions.push('recipientUserId = :user');
      values[':user'] = change.recipient.userId;
    }
    return {
      Update: {
        TableName: this.tableName,
        Key: keyOf(key),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeValues: values,
      },
    };
  }

  /** A receipt's paymentStatus inside the payment's transaction (a refund receipt's, as its refund settles). */
  statusChange(key: ReceiptKey, paymentStatus: PaymentStatus): TransactItem {
    return {
      Update: {
        TableName: this.tableName,
        Key: keyOf(key),
        UpdateExpression: 'SET paymentStatus = :status',
        ConditionExpression: 'attribute_exists(receiptId)',
        ExpressionAttributeValues: { ':status': paymentStatus },
      },
    };
  }

  /** A new receipt inside a transaction: refused if its key is taken. */
  putNew(receipt: StoredReceipt): TransactItem {
    return {
      Put: {
        TableName: this.tableName,
        Item: itemOf(receipt),
        ConditionExpression: 'attribute_not_exists(receiptId)',
      },
    };
  }

  /**
   * Replaces an escrowed refund receipt's envelope with one wrapped for the user its sale was
   * released to, once: a refund receipt is escrowed with its sale and carries no claim facts of its own.
   */
  releaseWithSale(
    key: ReceiptKey,
    envelope: ReceiptEnvelope,
    recipientUserId: string,
    ttl: number,
  ): Promise<boolean> {
    return this.releaseEscrowed(
      key,
      { envelope, recipientUserId, ttl },
      { onlyIf: 'attribute_exists(relatedReceiptId)' },
    );
  }

  /** An escrowed receipt's envelope replaced by one wrapped for its user, once (false if not escrowed or taken). */
  private releaseEscrowed(
    key: ReceiptKey,
    release: { envelope: ReceiptEnvelope; recipientUserId: string; ttl: number },
    shape: { alsoRemove?: string[]; onlyIf?: string },
  ): Promise<boolean> {
    const remove = shape.alsoRemove ? ` REMOVE ${shape.alsoRemove.join(', ')}` : '';
    const conditions = ['attribute_not_exists(recipientUserId)', 'envelope.isEscrowed = :escrowed'];
    return this.updateIf(key, {
      UpdateExpression: `SET envelope = :envelope, recipientUserId = :user, #ttl = :ttl${remove}`,
      ConditionExpression: [...(shape.onlyIf ? [shape.onlyIf] : []), ...conditions].join(' AND '),
      ExpressionAttributeNames: { '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ':envelope': release.envelope,
        ':user': release.recipientUserId,
        ':ttl': release.ttl,
        ':escrowed': true,
      },
    });
  }

  /** One conditional update of a receipt: true when it was made, false when its condition failed. */
  private async updateIf(
    key: ReceiptKey,
    update: Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName' | 'Key'>,
  ): Promise<boolean> {
    try {
      await this.doc.send(new UpdateCommand({ TableName: this.tableName, Key: keyOf(key), ...update }));
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  /**
   * Up to `limit` table keys of the receipts wrapped for a user (the sparse by-recipient-user index),
   * and whether more may remain. The index is eventually consistent in AWS: a receipt stored a moment
   * ago can be missing from it, which is why an erasure can be repeated.
   */
  async keysForRecipient(
    userId: string,
    limit: number,
  ): Promise<{ keys: Record<string, unknown>[]; more: boolean }> {
    const { partitionKey, sortKey } = tableDefinitions.receipts as { partitionKey: string; sortKey?: string };
    const keyNames = [partitionKey, ...(sortKey ? [sortKey] : [])];
    const keys: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          IndexName: 'by-recipient-user',
          KeyConditionExpression: 'recipientUserId = :user',
          ExpressionAttributeValues: { ':user': userId },
          ProjectionExpression: keyNames.map((_, index) => `#k${index}`).join(', '),
          ExpressionAttributeNames: Object.fromEntries(keyNames.map((name, index) => [`#k${index}`, name])),
          Limit: limit - keys.length,
          ExclusiveStartKey: startKey,
        }),
      );
      keys.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey && keys.length < limit);
    return { keys, more: startKey !== undefined };
  }

  /**
   * One page of the receipts wrapped for a user, newest first (the by-recipient-user index), from
   * after `startKey` (a LastEvaluatedKey of an earlier page). Receipts stored later sort before any
   * page already read, so paging on never repeats or skips one that was there when paging began.
   */
  async pageForRecipient(
    userId: string,
    limit: number,
    startKey: Record<string, string> | undefined,
  ): Promise<{ receipts: StoredReceipt[]; lastKey: Record<string, string> | undefined }> {
    const page = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: 'by-recipient-user',
        KeyConditionExpression: 'recipientUserId = :user',
        ExpressionAttributeValues: { ':user': userId },
        ScanIndexForward: false,
        Limit: limit,
        ExclusiveStartKey: startKey,
      }),
    );
    return {
      // The index holds keys only: the receipts themselves, in its order.
      receipts: await this.getByTableKeys(page.Items ?? []),
      lastKey: page.LastEvaluatedKey as Record<string, string> | undefined,
    };
  }

  /**
   * Every merchant client's receipt with this receiptId (the by-receipt-id index), for callers that
   * pick theirs by recipient. Eventually consistent: the index is written after the table.
   */
  async allWithReceiptId(receiptId: string): Promise<StoredReceipt[]> {
    if (receiptId === '') return [];
    const keys = await queryIndexAll<Record<string, unknown>>(this.doc, {
      table: this.tableName,
      index: 'by-receipt-id',
      attribute: 'receiptId',
      value: receiptId,
    });
    return this.getByTableKeys(keys);
  }

  /**
   * Deletes receipts by their table keys, 25 to a call. Unconditional, which is safe for keys read
   * from the by-recipient-user index: a receipt's recipient, once set, never changes.
   */
  async deleteAll(keys: readonly Record<string, unknown>[]): Promise<void> {
    await sendInBatches(
      keys.map((Key) => ({ DeleteRequest: { Key } })),
      BATCH_WRITE_MAX,
      async (pending) => {
        const result = await this.doc.send(
          new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } }),
        );
        return (result.UnprocessedItems?.[this.tableName] ?? []) as typeof pending;
      },
      'receipt deletions',
    );
  }
}
