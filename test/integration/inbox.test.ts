import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import { flattenedReceipt, gatewayFields, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { editedCursors, expectOpaque } from '../support/cursors.js';
import { startTestStack, type TestStack } from '../support/stack.js';

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; message: string; details?: { fields?: { field: string; message: string }[] } };
}
interface Summary {
  receiptId: string;
  merchantId: string;
  transactionId: string;
  createdAt: string;
  keyId: string;
  paymentGateway: string | null;
  paymentId: string | null;
}
interface Page {
  receipts: Summary[];
  nextCursor: string | null;
}

describe('GET /users/{userId}/receipts: the inbox', () => {
  let stack: TestStack;
  let merchant: { apiKey: string; clientId: string };
  let issuer: { apiKey: string; clientId: string };
  let otherIssuer: { apiKey: string; clientId: string };
  let user: OnboardedUser;

  beforeAll(async () => {
    stack = await startTestStack();
    merchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    otherIssuer = await stack.apiKey(['issuer']);
    user = await onboardUser(stack, issuer.apiKey);
  });

  afterAll(async () => {
    await stack?.close();
  });

  /** A receipt for the card, a second after the last: every receipt has its own createdAt. */
  const encrypt = async (hashedPan: string, receipt = sampleReceipt()) => {
    stack.clock.advance(1_000);
    const reply = await stack.request<Data<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body: {
        receipt,
        recipientIdentifier: { type: 'email', value: 'x@example.com' },
        recipientHashedPan: hashedPan,
      },
    });
    expect(reply.status).toBe(200);
    return { receipt, envelope: reply.json.data };
  };

  const pay = async (gateway: 'gateway_a' | 'gateway_b', hashedPan: string) => {
    stack.clock.advance(1_000);
    const body = flattenedReceipt({ recipientHashedPan: hashedPan });
    const reply = await stack.request<Data<{ paymentId: string; receiptMetadata: { receiptId: string } }>>(
      'POST',
      `/api/v1/payments/${gateway}/create`,
      {
        apiKey: merchant.apiKey,
        body: { ...body, ...gatewayFields(gateway, body) },
      },
    );
    expect(reply.status).toBe(200);
    return { body, ...reply.json.data };
  };

  const inbox = (userId: string, query = '', apiKey = issuer.apiKey) =>
    stack.request<Data<Page> & ErrorBody>('GET', `/api/v1/users/${userId}/receipts${query}`, { apiKey });

  it('lists a user’s receipts newest first, ids only, with the payment of each that has one', async () => {
    const nested = await encrypt(user.hashedPan);
    const byCard = await pay('gateway_a', user.hashedPan);
    const bySquare = await pay('gateway_b', user.hashedPan);
    const reply = await inbox(user.userId);
    expect(reply.status).toBe(200);
    expect(reply.json.data).toEqual({
      receipts: [
        {
          receiptId: bySquare.body.receiptId,
          merchantId: bySquare.body.merchantId,
          transactionId: bySquare.body.transactionId,
          createdAt: expect.any(String),
          keyId: user.keyId,
          paymentGateway: 'gateway_b',
          paymentId: bySquare.paymentId,
          // gateway_b completes at creation; gateway_a's intent waits for the till to confirm it.
          paymentStatus: 'succeeded',
          relatedReceiptId: null,
        },
        {
          receiptId: byCard.body.receiptId,
          merchantId: byCard.body.merchantId,
          transactionId: byCard.body.transactionId,
          createdAt: expect.any(String),
          keyId: user.keyId,
          paymentGateway: 'gateway_a',
          paymentId: byCard.paymentId,
          paymentStatus: 'pending',
          relatedReceiptId: null,
        },
        {
          receiptId: nested.receipt.receiptId,
          merchantId: nested.receipt.merchant.merchantId,
          transactionId: nested.receipt.transaction.transactionId,
          createdAt: nested.envelope.createdAt,
          keyId: user.keyId,
          paymentGateway: null,
          paymentId: null,
          paymentStatus: null,
          relatedReceiptId: null,
        },
      ],
      nextCursor: null,
    });
    // Identifiers only: nothing of the receipt's content or the card.
    expect(reply.text).not.toContain('Corner Coffee');
    expect(reply.text).not.toContain(user.hashedPan);
    expect(reply.text).not.toContain(nested.envelope.ciphertext);
  });

  it('pages through every receipt exactly once while new receipts arrive between pages', async () => {
    const pagedUser = await onboardUser(stack, issuer.apiKey, newHashedPan());
    const existing: string[] = [];
    for (let index = 0; index < 7; index += 1)
      existing.push((await encrypt(pagedUser.hashedPan)).receipt.receiptId);
    existing.push((await pay('gateway_a', pagedUser.hashedPan)).body.receiptId);

    const seen: Summary[] = [];
    const arrived: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await inbox(pagedUser.userId, query);
      expect(page.status).toBe(200);
      expect(page.json.data.receipts.length).toBeLessThanOrEqual(3);
      seen.push(...page.json.data.receipts);
      cursor = page.json.data.nextCursor;
      pages += 1;
      // A new receipt between every two pages: it sorts before the cursor, so this paging never meets it.
      arrived.push((await encrypt(pagedUser.hashedPan)).receipt.receiptId);
    } while (cursor !== null && pages < 10);

    const ids = seen.map((summary) => summary.receiptId);
    expect(ids).toEqual([...existing].reverse());
    expect(new Set(ids).size).toBe(ids.length);
    const times = seen.map((summary) => summary.createdAt);
    expect(times).toEqual([...times].sort().reverse());

    // A fresh listing starts with what arrived, newest first.
    const fresh = await inbox(pagedUser.userId, '?limit=100');
    expect(fresh.json.data.receipts.map((summary) => summary.receiptId)).toEqual(
      [...existing, ...arrived].reverse(),
    );
  });

  it('takes a limit from 1 to 100, 25 by default', async () => {
    const many = await onboardUser(stack, issuer.apiKey, newHashedPan());
    for (let index = 0; index < 27; index += 1) await encrypt(many.hashedPan);
    const byDefault = await inbox(many.userId);
    expect(byDefault.json.data.receipts).toHaveLength(25);
    expect(byDefault.json.data.nextCursor).not.toBeNull();
    expect((await inbox(many.userId, '?limit=1')).json.data.receipts).toHaveLength(1);
    expect((await inbox(many.userId, '?limit=100')).json.data).toMatchObject({ nextCursor: null });
    expect((await inbox(many.userId, '?limit=100')).json.data.receipts).toHaveLength(27);
    for (const limit of ['0', '101', '-1', '2.5', 'ten', '']) {
      const refused = await inbox(many.userId, `?limit=${limit}`);
      expect(refused.status).toBe(400);
      expect(refused.json.error.details?.fields?.[0]?.field).toBe('limit');
    }
  });

  it('hands out a cursor that shows nothing: no user, client, receipt or time in it', async () => {
    const opaque = await onboardUser(stack, issuer.apiKey, newHashedPan());
    const sent = [await encrypt(opaque.hashedPan), await encrypt(opaque.hashedPan)];
    const page = await inbox(opaque.userId, '?limit=1');
    const cursor = page.json.data.nextCursor!;
    const [summary] = page.json.data.receipts;
    expectOpaque(cursor, [
      opaque.userId,
      issuer.clientId,
      merchant.clientId,
      ...sent.map(({ receipt }) => receipt.receiptId),
      summary!.createdAt,
      'recipientUserId',
      'merchantClientId',
    ]);
    expect((await inbox(opaque.userId, `?cursor=${encodeURIComponent(cursor)}`)).status).toBe(200);
  });

  it('refuses, with one code and one message, a cursor edited, made for another user or client, or not a cursor', async () => {
    const first = await onboardUser(stack, issuer.apiKey, newHashedPan());
    const second = await onboardUser(stack, issuer.apiKey, newHashedPan());
    const othersUser = await onboardUser(stack, otherIssuer.apiKey, newHashedPan());
    for (let index = 0; index < 2; index += 1) {
      await encrypt(first.hashedPan);
      await encrypt(second.hashedPan);
      await encrypt(othersUser.hashedPan);
    }
    const cursorOfFirst = (await inbox(first.userId, '?limit=1')).json.data.nextCursor!;
    expect(cursorOfFirst).toEqual(expect.any(String));
    // Its own user reads on with it.
    expect((await inbox(first.userId, `?limit=1&cursor=${cursorOfFirst}`)).status).toBe(200);
    const othersCursor = (await inbox(othersUser.userId, '?limit=1', otherIssuer.apiKey)).json.data
      .nextCursor!;
    expect((await inbox(othersUser.userId, `?cursor=${othersCursor}`, otherIssuer.apiKey)).status).toBe(200);

    const attempts: [userId: string, cursor: string][] = [
      ...editedCursors(cursorOfFirst).map((cursor): [string, string] => [first.userId, cursor]),
      // Made for another user of the same issuer.
      [second.userId, cursorOfFirst],
      // Made for another client (another issuer's user's cursor, presented on this issuer's user).
      [first.userId, othersCursor],
      [first.userId, 'not-a-cursor'],
      [first.userId, ''],
      [first.userId, 'A'.repeat(3000)],
      // The readable cursor this endpoint used to hand out.
      [
        first.userId,
        Buffer.from(JSON.stringify({ u: first.userId, c: 'c', m: 'm', r: 'r' })).toString('base64url'),
      ],
    ];
    const bodies = new Set<string>();
    for (const [userId, cursor] of attempts) {
      const refused = await inbox(userId, `?cursor=${encodeURIComponent(cursor)}`);
      expect([refused.status, refused.json.error.code]).toEqual([400, 'INVALID_CURSOR']);
      expect(refused.json.error.details?.fields).toEqual([{ field: 'cursor', message: expect.any(String) }]);
      bodies.add(JSON.stringify(withoutRequestIdentity(refused.text)));
    }
    expect(bodies.size).toBe(1);
  });

  it("answers another issuer's user exactly as an unknown user, and refuses merchants", async () => {
    await encrypt(user.hashedPan);
    const other = await inbox(user.userId, '', otherIssuer.apiKey);
    const unknown = await inbox(randomUUID(), '', otherIssuer.apiKey);
    expect([other.status, unknown.status]).toEqual([404, 404]);
    expect(withoutRequestIdentity(other.text)).toEqual(withoutRequestIdentity(unknown.text));
    expect(other.text).not.toContain(user.keyId);
    // Another issuer's cursor does not help either: the user check comes with it.
    const cursor = (await inbox(user.userId, '?limit=1')).json.data.nextCursor!;
    expect((await inbox(user.userId, `?cursor=${cursor}`, otherIssuer.apiKey)).status).toBe(404);
    expect((await inbox(user.userId, '', merchant.apiKey)).status).toBe(403);
  });

  it('shows an escrowed receipt once a claim wraps it for the user', async () => {
    const hashedPan = newHashedPan();
    const receipt = sampleReceipt();
    const escrowed = await encrypt(hashedPan, receipt);
    expect(escrowed.envelope.isEscrowed).toBe(true);
    const later = await onboardUser(stack, issuer.apiKey, hashedPan);
    expect((await inbox(later.userId)).json.data.receipts).toEqual([]);

    const claimed = await stack.request<Data<{ released: number }>>('POST', '/api/v1/receipts/claim', {
      apiKey: issuer.apiKey,
      body: {
        userId: later.userId,
        transactions: [
          {
            amount: receipt.summary.total,
            currency: receipt.summary.currency,
            transactionDate: receipt.transaction.datetime,
          },
        ],
      },
    });
    expect(claimed.status).toBe(200);
    expect(claimed.json.data.released).toBe(1);
    const listed = await inbox(later.userId);
    expect(listed.json.data.receipts).toEqual([
      expect.objectContaining({ receiptId: receipt.receiptId, keyId: later.keyId, paymentId: null }),
    ]);
  });
});
