import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Caller } from '../../lib/api-keys/authenticator.js';
import { openEnvelope } from '../../lib/crypto/envelope.js';
import { bucketOf, evidenceId, sealEvidence } from '../../lib/crypto/evidence.js';
import { receiptRefOf } from '../../lib/db/evidence.js';
import { requireAllTables } from '../../lib/kernel/config.js';
import { ConflictError, NotFoundError } from '../../lib/kernel/errors.js';
import { ClaimLimitError } from '../../lib/receipts/vocabulary.js';
import { claimEscrowedReceipts, type ClaimedTransaction } from '../../lib/receipts/claim.js';
import { claimFactsOf } from '../../lib/receipts/encrypt.js';
import { evidenceEntriesFor, evidenceWidthMs } from '../../lib/receipts/evidence.js';
import { getReceipt, listUserReceipts } from '../../lib/receipts/inbox.js';
import type { DigitalReceipt } from '../../lib/receipts/schemas.js';
import { eraseUser, rotateUserKey } from '../../lib/users/lifecycle.js';
import { newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { evidenceOfReceipt } from '../support/tables.js';
import {
  cardTransaction,
  importDeviceKey,
  receiptWith,
  registerCardholder,
  request,
  shifted,
  startUseCases,
  storeReceipt,
  type Cardholder,
  type UseCases,
} from './support.js';

/**
 * The decision of a claim: which escrowed receipts an issuer's card transaction releases to its user.
 * Each test names the rule it holds; what it looks at is the claim's answer and what the issuer and
 * the merchant can read afterwards, so a new way of finding candidates keeps these tests as they are.
 */
const WINDOW_MINUTES = 5;
const DAILY_LIMIT = 6;
const MINUTE = 60_000;

const transaction = (overrides: Partial<ClaimedTransaction> = {}): ClaimedTransaction =>
  cardTransaction(overrides);

describe('claims: escrowed receipts released by the card transaction', () => {
  let useCases: UseCases;
  let merchant: Caller;
  let issuer: Caller;

  beforeAll(async () => {
    useCases = await startUseCases({
      env: { CLAIM_WINDOW_MINUTES: String(WINDOW_MINUTES), CLAIM_DAILY_LIMIT: String(DAILY_LIMIT) },
    });
    [merchant, issuer] = await Promise.all([useCases.caller(['merchant']), useCases.caller(['issuer'])]);
  });

  afterAll(() => useCases?.close());

  const claim = (user: { userId: string }, transactions: ClaimedTransaction[], caller: Caller = issuer) =>
    claimEscrowedReceipts(useCases.deps, { userId: user.userId, transactions, caller, ...request() });

  /** A receipt escrowed for the card (no user yet), and then the card's user registered. */
  async function escrowedThenRegistered(
    receipt: DigitalReceipt = sampleReceipt(),
  ): Promise<{ receipt: DigitalReceipt; user: Cardholder }> {
    const hashedPan = newHashedPan();
    const stored = await storeReceipt(useCases.deps, merchant, hashedPan, receipt);
    expect(stored.envelope.isEscrowed).toBe(true);
    return { receipt, user: await registerCardholder(useCases.deps, issuer, hashedPan) };
  }

  /** Released to the user: the issuer reads it wrapped for the user's key, and that key opens it. */
  async function expectReleased(receipt: DigitalReceipt, user: Cardholder): Promise<void> {
    const { envelope } = await getReceipt(useCases.deps, receipt.receiptId, issuer);
    expect(envelope).toMatchObject({ isEscrowed: false, escrowKeyId: null, keyId: user.keyId });
    expect(JSON.parse(openEnvelope(envelope, user.privateKey).toString('utf8'))).toEqual(receipt);
    const inbox = await listUserReceipts(useCases.deps, {
      userId: user.userId,
      limit: 50,
      cursor: undefined,
      caller: issuer,
    });
    expect(inbox.receipts.map((entry) => entry.receiptId)).toContain(receipt.receiptId);
  }

  /** Still escrowed: the merchant's copy is under the escrow key, and the issuer cannot read it. */
  async function expectStillEscrowed(receipt: DigitalReceipt): Promise<void> {
    const { envelope } = await getReceipt(useCases.deps, receipt.receiptId, merchant);
    expect(envelope).toMatchObject({ isEscrowed: true, escrowKeyId: useCases.deps.escrow.keyId });
    await expect(getReceipt(useCases.deps, receipt.receiptId, issuer)).rejects.toBeInstanceOf(NotFoundError);
  }

  it("releases a receipt whose total, currency and time match, re-wrapped for the user's key, into the inbox", async () => {
    const { receipt, user } = await escrowedThenRegistered();
    await expectStillEscrowed(receipt);

    const outcome = await claim(user, [transaction()]);

    expect(outcome).toEqual({
      userId: user.userId,
      results: [{ transactionIndex: 0, receiptIds: [receipt.receiptId] }],
      released: 1,
    });
    await expectReleased(receipt, user);
  });

  it('matches the total before tip as well as the total: a card is often charged before the tip', async () => {
    const beforeTip = await escrowedThenRegistered();
    expect((await claim(beforeTip.user, [transaction({ amount: 1548 })])).released).toBe(1);
    await expectReleased(beforeTip.receipt, beforeTip.user);

    // Without a tip there is one amount only: the total.
    const noTip = await escrowedThenRegistered(receiptWith({ tip: 0 }));
    expect((await claim(noTip.user, [transaction({ amount: 1348 })])).released).toBe(0);
    expect((await claim(noTip.user, [transaction({ amount: 1548 })])).released).toBe(1);
  });

  it('releases nothing on a mismatch of amount, currency or time, and the receipt stays escrowed', async () => {
    const { receipt, user } = await escrowedThenRegistered();

    const outcome = await claim(user, [
      transaction({ amount: 1749 }),
      transaction({ currency: 'EUR' }),
      transaction({ transactionDate: shifted((WINDOW_MINUTES + 1) * MINUTE) }),
    ]);

    expect(outcome.released).toBe(0);
    expect(outcome.results.map((result) => result.receiptIds)).toEqual([[], [], []]);
    await expectStillEscrowed(receipt);
    // The same receipt was claimable all along: the right transaction releases it.
    expect((await claim(user, [transaction()])).released).toBe(1);
  });

  it('takes the configured window either side of the transaction time, its edges included', async () => {
    const window = WINDOW_MINUTES * MINUTE;
    const outside = await escrowedThenRegistered();
    expect(
      (
        await claim(outside.user, [
          transaction({ transactionDate: shifted(window + 1_000) }),
          transaction({ transactionDate: shifted(-window - 1_000) }),
        ])
      ).released,
    ).toBe(0);
    await expectStillEscrowed(outside.receipt);

    const late = await escrowedThenRegistered();
    expect((await claim(late.user, [transaction({ transactionDate: shifted(window) })])).released).toBe(1);
    const early = await escrowedThenRegistered();
    expect((await claim(early.user, [transaction({ transactionDate: shifted(-window) })])).released).toBe(1);
  });

  it('narrows by cardLast4 only when both the receipt and the claim have it', async () => {
    const digits = await escrowedThenRegistered();
    expect((await claim(digits.user, [transaction({ cardLast4: '1111' })])).released).toBe(0);
    await expectStillEscrowed(digits.receipt);
    expect((await claim(digits.user, [transaction({ cardLast4: '4242' })])).released).toBe(1);

    const claimWithout = await escrowedThenRegistered();
    expect((await claim(claimWithout.user, [transaction()])).released).toBe(1);

    const receiptWithout = await escrowedThenRegistered(receiptWith({ last4: null }));
    expect((await claim(receiptWithout.user, [transaction({ cardLast4: '1111' })])).released).toBe(1);
  });

  it("releases only receipts escrowed for the user's own card", async () => {
    const otherCard = await storeReceipt(useCases.deps, merchant, newHashedPan());
    const { user } = await escrowedThenRegistered();

    const outcome = await claim(user, [transaction()]);

    expect(outcome.results[0]!.receiptIds).not.toContain(otherCard.receipt.receiptId);
    await expectStillEscrowed(otherCard.receipt);
  });

  it('releases a receipt once: a second matching transaction, in the same claim or a later one, finds nothing', async () => {
    const { receipt, user } = await escrowedThenRegistered();

    const first = await claim(user, [transaction(), transaction({ amount: 1548 })]);
    expect(first.results).toEqual([
      { transactionIndex: 0, receiptIds: [receipt.receiptId] },
      { transactionIndex: 1, receiptIds: [] },
    ]);
    expect(first.released).toBe(1);
    expect((await claim(user, [transaction()])).released).toBe(0);
    await expectReleased(receipt, user);
  });

  it('answers per transaction, in order, which receipts each released', async () => {
    const hashedPan = newHashedPan();
    const morning = await storeReceipt(useCases.deps, merchant, hashedPan);
    const evening = sampleReceipt();
    await storeReceipt(useCases.deps, merchant, hashedPan, {
      ...evening,
      transaction: { ...evening.transaction, datetime: '2026-11-21T19:40:00Z' },
    });
    const user = await registerCardholder(useCases.deps, issuer, hashedPan);

    const outcome = await claim(user, [
      transaction({ amount: 999 }),
      transaction({ transactionDate: '2026-11-21T19:41:00Z' }),
      transaction(),
    ]);

    expect(outcome.results).toEqual([
      { transactionIndex: 0, receiptIds: [] },
      { transactionIndex: 1, receiptIds: [evening.receiptId] },
      { transactionIndex: 2, receiptIds: [morning.receipt.receiptId] },
    ]);
    expect(outcome.released).toBe(2);
  });

  it("refuses another client's user exactly like an unknown one, releasing nothing", async () => {
    const { receipt, user } = await escrowedThenRegistered();
    const otherIssuer = await useCases.caller(['issuer']);

    const foreign = await claim(user, [transaction()], otherIssuer).catch((error: unknown) => error);
    const unknown = await claim({ userId: randomUUID() }, [transaction()]).catch((error: unknown) => error);

    expect(foreign).toBeInstanceOf(NotFoundError);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect((foreign as NotFoundError).message).toBe((unknown as NotFoundError).message);
    await expectStillEscrowed(receipt);
  });

  it('counts the transactions a user claims per UTC day: past the cap the whole claim is refused and releases nothing; the next day opens again', async () => {
    const { receipt, user } = await escrowedThenRegistered();
    const unmatched = (count: number) => Array.from({ length: count }, () => transaction({ amount: 1 }));

    expect((await claim(user, unmatched(DAILY_LIMIT - 2))).released).toBe(0);
    const refused = await claim(user, [...unmatched(2), transaction()]).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ClaimLimitError);
    // Until midnight UTC: the clock stands at noon.
    expect((refused as ClaimLimitError).headers).toEqual({ 'Retry-After': String(12 * 3_600) });
    await expectStillEscrowed(receipt);

    // What is left of the day's allowance is still there to spend.
    expect((await claim(user, [unmatched(1)[0]!, transaction()])).released).toBe(1);
    await expectReleased(receipt, user);
    await expect(claim(user, unmatched(1))).rejects.toBeInstanceOf(ClaimLimitError);

    useCases.clock.advance(12 * 3_600_000);
    expect((await claim(user, unmatched(DAILY_LIMIT))).released).toBe(0);
    // More than a day's allowance at once is never accepted.
    useCases.clock.advance(24 * 3_600_000);
    await expect(claim(user, unmatched(DAILY_LIMIT + 1))).rejects.toBeInstanceOf(ClaimLimitError);
  });

  it('counts the allowance per card and issuer, not per user: the card registered again after its user is erased has none left', async () => {
    const { receipt, user } = await escrowedThenRegistered();
    const unmatched = (count: number) => Array.from({ length: count }, () => transaction({ amount: 1 }));
    expect((await claim(user, unmatched(DAILY_LIMIT))).released).toBe(0);
    await eraseUser(useCases.deps, {
      userId: user.userId,
      caller: issuer,
      ...request(),
      remainingMs: () => 60_000,
    });

    // The same card, a new user of the same issuer: a fresh allowance would release the receipt.
    const again = await registerCardholder(useCases.deps, issuer, user.hashedPan);
    expect(again.userId).not.toBe(user.userId);
    await expect(claim(again, [transaction()])).rejects.toBeInstanceOf(ClaimLimitError);
    await expectStillEscrowed(receipt);
  });

  it("wraps a released receipt for the user's current key: after a rotation the old key cannot open it", async () => {
    const { receipt, user } = await escrowedThenRegistered();
    const newKey = await importDeviceKey(useCases.deps, issuer);
    await rotateUserKey(useCases.deps, {
      userId: user.userId,
      keyId: newKey.keyId,
      caller: issuer,
      ...request(),
    });

    expect((await claim(user, [transaction()])).released).toBe(1);

    await expectReleased(receipt, { ...user, keyId: newKey.keyId, privateKey: newKey.privateKey });
    const { envelope } = await getReceipt(useCases.deps, receipt.receiptId, issuer);
    expect(() => openEnvelope(envelope, user.privateKey)).toThrow();
  });

  it('finds a receipt whose entries an earlier version wrote under its bucket and both neighbours, and releases it once', async () => {
    const receipt = sampleReceipt();
    const hashedPan = newHashedPan();
    await storeReceipt(useCases.deps, merchant, hashedPan, receipt);
    // What the version before issue 40 wrote, in the receipt's transaction (no binding): every amount
    // under three buckets. Today's code writes the middle one; these are the neighbours.
    const keyring = await useCases.deps.cardTags.keyring();
    const widthMs = evidenceWidthMs(useCases.deps);
    const tag = keyring.tagsOf(hashedPan)[0]!;
    const { amounts, currency, at, cardLast4 } = claimFactsOf(receipt);
    const receiptRef = receiptRefOf({ merchantClientId: merchant.clientId, receiptId: receipt.receiptId });
    const bucket = bucketOf(at, widthMs);
    await useCases.deps.repos.evidence.putAll(
      [...new Set(amounts)].flatMap((amount) =>
        [bucket - 1, bucket + 1].map((each) => {
          const id = evidenceId(keyring, tag, { amount, currency }, each, widthMs);
          const body = { tag, amount, currency, at, ...(cardLast4 ? { cardLast4 } : {}) };
          return {
            evidenceId: id,
            receiptRef,
            sealed: sealEvidence(keyring, id, receiptRef, body),
            ttl: 2e9,
          };
        }),
      ),
    );
    const user = await registerCardholder(useCases.deps, issuer, hashedPan);

    // At the window's edge the look-up's three buckets hold two of the receipt's entries: one receipt.
    const outcome = await claim(user, [transaction({ transactionDate: shifted(-WINDOW_MINUTES * MINUTE) })]);
    expect(outcome).toMatchObject({ results: [{ receiptIds: [receipt.receiptId] }], released: 1 });
    await expectReleased(receipt, user);
  });

  describe('evidence written ahead of its receipt, bound to it (issue 40: no transaction)', () => {
    /** Entries for `receipt` under `hashedPan`'s card, bound to `binding`, as a request would write them. */
    async function entriesFor(receipt: DigitalReceipt, hashedPan: string, binding: string) {
      const keyring = await useCases.deps.cardTags.keyring();
      return evidenceEntriesFor(keyring, {
        tag: keyring.tagsOf(hashedPan)[0]!,
        facts: claimFactsOf(receipt),
        receipt: { merchantClientId: merchant.clientId, receiptId: receipt.receiptId },
        ttl: Math.floor(Date.now() / 1000) + 86_400,
        widthMs: evidenceWidthMs(useCases.deps),
        binding,
      });
    }
    const receiptKey = (receipt: DigitalReceipt) => ({
      merchantClientId: merchant.clientId,
      receiptId: receipt.receiptId,
    });

    it("a request refused because its receiptId is taken leaves no entry, and its card's claim finds nothing", async () => {
      const { receipt } = await escrowedThenRegistered();
      const entriesOf = async () =>
        (
          await evidenceOfReceipt(
            useCases.deps.dynamo.doc,
            requireAllTables(useCases.deps.config).evidence,
            receiptRefOf(receiptKey(receipt)),
          )
        ).map(({ evidenceId, receiptRef }) => ({ evidenceId, receiptRef }));
      const before = await entriesOf();
      expect(before.length).toBeGreaterThan(0);
      const otherCard = newHashedPan();
      const conflicting = { ...receipt, notes: 'another receipt under the same id' } as DigitalReceipt;

      await expect(storeReceipt(useCases.deps, merchant, otherCard, conflicting)).rejects.toBeInstanceOf(
        ConflictError,
      );

      expect(await entriesOf()).toEqual(expect.arrayContaining(before));
      expect(await entriesOf()).toHaveLength(before.length);
      const other = await registerCardholder(useCases.deps, issuer, otherCard);
      expect((await claim(other, [transaction()])).released).toBe(0);
      await expectStillEscrowed(receipt);
    });

    it("an entry bound to another request's digest never finds the receipt stored under its id", async () => {
      const { receipt } = await escrowedThenRegistered();
      const otherCard = newHashedPan();
      // What a refused request leaves when it stops between its entries and its receipt's put.
      await useCases.deps.repos.evidence.putAll(await entriesFor(receipt, otherCard, 'f'.repeat(64)));
      const other = await registerCardholder(useCases.deps, issuer, otherCard);

      expect((await claim(other, [transaction()])).released).toBe(0);
      await expectStillEscrowed(receipt);
    });

    it('entries left by a request whose receipt was never stored are replaced by those of the receipt stored under the id', async () => {
      const receipt = sampleReceipt();
      const hashedPan = newHashedPan();
      await useCases.deps.repos.evidence.putAll(await entriesFor(receipt, hashedPan, 'e'.repeat(64)));

      await storeReceipt(useCases.deps, merchant, hashedPan, receipt);
      const user = await registerCardholder(useCases.deps, issuer, hashedPan);

      expect((await claim(user, [transaction()])).released).toBe(1);
      await expectReleased(receipt, user);
    });
  });
});
