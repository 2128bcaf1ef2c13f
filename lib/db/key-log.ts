import {
  BatchGetCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from './client.js';

/** One leaf naming a kid, as the kid's index item lists it. */
export interface KidEvent {
  index: number;
  event: 'registered' | 'revoked';
  merchantClientId: string;
}

/**
 * The key log's table (lib/kernel/tables.ts, keyLog):
 *   LEAF#<index>        { leaf: JCS string }          claimed by a conditional put (attribute_not_exists)
 *   NODE#<level>#<index> { hash: base64 }             complete subtrees, deterministic, written by whoever advances the head
 *   HEAD                { treeSize, rootHash }        advanced one leaf at a time by a conditional update (treeSize = :old)
 *   KID#<kid>           { events: [{ index, event, merchantClientId }] }  each leaf naming the kid, appended once claimed
 * An appender claims the first free index (HEAD.treeSize, then +1 on each condition failure), then
 * advances the head over every claimed leaf in order: concurrent appenders never fork, a crashed one
 * is finished by the next.
 */
export class KeyLogRepository {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async head(): Promise<{ treeSize: number; rootHash: string }> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: 'HEAD' }, ConsistentRead: true }),
    );
    return (
      (result.Item as { treeSize: number; rootHash: string } | undefined) ?? { treeSize: 0, rootHash: '' }
    );
  }

  /** Claims `index` for `leaf`; false when another appender holds it. */
  async claim(index: number, leaf: string): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { pk: `LEAF#${index}`, index, leaf },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }

  async nodes(keys: Array<{ level: number; index: number }>): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    for (let i = 0; i < keys.length; i += 100) {
      const result = await this.doc.send(
        new BatchGetCommand({
          RequestItems: {
            [this.tableName]: {
              Keys: keys.slice(i, i + 100).map((k) => ({ pk: `NODE#${k.level}#${k.index}` })),
              ConsistentRead: true,
            },
          },
        }),
      );
      for (const item of result.Responses?.[this.tableName] ?? [])
        found.set(item.pk as string, item.hash as string);
    }
    return found;
  }

  async leaves(start: number, end: number): Promise<Array<{ index: number; leaf: string }>> {
    const keys = Array.from({ length: end - start }, (_, i) => ({ pk: `LEAF#${start + i}` }));
    const found: Array<{ index: number; leaf: string }> = [];
    for (let i = 0; i < keys.length; i += 100) {
      const result = await this.doc.send(
        new BatchGetCommand({
          RequestItems: { [this.tableName]: { Keys: keys.slice(i, i + 100), ConsistentRead: true } },
        }),
      );
      for (const item of result.Responses?.[this.tableName] ?? [])
        found.push({ index: item.index as number, leaf: item.leaf as string });
    }
    return found.toSorted((a, b) => a.index - b.index);
  }

  /**
   * The leaves that name a kid, by index: one read, so inclusion by kid is this read and the proof's
   * O(log n) nodes. A leaf claimed by an appender that crashed before indexing it is not listed (the
   * leaf is still in the log, and `GET /key-log/entries` shows it).
   */
  async kidEvents(kid: string): Promise<KidEvent[]> {
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: `KID#${kid}` }, ConsistentRead: true }),
    );
    const events = (result.Item?.events as KidEvent[] | undefined) ?? [];
    return events.toSorted((a, b) => a.index - b.index);
  }

  async indexKidEvent(kid: string, entry: KidEvent): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: `KID#${kid}` },
        UpdateExpression: 'SET events = list_append(if_not_exists(events, :none), :entry)',
        ExpressionAttributeValues: { ':none': [], ':entry': [entry] },
      }),
    );
  }

  /** Stores complete subtrees' hashes: each is a function of the leaves, so a rewrite writes the same. */
  async putNodes(nodes: Array<{ level: number; index: number; hash: string }>): Promise<void> {
    await Promise.all(
      nodes.map((node) =>
        this.doc.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { pk: `NODE#${node.level}#${node.index}`, hash: node.hash },
          }),
        ),
      ),
    );
  }

  async advanceHead(from: number, rootHash: string): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: 'HEAD' },
          UpdateExpression: 'SET treeSize = :next, rootHash = :root',
          ConditionExpression: 'attribute_not_exists(pk) OR treeSize = :from',
          ExpressionAttributeValues: { ':from': from, ':next': from + 1, ':root': rootHash },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }
}
