import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { DeleteCommand, GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { Caller } from '../../lib/api-keys/authenticator.js';
import { openEnvelope } from '../../lib/crypto/envelope.js';
import { RECEIPT_SHARDS, receiptShardOf, receiptTableKey } from '../../lib/db/receipts.js';
import { claimEscrowedReceipts } from '../../lib/receipts/claim.js';
import { getReceipt, listUserReceipts } from '../../lib/receipts/inbox.js';
import { migrateReceiptsToShards } from '../../lib/receipts/migrate-sharded.js';
import { eventsOf } from '../../lib/webhooks/events.js';
import { newHashedPan, sampleReceipt } from '../support/fixtures.js';
import {
  cardTransaction,
  registerCardholder,
  request,
  startUseCases,
  storeReceipt,
  type Cardholder,
  type UseCases,
} from './support.js';

/**
 * Issue 40: receipts move from the table keyed by merchantClientId alone (indexes projecting whole
 * receipts) to `receipts-sharded`. The old table here is made as today's infrastructure made it and
 * holds receipts as today's code wrote them (the service's own writes, moved there without their
 * sharded key); after the migration every one is found again through the service's own read paths.
 */
describe('receipts: the sharded table and the migration from the table keyed by merchant', () => {
  let useCases: UseCases;
  let merchant: Caller;
  let issuer: Caller;
  let legacyTable: string;

  beforeAll(async () => {
    useCases = await startUseCases();
    [merchant, issuer] = await Promise.all([useCases.caller(['merchant']), useCases.caller(['issuer'])]);
    legacyTable = useCases.deps.config.tables.receipts!.replace(/receipts-sharded$/, 'receipts');
    const S = 'S' as const;
    const all = { ProjectionType: 'ALL' as const };
    // As infra/data-tables.ts declared it before issue 40.
    await useCases.deps.dynamo.client.send(
      new CreateTableCommand({
        TableName: legacyTable,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          'merchantClientId',
          'receiptId',
          'pendingRecipient',
          'recipientUserId',
          'createdAt',
        ].map((AttributeName) => ({ AttributeName, AttributeType: S })),
        KeySchema: [
          { AttributeName: 'merchantClientId', KeyType: 'HASH' },
          { AttributeName: 'receiptId', KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: 'by-pending-recipient',
            KeySchema: [{ AttributeName: 'pendingRecipient', KeyType: 'HASH' }],
            Projection: all,
          },
          {
            IndexName: 'by-recipient-user',
            KeySchema: [
              { AttributeName: 'recipientUserId', KeyType: 'HASH' },
              { AttributeName: 'createdAt', KeyType: 'RANGE' },
            ],
            Projection: all,
          },
          {
            IndexName: 'by-receipt-id',
            KeySchema: [{ AttributeName: 'receiptId', KeyType: 'HASH' }],
            Projection: all,
          },
        ],
        StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
      }),
    );
  });

  afterAll(() => useCases?.close());

  const table = () => useCases.deps.config.tables.receipts!;

  /** Stored by the service, then moved into the old table as today's code wrote it (no `pk`). */
  async function storedByTodaysCode(hashedPan: string | undefined) {
    const stored = await storeReceipt(useCases.deps, merchant, hashedPan, {
      ...sampleReceipt(),
      receiptId: randomUUID(),
    });
    const key = receiptTableKey({ merchantClientId: merchant.clientId, receiptId: stored.receipt.receiptId });
    const { Item } = await useCases.deps.dynamo.doc.send(new GetCommand({ TableName: table(), Key: key }));
    const { pk: _pk, ...today } = Item!;
    await useCases.deps.dynamo.doc.send(new PutCommand({ TableName: legacyTable, Item: today }));
    await useCases.deps.dynamo.doc.send(new DeleteCommand({ TableName: table(), Key: key }));
    return stored;
  }

  it('keys a receipt under its merchant client and a shard the hash of its receiptId gives, spreading a client over the shards; a read is one GetItem', async () => {
    const stored = await Promise.all(
      Array.from({ length: 24 }, () =>
        storeReceipt(useCases.deps, merchant, undefined, { ...sampleReceipt(), receiptId: randomUUID() }),
      ),
    );
    const { Items = [] } = await useCases.deps.dynamo.doc.send(
      new ScanCommand({ TableName: table(), ConsistentRead: true }),
    );
    const ours = Items.filter((item) => item.merchantClientId === merchant.clientId);
    for (const { receipt } of stored) {
      const item = ours.find((candidate) => candidate.receiptId === receipt.receiptId)!;
      expect(item.pk).toBe(`${merchant.clientId}#${receiptShardOf(receipt.receiptId)}`);
    }
    const shards = new Set(ours.map((item) => item.pk));
    expect(shards.size).toBeGreaterThan(RECEIPT_SHARDS / 2);

    const commands: string[] = [];
    useCases.deps.dynamo.doc.middlewareStack.add(
      (next, context) => (args) => {
        commands.push(context.commandName ?? '');
        return next(args);
      },
      { step: 'initialize', name: 'countReceiptReads' },
    );
    try {
      const found = await useCases.deps.repos.receipts.get({
        merchantClientId: merchant.clientId,
        receiptId: stored[0]!.receipt.receiptId,
      });
      expect(found).toMatchObject({
        receiptId: stored[0]!.receipt.receiptId,
        merchantClientId: merchant.clientId,
      });
      expect(found).not.toHaveProperty('pk');
      expect(commands).toEqual(['GetItemCommand']);
    } finally {
      useCases.deps.dynamo.doc.middlewareStack.remove('countReceiptReads');
    }
  });

  it("copies the old table's receipts under their sharded keys, where the service's reads, the inbox and a claim find every one, once", async () => {
    const escrowedPan = newHashedPan();
    const escrowed = await storedByTodaysCode(escrowedPan);
    const userPan = newHashedPan();
    const user: Cardholder = await registerCardholder(useCases.deps, issuer, userPan);
    const forUser = await storedByTodaysCode(userPan);
    const plain = await storedByTodaysCode(undefined);
    expect(forUser.recipientUserId).toBe(user.userId);
    // Before: the service cannot see them.
    await expect(getReceipt(useCases.deps, plain.receipt.receiptId, merchant)).rejects.toThrow();

    const first = await migrateReceiptsToShards({
      client: useCases.deps.dynamo.client,
      doc: useCases.deps.dynamo.doc,
      tables: { legacyReceipts: legacyTable, receipts: table() },
    });
    expect(first).toEqual({ copied: 3, alreadyThere: 0 });

    // GET /receipts/{id} (the by-receipt-id index, keys only, then the item).
    for (const { receipt, envelope } of [escrowed, forUser, plain])
      expect((await getReceipt(useCases.deps, receipt.receiptId, merchant)).envelope).toEqual(envelope);
    // The issuer's inbox (by-recipient-user), and the receipt opens with the user's key.
    const inbox = await listUserReceipts(useCases.deps, {
      userId: user.userId,
      limit: 10,
      cursor: undefined,
      caller: issuer,
    });
    expect(inbox.receipts.map((entry) => entry.receiptId)).toEqual([forUser.receipt.receiptId]);
    const mine = await getReceipt(useCases.deps, forUser.receipt.receiptId, issuer);
    expect(JSON.parse(openEnvelope(mine.envelope, user.privateKey).toString('utf8'))).toEqual(
      forUser.receipt,
    );
    // A claim finds the escrowed one through its evidence entries, written before the move.
    const claimant = await registerCardholder(useCases.deps, issuer, escrowedPan);
    const claimed = await claimEscrowedReceipts(useCases.deps, {
      userId: claimant.userId,
      transactions: [cardTransaction({})],
      caller: issuer,
      ...request(),
    });
    expect(claimed.results).toEqual([{ transactionIndex: 0, receiptIds: [escrowed.receipt.receiptId] }]);

    // Again: nothing copied twice, and the claim's release is not undone.
    expect(
      await migrateReceiptsToShards({
        client: useCases.deps.dynamo.client,
        doc: useCases.deps.dynamo.doc,
        tables: { legacyReceipts: legacyTable, receipts: table() },
      }),
    ).toEqual({ copied: 0, alreadyThere: 3 });
    expect((await getReceipt(useCases.deps, escrowed.receipt.receiptId, issuer)).envelope.keyId).toBe(
      claimant.keyId,
    );
  });

  it("raises no webhook event for a copied receipt's insert: its events were raised when it was first stored", () => {
    const image = marshall({
      pk: 'c#1',
      receiptId: randomUUID(),
      merchantClientId: 'c',
      recipientUserId: 'u',
      createdAt: new Date().toISOString(),
      envelope: { isEscrowed: false, merchantId: randomUUID(), transactionId: randomUUID() },
    });
    expect(eventsOf({ eventName: 'INSERT', dynamodb: { NewImage: image } }).length).toBeGreaterThan(0);
    expect(
      eventsOf({
        eventName: 'INSERT',
        dynamodb: { NewImage: { ...image, ...marshall({ migratedFrom: 'receipts' }) } },
      }),
    ).toEqual([]);
  });

  it('does nothing where there is no old table', async () => {
    expect(
      await migrateReceiptsToShards({
        client: useCases.deps.dynamo.client,
        doc: useCases.deps.dynamo.doc,
        tables: { legacyReceipts: `${legacyTable}-never-made`, receipts: table() },
      }),
    ).toEqual({ copied: 0, alreadyThere: 0 });
  });
});
