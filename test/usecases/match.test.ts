import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Caller } from '../../lib/api-keys/authenticator.js';
import { requireAllTables } from '../../lib/kernel/config.js';
import { InvalidRequestError, NotFoundError } from '../../lib/kernel/errors.js';
import { ClaimLimitError } from '../../lib/receipts/vocabulary.js';
import { claimEscrowedReceipts } from '../../lib/receipts/claim.js';
import { matchReceipts, type MatchedTransaction } from '../../lib/receipts/match.js';
import type { DigitalReceipt } from '../../lib/receipts/schemas.js';
import { unbindUser } from '../../scripts/admin/users.js';
import { newHashedPan } from '../support/fixtures.js';
import {
  cardTransaction,
  PAID_AT,
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
 * The decision of a match: which of a user's receipts an issuer's card transaction is put beside.
 * What a test looks at is the match's answer, what it spent of the card's allowance, and the audit;
 * how candidates are found (the keyed evidence index) is the claim's, and these tests do not depend on it.
 */
const WINDOW_MINUTES = 5;
const DAILY_LIMIT = 8;
const MINUTE = 60_000;

const line = (reference: string, overrides: Partial<MatchedTransaction> = {}): MatchedTransaction => ({
  reference,
  ...cardTransaction(overrides),
});

describe("match: the user's receipts beside its card transactions", () => {
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

  const match = (
    user: { userId: string },
    transactions: MatchedTransaction[],
    caller: Caller = issuer,
    ids = request(),
  ) => matchReceipts(useCases.deps, { userId: user.userId, transactions, caller, ...ids });
  /** The audit records of one request (records of one instant come in no particular order). */
  const auditOf = async (caller: Caller, requestId: string) =>
    (await useCases.deps.audit.forClient(caller.clientId, 100)).filter(
      (record) => record.requestId === requestId,
    );
  const idsOf = (outcome: Awaited<ReturnType<typeof match>>) =>
    outcome.matches.map((entry) => entry.receiptIds);

  /** A registered user and receipts paid with its card afterwards: wrapped for the user, not escrowed. */
  async function userWith(
    ...receipts: DigitalReceipt[]
  ): Promise<{ user: Cardholder; receipts: DigitalReceipt[] }> {
    const user = await registerCardholder(useCases.deps, issuer);
    for (const receipt of receipts) {
      const stored = await storeReceipt(useCases.deps, merchant, user.hashedPan, receipt);
      expect(stored.recipientUserId).toBe(user.userId);
    }
    return { user, receipts };
  }

  /** Spends what is left of the card's allowance with this issuer, one transaction at a time: how much there was. */
  async function allowanceLeft(user: { userId: string }): Promise<number> {
    let spent = 0;
    while (spent <= DAILY_LIMIT) {
      try {
        await match(user, [line('probe', { amount: 1 })]);
      } catch (error) {
        expect(error).toBeInstanceOf(ClaimLimitError);
        return spent;
      }
      spent += 1;
    }
    throw new Error('the allowance never ran out');
  }

  it('answers each reference, in order, with the receipts its total (or total before tip), currency and time match', async () => {
    const evening = receiptWith({ tip: 0, at: '2026-11-21T19:40:00Z' });
    const { user, receipts } = await userWith(receiptWith({}), evening);

    const outcome = await match(user, [
      line('ledger-1', { amount: 999 }),
      line('ledger-2', { amount: 1548, transactionDate: '2026-11-21T19:41:00Z' }),
      line('ledger-3'),
      line('ledger-4', { amount: 1548 }),
    ]);

    expect(outcome).toEqual({
      matches: [
        { reference: 'ledger-1', receiptIds: [] },
        { reference: 'ledger-2', receiptIds: [evening.receiptId] },
        { reference: 'ledger-3', receiptIds: [receipts[0]!.receiptId] },
        // A card is often charged before the tip: that amount finds the receipt too.
        { reference: 'ledger-4', receiptIds: [receipts[0]!.receiptId] },
      ],
    });
  });

  it('finds nothing on a mismatch of amount, currency, time or last four, and takes the window with its edges', async () => {
    const { user, receipts } = await userWith(receiptWith({}));
    const window = WINDOW_MINUTES * MINUTE;

    const outcome = await match(user, [
      line('amount', { amount: 1749 }),
      line('currency', { currency: 'EUR' }),
      line('late', { transactionDate: shifted(window + 1_000) }),
      line('early', { transactionDate: shifted(-window - 1_000) }),
      line('digits', { cardLast4: '1111' }),
      line('late edge', { transactionDate: shifted(window) }),
      line('early edge', { transactionDate: shifted(-window), cardLast4: '4242' }),
    ]);

    expect(idsOf(outcome)).toEqual([[], [], [], [], [], [receipts[0]!.receiptId], [receipts[0]!.receiptId]]);
  });

  it('narrows by cardLast4 only when the receipt has it too', async () => {
    const { user, receipts } = await userWith(receiptWith({ last4: null }));
    expect(idsOf(await match(user, [line('any digits', { cardLast4: '1111' })]))).toEqual([
      [receipts[0]!.receiptId],
    ]);
  });

  it('lists every matching receipt of the user, however many share the transaction', async () => {
    const { user, receipts } = await userWith(receiptWith({}), receiptWith({}), receiptWith({}));
    const [found] = idsOf(await match(user, [line('three coffees')]));
    expect(found!.sort()).toEqual(receipts.map((receipt) => receipt.receiptId).sort());
  });

  it('never lists an escrowed receipt of the card: a claim makes it the user’s, and then it is listed', async () => {
    const hashedPan = newHashedPan();
    const escrowed = await storeReceipt(useCases.deps, merchant, hashedPan, receiptWith({}));
    expect(escrowed.envelope.isEscrowed).toBe(true);
    const user = await registerCardholder(useCases.deps, issuer, hashedPan);
    const own = await storeReceipt(useCases.deps, merchant, hashedPan, receiptWith({}));
    expect(own.recipientUserId).toBe(user.userId);

    expect(idsOf(await match(user, [line('before the claim')]))).toEqual([[own.receipt.receiptId]]);

    const claimed = await claimEscrowedReceipts(useCases.deps, {
      userId: user.userId,
      transactions: [{ amount: 1748, currency: 'USD', transactionDate: PAID_AT }],
      caller: issuer,
      ...request(),
    });
    expect(claimed.released).toBe(1);
    const [after] = idsOf(await match(user, [line('after the claim')]));
    expect(after!.sort()).toEqual([escrowed.receipt.receiptId, own.receipt.receiptId].sort());
  });

  it("never lists a receipt of the same card wrapped for an earlier user (another issuer's registration, unbound)", async () => {
    const otherIssuer = await useCases.caller(['issuer']);
    const earlier = await registerCardholder(useCases.deps, otherIssuer);
    const theirs = await storeReceipt(useCases.deps, merchant, earlier.hashedPan, receiptWith({}));
    expect(theirs.recipientUserId).toBe(earlier.userId);
    const { deps } = useCases;
    await unbindUser(
      {
        doc: deps.dynamo.doc,
        tables: requireAllTables(deps.config),
        audit: deps.audit,
        now: () => deps.clock.now(),
      },
      earlier.userId,
      'registered by the wrong issuer',
    );
    const user = await registerCardholder(deps, issuer, earlier.hashedPan);

    expect(idsOf(await match(user, [line('same card, same coffee')]))).toEqual([[]]);
  });

  it("refuses another client's user exactly like an unknown one, spending nothing, audited under the caller", async () => {
    const { user } = await userWith(receiptWith({}));
    const otherIssuer = await useCases.caller(['issuer']);

    const foreign = await match(user, [line('a')], otherIssuer).catch((error: unknown) => error);
    const unknown = await match({ userId: randomUUID() }, [line('a')], otherIssuer).catch(
      (error: unknown) => error,
    );

    expect(foreign).toBeInstanceOf(NotFoundError);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect((foreign as NotFoundError).message).toBe((unknown as NotFoundError).message);
    expect((foreign as NotFoundError).details).toEqual((unknown as NotFoundError).details);
    const audit = await useCases.deps.audit.forClient(otherIssuer.clientId, 10);
    expect(audit.map(({ action, outcome }) => ({ action, outcome }))).toEqual([
      { action: 'receipts.match', outcome: 'failure' },
      { action: 'receipts.match', outcome: 'failure' },
    ]);
    // The foreign attempt spent nothing of the card's allowance with either client.
    expect(await allowanceLeft(user)).toBe(DAILY_LIMIT);
  });

  it('refuses a date no receipt can have before spending anything', async () => {
    const { user } = await userWith();
    const refused = await match(user, [
      line('fine'),
      line('far future', { transactionDate: '9999-12-31T00:00:00Z' }),
    ]).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect(JSON.stringify((refused as InvalidRequestError).details)).toContain(
      'transactions.1.transactionDate',
    );
    expect(await allowanceLeft(user)).toBe(DAILY_LIMIT);
  });

  it('spends the allowance claims spend, one per transaction: a match past it is refused whole, and so is a claim after a match', async () => {
    const { user, receipts } = await userWith(receiptWith({}));
    const claim = (count: number, ids = request()) =>
      claimEscrowedReceipts(useCases.deps, {
        userId: user.userId,
        transactions: Array.from({ length: count }, () => ({
          amount: 1,
          currency: 'USD',
          transactionDate: PAID_AT,
        })),
        caller: issuer,
        ...ids,
      });

    await claim(DAILY_LIMIT - 3);
    expect(idsOf(await match(user, [line('a'), line('b')]))).toEqual([
      [receipts[0]!.receiptId],
      [receipts[0]!.receiptId],
    ]);
    const refusedMatch = request();
    const refused = await match(user, [line('c'), line('d')], issuer, refusedMatch).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ClaimLimitError);
    // Until midnight UTC: the clock stands at noon.
    expect((refused as ClaimLimitError).headers).toEqual({ 'Retry-After': String(12 * 3_600) });
    await match(user, [line('the last one')]);
    const refusedClaim = request();
    await expect(claim(1, refusedClaim)).rejects.toBeInstanceOf(ClaimLimitError);
    const limitReached = { outcome: 'failure', reason: 'daily claim limit reached', userId: user.userId };
    expect(await auditOf(issuer, refusedMatch.requestId)).toEqual([
      expect.objectContaining({ action: 'receipts.match', ...limitReached, counts: { transactions: 2 } }),
    ]);
    expect(await auditOf(issuer, refusedClaim.requestId)).toEqual([
      expect.objectContaining({ action: 'escrow.claim-request', ...limitReached }),
    ]);

    // More than a day's allowance at once is never accepted; the next day opens again.
    useCases.clock.advance(12 * 3_600_000);
    await expect(
      match(
        user,
        Array.from({ length: DAILY_LIMIT + 1 }, (_, index) => line(`line ${index}`)),
      ),
    ).rejects.toBeInstanceOf(ClaimLimitError);
    expect(await allowanceLeft(user)).toBe(DAILY_LIMIT);
  });

  it('audits a match with ids and counts only: no reference, amount, time or receipt id', async () => {
    const { user, receipts } = await userWith(receiptWith({}));
    const reference = `ledger-${randomUUID()}`;

    const ids = request();
    await match(user, [line(reference), line('no such coffee', { amount: 4321 })], issuer, ids);

    const records = await auditOf(issuer, ids.requestId);
    expect(records).toHaveLength(1);
    const [record] = records;
    expect(record).toMatchObject({
      action: 'receipts.match',
      outcome: 'success',
      userId: user.userId,
      counts: { transactions: 2, matched: 1, receipts: 1 },
    });
    expect(Object.keys(record!).sort()).toEqual(
      [
        'action',
        'at',
        'cardTagPrefix',
        'clientId',
        'counts',
        'outcome',
        'pk',
        'requestId',
        'sk',
        'ttl',
        'userId',
      ].sort(),
    );
    const text = JSON.stringify(record);
    for (const secret of [reference, user.hashedPan, receipts[0]!.receiptId])
      expect(text).not.toContain(secret);
  });
});
