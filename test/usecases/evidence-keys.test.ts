import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Caller } from '../../lib/api-keys/authenticator.js';
import { receiptRefOf } from '../../lib/db/evidence.js';
import { receiptTableKey, type ReceiptKey } from '../../lib/db/receipts.js';
import { requireAllTables } from '../../lib/kernel/config.js';
import { claimEscrowedReceipts } from '../../lib/receipts/claim.js';
import { backfillEvidence } from '../../lib/receipts/evidence-backfill.js';
import { claimFactsOf } from '../../lib/receipts/encrypt.js';
import { evidenceEntriesFor, evidenceWidthMs } from '../../lib/receipts/evidence.js';
import { eraseUser } from '../../lib/users/lifecycle.js';
import { newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { evidenceOfReceipt } from '../support/tables.js';
import {
  cardTransaction,
  receiptWith,
  registerCardholder,
  request,
  startUseCases,
  storeReceipt,
  type Cardholder,
  type UseCases,
} from './support.js';

/**
 * Issue 40: the evidence table has no `by-receipt` index (it cost every entry a second write unit); a
 * receipt item names its entries' ids, and a release (the entries' longer expiry) and an erasure (the
 * entries deleted) find them there. Receipts stored by the version before (no ids on the item, the
 * same entries) are given their ids by `npm run admin -- evidence backfill`, which also extends the
 * entries of one released before it ran. What each test looks at is the evidence table itself.
 */
describe('evidence: a receipt names its entries, and its release and erasure find them there', () => {
  let useCases: UseCases;
  let merchant: Caller;
  let issuer: Caller;

  beforeAll(async () => {
    useCases = await startUseCases();
    [merchant, issuer] = await Promise.all([useCases.caller(['merchant']), useCases.caller(['issuer'])]);
  });

  afterAll(() => useCases?.close());

  const tables = () => requireAllTables(useCases.deps.config);
  const keyOf = (receiptId: string): ReceiptKey => ({ merchantClientId: merchant.clientId, receiptId });

  /** Every entry of the evidence table for this receipt (a scan: no index finds them). */
  const entriesOf = (receiptId: string) =>
    evidenceOfReceipt(useCases.deps.dynamo.doc, tables().evidence, receiptRefOf(keyOf(receiptId)));

  async function storedItem(receiptId: string) {
    const { Item } = await useCases.deps.dynamo.doc.send(
      new GetCommand({
        TableName: tables().receipts,
        Key: receiptTableKey(keyOf(receiptId)),
        ConsistentRead: true,
      }),
    );
    return Item;
  }

  /** An escrowed receipt for a new card, and the card's user registered. */
  async function escrowed(receipt = sampleReceipt()): Promise<{ receiptId: string; user: Cardholder }> {
    const hashedPan = newHashedPan();
    await storeReceipt(useCases.deps, merchant, hashedPan, receipt);
    return { receiptId: receipt.receiptId, user: await registerCardholder(useCases.deps, issuer, hashedPan) };
  }

  /** The item as the version before wrote it: the same receipt and entries, no ids on the receipt. */
  const asStoredBefore = (receiptId: string) =>
    useCases.deps.dynamo.doc.send(
      new UpdateCommand({
        TableName: tables().receipts,
        Key: receiptTableKey(keyOf(receiptId)),
        UpdateExpression: 'REMOVE evidenceIds',
      }),
    );

  const claim = (user: Cardholder, amount = 1748) =>
    claimEscrowedReceipts(useCases.deps, {
      userId: user.userId,
      transactions: [cardTransaction({ amount })],
      caller: issuer,
      ...request(),
    });

  const erase = (user: Cardholder) =>
    eraseUser(useCases.deps, {
      userId: user.userId,
      caller: issuer,
      ...request(),
      remainingMs: () => 60_000,
    });

  const backfill = async () =>
    backfillEvidence({
      doc: useCases.deps.dynamo.doc,
      tables: tables(),
      keyring: await useCases.deps.cardTags.keyring(),
      widthMs: evidenceWidthMs(useCases.deps),
    });

  it('stores a receipt naming exactly the ids of its entries, and the evidence table has no index', async () => {
    const { receiptId } = await escrowed();
    const entries = await entriesOf(receiptId);
    // The sample receipt has a tip: one entry for its total, one for its total before tip.
    expect(entries).toHaveLength(2);
    expect((await storedItem(receiptId))?.evidenceIds).toEqual(
      new Set(entries.map((entry) => entry.evidenceId)),
    );

    const { Table } = await useCases.deps.dynamo.client.send(
      new DescribeTableCommand({ TableName: tables().evidence }),
    );
    expect(Table?.GlobalSecondaryIndexes ?? []).toEqual([]);
  });

  it('writes one entry, named once, when the total and the total before tip are the same amount', async () => {
    const { receiptId, user } = await escrowed(receiptWith({ tip: 0 }));
    const entries = await entriesOf(receiptId);
    expect(entries).toHaveLength(1);
    expect((await storedItem(receiptId))?.evidenceIds).toEqual(new Set([entries[0]!.evidenceId]));
    // Without a tip the total is 15.48 (test/usecases/claims.test.ts).
    expect((await claim(user, 1548)).released).toBe(1);
  });

  it("a claim extends the released receipt's entries to its new expiry, found through the ids on the receipt", async () => {
    const { receiptId, user } = await escrowed();
    const escrowTtl = (await storedItem(receiptId))?.ttl as number;
    expect((await entriesOf(receiptId)).map((entry) => entry.ttl)).toEqual([escrowTtl, escrowTtl]);

    expect((await claim(user)).released).toBe(1);

    const releasedTtl = (await storedItem(receiptId))?.ttl as number;
    expect(releasedTtl).toBeGreaterThan(escrowTtl);
    expect((await entriesOf(receiptId)).map((entry) => entry.ttl)).toEqual([releasedTtl, releasedTtl]);
  });

  it("erasing a user deletes its receipts' entries, found through the ids on the receipts", async () => {
    const { receiptId, user } = await escrowed();
    expect((await claim(user)).released).toBe(1);
    expect(await entriesOf(receiptId)).toHaveLength(2);

    expect(await erase(user)).toMatchObject({ receiptsDeleted: 1, complete: true });

    expect(await storedItem(receiptId)).toBeUndefined();
    expect(await entriesOf(receiptId)).toEqual([]);
  });

  describe('entries written for a stored receipt are named on it, whatever its write finds', () => {
    /** Entries for a stored receipt, bound to its digest, under a bucket width of `minutes` (other ids). */
    async function entriesFor(receiptId: string, hashedPan: string, minutes: number) {
      const stored = await useCases.deps.repos.receipts.get(keyOf(receiptId));
      const keyring = await useCases.deps.cardTags.keyring();
      return {
        stored: stored!,
        entries: evidenceEntriesFor(keyring, {
          tag: keyring.tagsOf(hashedPan)[0]!,
          facts: claimFactsOf(sampleReceipt({ receiptId })),
          receipt: keyOf(receiptId),
          ttl: stored!.ttl,
          widthMs: minutes * 60_000,
          binding: stored!.requestDigest,
        }),
      };
    }
    const idsOf = (entries: { evidenceId: string }[]) => entries.map((entry) => entry.evidenceId);

    it('a retry of the stored request whose entries have other ids (a key rotated between) adds them', async () => {
      const hashedPan = newHashedPan();
      const { receipt } = await storeReceipt(useCases.deps, merchant, hashedPan);
      const first = idsOf(await entriesOf(receipt.receiptId));
      const { stored, entries } = await entriesFor(receipt.receiptId, hashedPan, 7);

      const outcome = await useCases.deps.repos.receipts.putIfAbsent(stored, entries);

      expect(outcome.stored).toBe(false);
      expect((await storedItem(receipt.receiptId))?.evidenceIds).toEqual(
        new Set([...first, ...idsOf(entries)]),
      );
    });

    it('a resealing refused because the envelope changed still names its entries; a receipt gone takes them away', async () => {
      const hashedPan = newHashedPan();
      const { receipt } = await storeReceipt(useCases.deps, merchant, hashedPan);
      const first = idsOf(await entriesOf(receipt.receiptId));
      const { stored, entries } = await entriesFor(receipt.receiptId, hashedPan, 7);
      const reseal = () =>
        useCases.deps.repos.receipts.resealIf(
          { ...keyOf(receipt.receiptId), requestDigest: stored.requestDigest },
          'not the envelope it has',
          stored.envelope,
          entries,
        );

      expect(await reseal()).toBe(false);
      expect((await storedItem(receipt.receiptId))?.evidenceIds).toEqual(
        new Set([...first, ...idsOf(entries)]),
      );

      // Erased in between: the entries just written would name a receipt that is not there.
      await useCases.deps.repos.receipts.deleteAll([receiptTableKey(keyOf(receipt.receiptId))]);
      await useCases.deps.repos.evidence.deleteAll(await entriesOf(receipt.receiptId));
      expect(await reseal()).toBe(false);
      expect(await storedItem(receipt.receiptId)).toBeUndefined();
      expect(await entriesOf(receipt.receiptId)).toEqual([]);
    });
  });

  describe('receipts stored by the version before (no ids on the item), after the backfill', () => {
    it('names their entries on them, once, and a claim and an erasure then find them', async () => {
      const { receiptId, user } = await escrowed();
      await asStoredBefore(receiptId);
      expect((await storedItem(receiptId))?.evidenceIds).toBeUndefined();
      const entries = await entriesOf(receiptId);

      expect((await backfill()).entriesNamed).toBeGreaterThanOrEqual(2);
      expect((await storedItem(receiptId))?.evidenceIds).toEqual(
        new Set(entries.map((entry) => entry.evidenceId)),
      );
      expect((await backfill()).entriesNamed).toBe(0);

      expect((await claim(user)).released).toBe(1);
      const releasedTtl = (await storedItem(receiptId))?.ttl as number;
      expect((await entriesOf(receiptId)).map((entry) => entry.ttl)).toEqual([releasedTtl, releasedTtl]);
      await erase(user);
      expect(await entriesOf(receiptId)).toEqual([]);
    });

    it('with --remove-orphans, deletes the entries an erasure before the backfill left, and keeps those whose receipt appears meanwhile', async () => {
      // Released, then its user erased before the backfill: the erasure found no ids on the receipt.
      const { receiptId, user } = await escrowed();
      await asStoredBefore(receiptId);
      expect((await claim(user)).released).toBe(1);
      await erase(user);
      expect(await storedItem(receiptId)).toBeUndefined();
      expect(await entriesOf(receiptId)).toHaveLength(2);
      // Entries written just ahead of their receipt, whose receipt is stored while the backfill waits.
      const inFlight = await escrowed();
      const item = await storedItem(inFlight.receiptId);
      await useCases.deps.repos.receipts.deleteAll([receiptTableKey(keyOf(inFlight.receiptId))]);

      const counts = await backfillEvidence({
        doc: useCases.deps.dynamo.doc,
        tables: tables(),
        keyring: await useCases.deps.cardTags.keyring(),
        widthMs: evidenceWidthMs(useCases.deps),
        removeOrphans: {
          settle: async () => {
            await useCases.deps.dynamo.doc.send(new PutCommand({ TableName: tables().receipts, Item: item }));
          },
        },
      });

      expect(counts.orphansRemoved).toBe(2);
      expect(await entriesOf(receiptId)).toEqual([]);
      expect(await entriesOf(inFlight.receiptId)).toHaveLength(2);
      expect((await claim(inFlight.user)).released).toBe(1);
      // Without the option nothing is deleted, and the count is not given.
      expect((await backfill()).orphansRemoved).toBeUndefined();
    });

    it('with --remove-orphans, keeps the entries of a receipt still in the table before issue 40, not copied yet', async () => {
      const { receiptId } = await escrowed();
      const legacyReceipts = tables().receipts.replace(/receipts-sharded$/, 'receipts-before-40');
      await useCases.deps.dynamo.client.send(
        new CreateTableCommand({
          TableName: legacyReceipts,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: ['merchantClientId', 'receiptId'].map((AttributeName) => ({
            AttributeName,
            AttributeType: 'S' as const,
          })),
          KeySchema: [
            { AttributeName: 'merchantClientId', KeyType: 'HASH' },
            { AttributeName: 'receiptId', KeyType: 'RANGE' },
          ],
        }),
      );
      const { pk: _pk, ...item } = (await storedItem(receiptId))!;
      await useCases.deps.dynamo.doc.send(new PutCommand({ TableName: legacyReceipts, Item: item }));
      await useCases.deps.repos.receipts.deleteAll([receiptTableKey(keyOf(receiptId))]);

      const counts = await backfillEvidence({
        doc: useCases.deps.dynamo.doc,
        tables: tables(),
        keyring: await useCases.deps.cardTags.keyring(),
        widthMs: evidenceWidthMs(useCases.deps),
        removeOrphans: { legacyReceipts, settle: async () => {} },
      });

      expect(counts.orphansRemoved).toBe(0);
      expect(await entriesOf(receiptId)).toHaveLength(2);
    });

    it('extends the entries of one released before the backfill ran, which its release could not find', async () => {
      const { receiptId, user } = await escrowed();
      await asStoredBefore(receiptId);
      const escrowTtl = (await storedItem(receiptId))?.ttl as number;
      expect((await claim(user)).released).toBe(1);
      expect((await entriesOf(receiptId)).map((entry) => entry.ttl)).toEqual([escrowTtl, escrowTtl]);

      await backfill();

      const releasedTtl = (await storedItem(receiptId))?.ttl as number;
      expect((await entriesOf(receiptId)).map((entry) => entry.ttl)).toEqual([releasedTtl, releasedTtl]);
      await erase(user);
      expect(await entriesOf(receiptId)).toEqual([]);
    });
  });
});
