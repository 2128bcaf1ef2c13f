import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { matchReceiptsRoute } from '../../functions/receipts/match-receipts/route.js';
import { newHashedPan } from '../support/fixtures.js';
import { onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { fetchReceipt, pay } from '../support/lifecycle.js';
import { startTestStack, type HttpReply, type TestStack } from '../support/stack.js';

const MATCH_PATH = matchReceiptsRoute.path;

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; details?: { fields?: { field: string; message: string }[] } };
}
interface MatchResult {
  matches: { reference: string; receiptIds: string[] }[];
}
type Reply = HttpReply<Data<MatchResult> & ErrorBody>;
type Transaction = Record<string, unknown>;

const WINDOW_MINUTES = 15;
const DAILY_LIMIT = 20;

/**
 * Issue 22: POST /api/v1/users/{userId}/receipts/match over HTTP on the local stack, with payments
 * made through both gateways' sandboxes with the user's card: what it finds and what it does not,
 * escrow, the one 404, the per-card allowance it shares with claims, the audit, bad bodies.
 */
describe('POST /api/v1/users/{userId}/receipts/match', () => {
  let stack: TestStack;
  let merchant: { apiKey: string; clientId: string };
  let issuer: { apiKey: string; clientId: string };
  let otherIssuer: { apiKey: string; clientId: string };

  beforeAll(async () => {
    stack = await startTestStack({
      env: { CLAIM_WINDOW_MINUTES: String(WINDOW_MINUTES), CLAIM_DAILY_LIMIT: String(DAILY_LIMIT) },
    });
    [merchant, issuer, otherIssuer] = await Promise.all([
      stack.apiKey(['merchant']),
      stack.apiKey(['issuer']),
      stack.apiKey(['issuer']),
    ]);
  });

  afterAll(async () => {
    await stack?.close();
  });

  const match = (apiKey: string, userId: string, body: unknown): Promise<Reply> =>
    stack.request('POST', MATCH_PATH.replace('{userId}', userId), { apiKey, body });
  const claim = (apiKey: string, userId: string, transactions: Transaction[]): Promise<Reply> =>
    stack.request('POST', '/api/v1/receipts/claim', { apiKey, body: { userId, transactions } });
  /** `count` card transactions that match nothing (no receipt is of 1 cent), each its own reference. */
  const guesses = (count: number, prefix = 'guess'): Transaction[] =>
    Array.from({ length: count }, (_, index) => ({
      reference: `${prefix}-${index}`,
      amount: 1,
      currency: 'USD',
      transactionDate: '2026-11-21T09:15:00Z',
    }));
  const withoutReference = ({ reference: _reference, ...transaction }: Transaction): Transaction =>
    transaction;

  it("finds the user's receipts paid on both gateways by amount, currency, time and last four, and nothing else", async () => {
    const user = await onboardUser(stack, issuer.apiKey);
    const neighbour = await onboardUser(stack, issuer.apiKey);
    // One payment through each gateway with the user's card, and one of the same amount and time with another card.
    const byStripe = await pay(stack, merchant.apiKey, 'gateway_a', user.hashedPan, {
      transactionDate: '2026-11-21T09:15:00Z',
      cardLast4: '4242',
    });
    const bySquare = await pay(stack, merchant.apiKey, 'gateway_b', user.hashedPan, {
      transactionDate: '2026-11-22T18:30:00Z',
      cardLast4: '5555',
    });
    await pay(stack, merchant.apiKey, 'gateway_a', neighbour.hashedPan, {
      transactionDate: '2026-11-21T09:15:00Z',
      cardLast4: '4242',
    });
    const [a, b] = [byStripe.body.receiptId as string, bySquare.body.receiptId as string];
    expect([byStripe.body.totalAmount, bySquare.body.totalAmount]).toEqual([1548, 1548]);

    const statement = [
      {
        reference: 'stmt-0001',
        amount: 1548,
        currency: 'USD',
        transactionDate: '2026-11-21T09:20:00Z',
        cardLast4: '4242',
      },
      {
        reference: 'stmt-0002',
        amount: 1548,
        currency: 'USD',
        transactionDate: '2026-11-22T18:25:00Z',
        cardLast4: '5555',
      },
      {
        reference: 'stmt 0002/no digits',
        amount: 1548,
        currency: 'USD',
        transactionDate: '2026-11-22T18:30:00Z',
      },
      { reference: 'wrong amount', amount: 1549, currency: 'USD', transactionDate: '2026-11-21T09:15:00Z' },
      { reference: 'wrong currency', amount: 1548, currency: 'EUR', transactionDate: '2026-11-21T09:15:00Z' },
      { reference: 'too late', amount: 1548, currency: 'USD', transactionDate: '2026-11-21T09:30:01Z' },
      { reference: 'too early', amount: 1548, currency: 'USD', transactionDate: '2026-11-21T08:59:59Z' },
      {
        reference: 'wrong last four',
        amount: 1548,
        currency: 'USD',
        transactionDate: '2026-11-21T09:15:00Z',
        cardLast4: '0000',
      },
    ];
    const reply = await match(issuer.apiKey, user.userId, { transactions: statement });

    expect(reply.status).toBe(200);
    expect(reply.json.data).toEqual({
      matches: [
        { reference: 'stmt-0001', receiptIds: [a] },
        { reference: 'stmt-0002', receiptIds: [b] },
        { reference: 'stmt 0002/no digits', receiptIds: [b] },
        { reference: 'wrong amount', receiptIds: [] },
        { reference: 'wrong currency', receiptIds: [] },
        { reference: 'too late', receiptIds: [] },
        { reference: 'too early', receiptIds: [] },
        { reference: 'wrong last four', receiptIds: [] },
      ],
    });
    // What the device then opens: the receipt, fetched by id, wrapped for the user's key.
    expect((await fetchReceipt(stack, issuer.apiKey, a)).envelope).toMatchObject({
      receiptId: a,
      keyId: user.keyId,
      isEscrowed: false,
    });

    // Audited once, under the issuer, with ids and counts: no reference, amount or time.
    const requestId = reply.headers.get('x-request-id');
    const records = (await stack.deps.audit.forClient(issuer.clientId, 100)).filter(
      (record) => record.requestId === requestId,
    );
    expect(records).toEqual([
      expect.objectContaining({
        action: 'receipts.match',
        outcome: 'success',
        userId: user.userId,
        counts: { transactions: 8, matched: 3, receipts: 3 },
      }),
    ]);
    const audited = JSON.stringify(records);
    for (const absent of ['stmt-0001', 'wrong amount', '2026-11-21T09:20', a, b])
      expect(audited).not.toContain(absent);
  });

  it('never returns an escrowed receipt: the claim makes it the user’s, and then match finds it', async () => {
    const hashedPan = newHashedPan();
    const paid = await pay(stack, merchant.apiKey, 'gateway_b', hashedPan, {
      transactionDate: '2026-11-21T10:00:00Z',
    });
    const escrowed = paid.body.receiptId as string;
    expect(
      (await stack.deps.repos.receipts.get({ merchantClientId: merchant.clientId, receiptId: escrowed }))
        ?.envelope.isEscrowed,
    ).toBe(true);
    const user = await onboardUser(stack, issuer.apiKey, hashedPan);
    const line = { amount: 1548, currency: 'USD', transactionDate: '2026-11-21T10:00:00Z' };

    const before = await match(issuer.apiKey, user.userId, { transactions: [{ reference: 'r1', ...line }] });
    expect([before.status, before.json.data.matches]).toEqual([200, [{ reference: 'r1', receiptIds: [] }]]);

    const claimed = await claim(issuer.apiKey, user.userId, [line]);
    expect(claimed.status).toBe(200);
    const after = await match(issuer.apiKey, user.userId, { transactions: [{ reference: 'r1', ...line }] });
    expect(after.json.data.matches).toEqual([{ reference: 'r1', receiptIds: [escrowed] }]);
  });

  it("gives another issuer's user the same 404 as an unknown user, and a merchant key 403", async () => {
    const user = await onboardUser(stack, issuer.apiKey);
    const body = { transactions: guesses(1) };

    const foreign = await match(otherIssuer.apiKey, user.userId, body);
    const unknown = await match(otherIssuer.apiKey, randomUUID(), body);

    expect([foreign.status, unknown.status]).toEqual([404, 404]);
    expect(foreign.json.error.code).toBe('not_found');
    expect(withoutRequestIdentity(foreign.text)).toEqual(withoutRequestIdentity(unknown.text));
    expect([...foreign.headers.keys()].sort()).toEqual([...unknown.headers.keys()].sort());
    const audit = await stack.deps.audit.forClient(otherIssuer.clientId, 10);
    expect(
      audit.filter((record) => record.action === 'receipts.match').map((record) => record.outcome),
    ).toEqual(['failure', 'failure']);
    expect((await match(merchant.apiKey, user.userId, body)).status).toBe(403);
    // Neither spent the owner's allowance.
    expect((await match(issuer.apiKey, user.userId, { transactions: guesses(DAILY_LIMIT) })).status).toBe(
      200,
    );
  });

  it('spends the per-card allowance claims spend: spent by claims, match is 429, and spent by match, claim is 429', async () => {
    const claimsFirst = await onboardUser(stack, issuer.apiKey);
    expect(
      (await claim(issuer.apiKey, claimsFirst.userId, guesses(DAILY_LIMIT).map(withoutReference))).status,
    ).toBe(200);
    const refusedMatch = await match(issuer.apiKey, claimsFirst.userId, { transactions: guesses(1) });
    expect([refusedMatch.status, refusedMatch.json.error.code]).toEqual([429, 'CLAIM_LIMIT_EXCEEDED']);
    expect(Number(refusedMatch.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const matchFirst = await onboardUser(stack, issuer.apiKey);
    expect(
      (await match(issuer.apiKey, matchFirst.userId, { transactions: guesses(DAILY_LIMIT) })).status,
    ).toBe(200);
    const refusedClaim = await claim(issuer.apiKey, matchFirst.userId, guesses(1).map(withoutReference));
    expect([refusedClaim.status, refusedClaim.json.error.code]).toEqual([429, 'CLAIM_LIMIT_EXCEEDED']);
    // The allowance is the card's with this client: another card of the same issuer is not touched.
    expect(
      (
        await match(issuer.apiKey, (await onboardUser(stack, issuer.apiKey)).userId, {
          transactions: guesses(1),
        })
      ).status,
    ).toBe(200);
  });

  it('answers bad bodies with 400 naming the field, spending nothing', async () => {
    const user: OnboardedUser = await onboardUser(stack, issuer.apiKey);
    const [first] = guesses(1) as [Transaction];
    const cases: [unknown, string][] = [
      [{ transactions: [] }, 'transactions'],
      [{ transactions: guesses(101) }, 'transactions'],
      [{ transactions: [first, { ...first, amount: 2 }] }, 'transactions.1.reference'],
      [{ transactions: [{ ...first, reference: '' }] }, 'transactions.0.reference'],
      [{ transactions: [{ ...first, reference: 'x'.repeat(129) }] }, 'transactions.0.reference'],
      [{ transactions: [{ ...first, reference: 'line\nbreak' }] }, 'transactions.0.reference'],
      [{ transactions: [{ ...first, reference: 'café' }] }, 'transactions.0.reference'],
      [{ transactions: [withoutReference(first)] }, 'transactions.0.reference'],
      [{ transactions: [{ ...first, amount: 1.5 }] }, 'transactions.0.amount'],
      [{ transactions: [{ ...first, cardLast4: '42' }] }, 'transactions.0.cardLast4'],
      [{ transactions: [{ ...first, hashedPan: user.hashedPan }] }, 'transactions.0.hashedPan'],
      [
        { transactions: [{ ...first, transactionDate: '9999-12-31T00:00:00Z' }] },
        'transactions.0.transactionDate',
      ],
      [{ userId: user.userId, transactions: [first] }, 'userId'],
    ];
    for (const [body, field] of cases) {
      const reply = await match(issuer.apiKey, user.userId, body);
      expect({ field, status: reply.status, code: reply.json.error.code }).toEqual({
        field,
        status: 400,
        code: 'INVALID_REQUEST',
      });
      expect(reply.json.error.details?.fields?.map((problem) => problem.field)).toContain(field);
    }
    const badPath = await match(issuer.apiKey, 'not-a-user-id', { transactions: [first] });
    expect([badPath.status, badPath.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
    // A reference of 128 printable characters, spaces and punctuation included, is fine.
    const longest = `${'Ab 9-_/#:.'.repeat(12)}12345678`;
    const accepted = await match(issuer.apiKey, user.userId, {
      transactions: [{ ...first, reference: longest }, ...guesses(DAILY_LIMIT - 1)],
    });
    expect([accepted.status, accepted.json.data.matches[0]!.reference]).toEqual([200, longest]);
  });
});
