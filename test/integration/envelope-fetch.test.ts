import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import { flattenedReceipt, gatewayFields, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { startTestStack, type TestStack } from '../support/stack.js';

interface Data<T> {
  success: true;
  data: T;
}
interface Fetched {
  envelope: ReceiptEnvelope;
  mapping: { receiptId: string; transactionId: string; paymentGateway: string } | null;
}

describe('envelope fetch: GET /receipts/{receiptId} and GET /payments/{gateway}/{paymentId}/receipt', () => {
  let stack: TestStack;
  let merchant: { apiKey: string; clientId: string };
  let otherMerchant: { apiKey: string; clientId: string };
  let issuer: { apiKey: string; clientId: string };
  let otherIssuer: { apiKey: string; clientId: string };
  let user: OnboardedUser;
  let otherUser: OnboardedUser;

  beforeAll(async () => {
    stack = await startTestStack();
    merchant = await stack.apiKey(['merchant']);
    otherMerchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    otherIssuer = await stack.apiKey(['issuer']);
    user = await onboardUser(stack, issuer.apiKey);
    otherUser = await onboardUser(stack, otherIssuer.apiKey);
  });

  afterAll(async () => {
    await stack?.close();
  });

  const encrypt = async (apiKey: string, hashedPan: string, receipt = sampleReceipt()) => {
    stack.clock.advance(1_000);
    const reply = await stack.request<Data<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
      apiKey,
      body: {
        receipt,
        recipientIdentifier: { type: 'email', value: 'x@example.com' },
        recipientHashedPan: hashedPan,
      },
    });
    expect(reply.status).toBe(200);
    return reply.json.data;
  };

  const fetchReceipt = (receiptId: string, apiKey: string) =>
    stack.request<Data<Fetched>>('GET', `/api/v1/receipts/${receiptId}`, { apiKey });

  it('answers the stored envelope to the merchant that made it and to the issuer of its recipient', async () => {
    const envelope = await encrypt(merchant.apiKey, user.hashedPan);
    for (const apiKey of [merchant.apiKey, issuer.apiKey]) {
      const reply = await fetchReceipt(envelope.receiptId, apiKey);
      expect(reply.status).toBe(200);
      // receipts/encrypt made it: no payment, so no paymentStatus.
      expect(reply.json.data).toEqual({
        envelope,
        mapping: null,
        paymentStatus: null,
        relatedReceiptId: null,
      });
    }
    // The issuer's app opens it on the device: the envelope is the one that decrypts.
    const token = await grantToken(stack, issuer.apiKey, user);
    const opened = await stack.request<Data<{ receiptId: string }>>('POST', '/api/v1/receipts/decrypt', {
      apiKey: issuer.apiKey,
      body: {
        envelope: (await fetchReceipt(envelope.receiptId, issuer.apiKey)).json.data.envelope,
        accessTokenId: token,
        privateKey: user.privateKey,
      },
    });
    expect(opened.status).toBe(200);
    expect(opened.json.data.receiptId).toBe(envelope.receiptId);
  });

  it('answers another merchant, another issuer and an unknown id with one and the same 404', async () => {
    const envelope = await encrypt(merchant.apiKey, user.hashedPan);
    const replies = [
      await fetchReceipt(envelope.receiptId, otherMerchant.apiKey),
      await fetchReceipt(envelope.receiptId, otherIssuer.apiKey),
      await fetchReceipt(randomUUID(), merchant.apiKey),
      await fetchReceipt(randomUUID(), issuer.apiKey),
    ];
    expect(replies.map((reply) => reply.status)).toEqual([404, 404, 404, 404]);
    const bodies = replies.map((reply) => withoutRequestIdentity(reply.text));
    for (const body of bodies) expect(body).toEqual(bodies[0]);
    expect(replies.some((reply) => reply.text.includes(envelope.ciphertext))).toBe(false);
    expect(
      (await stack.request('GET', '/api/v1/receipts/not-a-uuid', { apiKey: issuer.apiKey })).status,
    ).toBe(400);
  });

  it('gives an escrowed receipt to its merchant only: no issuer has a user it is wrapped for', async () => {
    const envelope = await encrypt(merchant.apiKey, newHashedPan());
    expect(envelope.isEscrowed).toBe(true);
    expect((await fetchReceipt(envelope.receiptId, merchant.apiKey)).status).toBe(200);
    expect((await fetchReceipt(envelope.receiptId, issuer.apiKey)).status).toBe(404);
    expect((await fetchReceipt(envelope.receiptId, otherIssuer.apiKey)).status).toBe(404);
  });

  it('gives each issuer its own user’s receipt when two merchants use the same receiptId', async () => {
    const receiptId = randomUUID();
    const mine = await encrypt(merchant.apiKey, user.hashedPan, sampleReceipt({ receiptId }));
    const theirs = await encrypt(otherMerchant.apiKey, otherUser.hashedPan, sampleReceipt({ receiptId }));
    expect(mine.ciphertext).not.toBe(theirs.ciphertext);
    expect((await fetchReceipt(receiptId, issuer.apiKey)).json.data.envelope).toEqual(mine);
    expect((await fetchReceipt(receiptId, otherIssuer.apiKey)).json.data.envelope).toEqual(theirs);
    expect((await fetchReceipt(receiptId, merchant.apiKey)).json.data.envelope).toEqual(mine);
    expect((await fetchReceipt(receiptId, otherMerchant.apiKey)).json.data.envelope).toEqual(theirs);
  });

  it("never answers another merchant's envelope in place of the one the user was paid with", async () => {
    // Issue 20, LOW: the issuer got the newest receipt of the id, so a second merchant that knew the id
    // and the card stored its own receipt of that id for the same user and took the first one's place.
    const receiptId = randomUUID();
    const paid = await encrypt(merchant.apiKey, user.hashedPan, sampleReceipt({ receiptId }));
    stack.clock.advance(1_000);
    const substitute = await encrypt(otherMerchant.apiKey, user.hashedPan, sampleReceipt({ receiptId }));
    expect(substitute.keyId).toBe(paid.keyId);
    const byMerchantId = (merchantId: string) =>
      stack.request<Data<Fetched> & { error: { code: string; details: { fields: { field: string }[] } } }>(
        'GET',
        `/api/v1/receipts/${receiptId}?merchantId=${merchantId}`,
        { apiKey: issuer.apiKey },
      );
    // Named by the merchantId its inbox entry (or webhook event) gave: exactly that merchant's.
    expect((await byMerchantId(paid.merchantId)).json.data.envelope).toEqual(paid);
    expect((await byMerchantId(substitute.merchantId)).json.data.envelope).toEqual(substitute);
    expect((await byMerchantId(randomUUID())).status).toBe(404);
    // Unnamed, with two candidates: neither, but a 400 that says to name it.
    const unnamed = await stack.request<{
      error: { code: string; details: { fields: { field: string }[] } };
    }>('GET', `/api/v1/receipts/${receiptId}`, { apiKey: issuer.apiKey });
    expect([unnamed.status, unnamed.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
    expect(unnamed.json.error.details.fields[0]?.field).toBe('merchantId');
    const inbox = await stack.request<Data<{ receipts: { receiptId: string; merchantId: string }[] }>>(
      'GET',
      `/api/v1/users/${user.userId}/receipts?limit=100`,
      { apiKey: issuer.apiKey },
    );
    expect(
      inbox.json.data.receipts
        .filter((entry) => entry.receiptId === receiptId)
        .map((entry) => entry.merchantId)
        .sort(),
    ).toEqual([paid.merchantId, substitute.merchantId].sort());
    // A merchant's own namespace is unaffected; naming another merchantId finds nothing there.
    expect((await fetchReceipt(receiptId, merchant.apiKey)).json.data.envelope).toEqual(paid);
    const foreign = await stack.request(
      'GET',
      `/api/v1/receipts/${receiptId}?merchantId=${substitute.merchantId}`,
      {
        apiKey: merchant.apiKey,
      },
    );
    expect(foreign.status).toBe(404);
  });

  it.each([
    ['gateway_a', 'stripe'],
    ['gateway_b', 'square'],
  ] as const)(
    'finds the envelope of a %s payment, with its mapping, for the same callers only',
    async (gateway, alias) => {
      const body = flattenedReceipt({ recipientHashedPan: user.hashedPan });
      const created = await stack.request<Data<{ paymentId: string }>>(
        'POST',
        `/api/v1/payments/${gateway}/create`,
        {
          apiKey: merchant.apiKey,
          body: { ...body, ...gatewayFields(gateway, body) },
        },
      );
      expect(created.status).toBe(200);
      const { paymentId } = created.json.data;
      const byPayment = (apiKey: string, kind: string = gateway, id = paymentId) =>
        stack.request<Data<Fetched>>('GET', `/api/v1/payments/${kind}/${encodeURIComponent(id)}/receipt`, {
          apiKey,
        });

      const forMerchant = await byPayment(merchant.apiKey);
      expect(forMerchant.status).toBe(200);
      expect(forMerchant.json.data.envelope.receiptId).toBe(body.receiptId);
      expect(forMerchant.json.data.mapping).toMatchObject({
        receiptId: body.receiptId,
        transactionId: body.transactionId,
        paymentGateway: gateway,
      });
      const forIssuer = await byPayment(issuer.apiKey, alias);
      expect(forIssuer.status).toBe(200);
      expect(forIssuer.json.data).toEqual(forMerchant.json.data);
      // The same envelope GET /receipts/{receiptId} answers.
      expect((await fetchReceipt(body.receiptId, issuer.apiKey)).json.data).toEqual(forMerchant.json.data);

      const refused = [
        await byPayment(otherMerchant.apiKey),
        await byPayment(otherIssuer.apiKey),
        await byPayment(merchant.apiKey, gateway, `${paymentId}x`),
        await byPayment(issuer.apiKey, gateway, 'pi_unknown'),
      ];
      expect(refused.map((reply) => reply.status)).toEqual([404, 404, 404, 404]);
      const bodies = refused.map((reply) => withoutRequestIdentity(reply.text));
      for (const refusal of bodies) expect(refusal).toEqual(bodies[0]);
      expect((await byPayment(issuer.apiKey, 'gateway_z')).status).toBe(400);
    },
  );
});
