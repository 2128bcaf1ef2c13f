import {
  BatchWriteCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { BATCH_WRITE_MAX, sendInBatches } from './batch.js';

/** A receipt's table key (ReceiptKey in ./receipts.js, which imports this file). */
interface ReceiptKey {
  merchantClientId: string;
  receiptId: string;
}

/**
 * One entry of the keyed evidence index (lib/crypto/evidence.ts): an opaque id, the receipt it points
 * to, and its body sealed under the card-tag key. Nothing in it shows a card, an amount or a time.
 */
export interface EvidenceEntry {
  evidenceId: string;
  /** `<merchantClientId>#<receiptId>`: the receipt's table key. */
  receiptRef: string;
  sealed: string;
  /** Epoch seconds: the receipt's own expiry. */
  ttl: number;
  /** The sealed body's `binding`, in clear for the write's condition (the receipt item shows it too). */
  binding?: string;
}

export type EvidenceKey = Pick<EvidenceEntry, 'evidenceId' | 'receiptRef'>;

export const receiptRefOf = (key: ReceiptKey): string => `${key.merchantClientId}#${key.receiptId}`;

/** A receiptId is a UUID (no `#`); the client id is everything before the last one. */
export function receiptKeyOf(receiptRef: string): ReceiptKey {
  const at = receiptRef.lastIndexOf('#');
  return { merchantClientId: receiptRef.slice(0, at), receiptId: receiptRef.slice(at + 1) };
}

const keyOf = ({ evidenceId, receiptRef }: EvidenceKey): EvidenceKey => ({ evidenceId, receiptRef });

/**
 * The evidence table. Entries are written just before their receipt (ReceiptRepository.putIfAbsent);
 * read by id (a claim's or a match's look-ups). The receipt item carries its entries' ids
 * (StoredReceipt.evidenceIds), which is how a release or an erasure finds them: the table has no index.
 */
export class EvidenceRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Every entry under one id, strongly consistent (a receipt stored a moment ago is found). */
  entries(evidenceId: string): Promise<EvidenceEntry[]> {
    return this.queryAll<EvidenceEntry>({
      KeyConditionExpression: 'evidenceId = :id',
      ExpressionAttributeValues: { ':id': evidenceId },
      ConsistentRead: true,
    });
  }

  /** Every page of one query. */
  private async queryAll<T>(input: Omit<QueryCommandInput, 'TableName' | 'ExclusiveStartKey'>): Promise<T[]> {
    const items: T[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(
        new QueryCommand({ ...input, TableName: this.tableName, ExclusiveStartKey: startKey }),
      );
      items.push(...((page.Items as T[] | undefined) ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return items;
  }

  /** A released receipt lives longer than an escrowed one: so do its entries. */
  async setTtl(keys: readonly EvidenceKey[], ttl: number): Promise<void> {
    await Promise.all(
      keys.map((key) =>
        this.doc
          .send(
            new UpdateCommand({
              TableName: this.tableName,
              Key: keyOf(key),
              UpdateExpression: 'SET #ttl = :ttl',
              ConditionExpression: 'attribute_exists(evidenceId)',
              ExpressionAttributeNames: { '#ttl': 'ttl' },
              ExpressionAttributeValues: { ':ttl': ttl },
            }),
          )
          .catch((error: unknown) => {
            // An entry gone meanwhile (moved by a rotation) has nothing to extend.
            if (!(error instanceof Error && error.name === 'ConditionalCheckFailedException')) throw error;
          }),
      ),
    );
  }

  /**
   * Writes a receipt's entries ahead of it, each only where no entry of another request for the same
   * receipt is (one with another binding): the keys of those that met one, which the caller overwrites
   * once its own receipt is the one stored (they were left by a request whose receipt never was).
   */
  async putBound(entries: readonly EvidenceEntry[]): Promise<EvidenceEntry[]> {
    const refused = await Promise.all(
      entries.map(async (entry) => {
        try {
          await this.doc.send(
            new PutCommand({
              TableName: this.tableName,
              Item: entry,
              ConditionExpression: 'attribute_not_exists(evidenceId) OR binding = :binding',
              ExpressionAttributeValues: { ':binding': entry.binding },
            }),
          );
          return [];
        } catch (error) {
          if (error instanceof Error && error.name === 'ConditionalCheckFailedException') return [entry];
          throw error;
        }
      }),
    );
    return refused.flat();
  }

  /** Writes entries outside a receipt's transaction (the backfill and the re-keying), 25 to a call. */
  async putAll(entries: readonly EvidenceEntry[]): Promise<void> {
    await this.batch(entries.map((Item) => ({ PutRequest: { Item } })));
  }

  /** Deletes entries by key, 25 to a call. */
  async deleteAll(keys: readonly EvidenceKey[]): Promise<void> {
    await this.batch(keys.map((key) => ({ DeleteRequest: { Key: keyOf(key) } })));
  }

  private async batch(requests: Record<string, unknown>[]): Promise<void> {
    await sendInBatches(
      requests,
      BATCH_WRITE_MAX,
      async (pending) => {
        const result = await this.doc.send(
          new BatchWriteCommand({ RequestItems: { [this.tableName]: pending } }),
        );
        return (result.UnprocessedItems?.[this.tableName] ?? []) as typeof pending;
      },
      'evidence writes',
    );
  }
}
