import { randomBytes, randomUUID } from 'node:crypto';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { createDynamoClients } from '../../lib/db/client.js';
import { ensureTables } from '../../lib/db/create-tables.js';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import type { GatewayKind } from '../../lib/gateways/port.js';
import { prefixedTableNames } from '../../lib/kernel/tables.js';
import { flattenedReceipt, sampleReceipt, type FlattenedFixture } from '../support/fixtures.js';
import { grantToken, onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { startTestStack, type HttpReply, type TestStack } from '../support/stack.js';

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}
interface Mapping {
  mappingId: string;
  transactionId: string;
  receiptId: string;
  paymentGateway: string;
}
interface PaymentResult {
  paymentId: string;
  receiptMetadata: { receiptId: string; transactionId: string; merchantId: string; isEscrowed: boolean };
}
interface Client {
  apiKey: string;
  clientId: string;
}

const codeOf = (reply: HttpReply<unknown>): [number, string | undefined] => [
  reply.status,
  (reply.json as Partial<ErrorBody>).error?.code,
];

describe('merchant namespaces: receipt and transaction ids are per merchant client, merchantIds have one owner', () => {
  let stack: TestStack;
  let merchantA: Client;
  let merchantB: Client;
  let issuer: Client;
  let otherIssuer: Client;
  let user: OnboardedUser;

  beforeAll(async () => {
    stack = await startTestStack();
    [merchantA, merchantB, issuer, otherIssuer] = await Promise.all([
      stack.apiKey(['merchant']),
      stack.apiKey(['merchant']),
      stack.apiKey(['issuer']),
      stack.apiKey(['issuer']),
    ]);
    user = await onboardUser(stack, issuer.apiKey);
  });

  beforeEach(() => stack.sandbox!.reset());

  afterAll(async () => {
    await stack?.close();
  });

  const encrypt = (merchant: Client, body: Record<string, unknown>) =>
    stack.request<Data<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body,
    });
  const storeMapping = (merchant: Client, envelope: unknown) =>
    stack.request<Data<Mapping>>('POST', '/api/v1/transactions', {
      apiKey: merchant.apiKey,
      body: { envelope, paymentGateway: 'other' },
    });
  const readMapping = (client: Client, transactionId: string) =>
    stack.request<Data<Mapping>>('GET', `/api/v1/transactions/${transactionId}`, { apiKey: client.apiKey });
  const pay = (merchant: Client, kind: GatewayKind, receipt: FlattenedFixture) =>
    stack.request<Data<PaymentResult>>('POST', `/api/v1/payments/${kind}/create`, {
      apiKey: merchant.apiKey,
      body:
        kind === 'gateway_a'
          ? { ...receipt, amount: receipt.totalAmount }
          : { ...receipt, cardNonce: 'cnon:card-nonce-ok' },
    });
  const decryptPayment = (paymentId: string, gateway: GatewayKind, accessTokenId: string) =>
    stack.request<Data<{ merchant: { merchantId: string; name: string } }>>(
      'POST',
      '/api/v1/payments/decrypt',
      {
        apiKey: issuer.apiKey,
        body: { paymentId, gateway, accessTokenId, privateKey: user.privateKey },
      },
    );
  const decryptEnvelope = (envelope: ReceiptEnvelope, accessTokenId: string) =>
    stack.request<Data<{ merchant: { merchantId: string; name: string } }>>(
      'POST',
      '/api/v1/receipts/decrypt',
      {
        apiKey: issuer.apiKey,
        body: { envelope, accessTokenId, privateKey: user.privateKey },
      },
    );
  const forUser = (overrides: Record<string, unknown> = {}) =>
    flattenedReceipt({ recipientHashedPan: user.hashedPan, ...overrides });

  it("lets B encrypt and map under A's receiptId and transactionId without touching, blocking or seeing A's", async () => {
    const ids = { receiptId: randomUUID(), transactionId: randomUUID() };
    const aBody = forUser({ ...ids, merchantName: 'A Coffee' });
    const a = await encrypt(merchantA, aBody);
    expect(a.status).toBe(200);
    // B takes the same ids first for the mapping: it must not stand in A's way.
    const b = await encrypt(merchantB, forUser({ ...ids, merchantName: 'B Impostor' }));
    expect(b.status).toBe(200);
    expect(b.json.data.ciphertext).not.toBe(a.json.data.ciphertext);
    const bMapping = await storeMapping(merchantB, b.json.data);
    expect(bMapping.status).toBe(200);
    const aMapping = await storeMapping(merchantA, a.json.data);
    expect(aMapping.status).toBe(200);
    expect(aMapping.json.data.mappingId).not.toBe(bMapping.json.data.mappingId);

    // Each merchant reads its own mapping of the shared transactionId, never the other's.
    expect((await readMapping(merchantA, ids.transactionId)).json.data).toEqual(aMapping.json.data);
    expect((await readMapping(merchantB, ids.transactionId)).json.data).toEqual(bMapping.json.data);

    // A's envelope still opens to A's receipt, B's to B's.
    const token = await grantToken(stack, issuer.apiKey, user);
    const openedA = await decryptEnvelope(a.json.data, token);
    expect(openedA.status).toBe(200);
    expect(openedA.json.data.merchant.name).toBe('A Coffee');
    expect((await decryptEnvelope(b.json.data, token)).json.data.merchant.name).toBe('B Impostor');

    // A's retry still gets its first envelope, and a different receipt under its own id is still
    // A's conflict: B's receipt under the same id changed nothing in A's namespace.
    const repeat = await encrypt(merchantA, aBody);
    expect(repeat.status).toBe(200);
    expect(repeat.json.data.ciphertext).toBe(a.json.data.ciphertext);
    expect(codeOf(await encrypt(merchantA, forUser(ids)))).toEqual([409, 'CONFLICT']);
    const stored = await stack.deps.repos.receipts.get({
      merchantClientId: merchantA.clientId,
      receiptId: ids.receiptId,
    });
    expect(stored?.envelope.ciphertext).toBe(a.json.data.ciphertext);
  });

  it('answers B the same whether or not A has used a receiptId or transactionId: no oracle, no 409', async () => {
    const taken = forUser();
    expect((await encrypt(merchantA, taken)).status).toBe(200);
    expect((await storeMapping(merchantA, (await encrypt(merchantA, taken)).json.data)).status).toBe(200);

    // Encrypting under an id A holds and under a fresh one: the same answer.
    const onTaken = await encrypt(merchantB, forUser({ receiptId: taken.receiptId }));
    const onFresh = await encrypt(merchantB, forUser({ receiptId: randomUUID() }));
    expect([onTaken.status, onFresh.status]).toEqual([200, 200]);

    // Reading A's transactionId as B: exactly the 404 of an id nobody has used.
    const readTaken = await readMapping(merchantB, taken.transactionId);
    const readFresh = await readMapping(merchantB, randomUUID());
    expect(readTaken.status).toBe(404);
    expect(withoutRequestIdentity(readTaken.text)).toEqual(withoutRequestIdentity(readFresh.text));

    // A's envelope relabelled with B's own merchantId: the 404 of a receipt B never made.
    const hidden = await encrypt(merchantA, forUser());
    const bMerchantId = onFresh.json.data.merchantId;
    const relabelled = await storeMapping(merchantB, { ...hidden.json.data, merchantId: bMerchantId });
    const unknown = await storeMapping(merchantB, {
      ...hidden.json.data,
      merchantId: bMerchantId,
      receiptId: randomUUID(),
    });
    expect(codeOf(relabelled)).toEqual([404, 'not_found']);
    expect(withoutRequestIdentity(relabelled.text)).toEqual(withoutRequestIdentity(unknown.text));
  });

  it("refuses B every use of A's merchantId with 403 forbidden, and stores nothing for B", async () => {
    const first = forUser();
    const aEnvelope = await encrypt(merchantA, first);
    expect(aEnvelope.status).toBe(200);
    const claimed = { merchantId: first.merchantId, merchantName: first.merchantName };

    const refusedBody = forUser(claimed);
    const encrypted = await encrypt(merchantB, refusedBody);
    expect(codeOf(encrypted)).toEqual([403, 'forbidden']);
    expect((encrypted.json as unknown as ErrorBody).error.message).toMatch(/merchantId/);
    // The nested form names it inside the receipt; the same rule.
    const receipt = sampleReceipt();
    const nested = await encrypt(merchantB, {
      receipt: { ...receipt, merchant: { ...receipt.merchant, merchantId: first.merchantId } },
      recipientIdentifier: { type: 'email', value: 'someone@example.com' },
      recipientHashedPan: user.hashedPan,
    });
    expect(codeOf(nested)).toEqual([403, 'forbidden']);

    // Relabelling one of B's own envelopes with A's merchantId gets B nowhere either.
    const bOwn = await encrypt(merchantB, forUser());
    expect(bOwn.status).toBe(200);
    const relabelled = await storeMapping(merchantB, { ...bOwn.json.data, merchantId: first.merchantId });
    expect(codeOf(relabelled)).toEqual([403, 'forbidden']);
    expect(codeOf(await storeMapping(merchantB, aEnvelope.json.data))).toEqual([403, 'forbidden']);

    // A keeps using it.
    expect((await encrypt(merchantA, forUser(claimed))).status).toBe(200);
    const bKey = { merchantClientId: merchantB.clientId };
    for (const receiptId of [refusedBody.receiptId, receipt.receiptId]) {
      expect(await stack.deps.repos.receipts.get({ ...bKey, receiptId })).toBeNull();
    }
  });

  it.each(['gateway_a', 'gateway_b'] as const)(
    "refuses a %s payment naming A's merchantId before it reaches the gateway",
    async (kind) => {
      const first = forUser();
      expect((await encrypt(merchantA, first)).status).toBe(200);
      const requestsBefore = JSON.stringify(stack.sandbox!.stats.requests);
      const receipt = forUser({ merchantId: first.merchantId });
      const refused = await pay(merchantB, kind, receipt);
      expect(codeOf(refused)).toEqual([403, 'forbidden']);
      expect(stack.sandbox!.stats.paymentsCreated).toMatchObject({ gateway_a: 0, gateway_b: 0 });
      expect(JSON.stringify(stack.sandbox!.stats.requests)).toBe(requestsBefore);
      const bKey = { merchantClientId: merchantB.clientId };
      expect(await stack.deps.repos.receipts.get({ ...bKey, receiptId: receipt.receiptId })).toBeNull();
      expect(
        await stack.deps.repos.transactions.get({ ...bKey, transactionId: receipt.transactionId }),
      ).toBeNull();
      // A repeat is refused the same way: it is the merchantId, not a reservation, that stops it.
      expect(codeOf(await pay(merchantB, kind, receipt))).toEqual([403, 'forbidden']);
      expect(stack.sandbox!.stats.paymentsCreated).toMatchObject({ gateway_a: 0, gateway_b: 0 });
    },
  );

  it.each(['gateway_a', 'gateway_b'] as const)(
    "lets A charge on %s after B mapped and paid under A's receiptId and transactionId first",
    async (kind) => {
      const ids = { receiptId: randomUUID(), transactionId: randomUUID() };
      // B gets there first with the same ids, under its own merchantId: a mapping and a payment.
      const bReceipt = forUser({ ...ids, merchantName: 'B Impostor' });
      const bPayment = await pay(merchantB, kind, bReceipt);
      expect(bPayment.status).toBe(200);
      const aReceipt = forUser({ ...ids, merchantName: 'A Coffee' });
      const aPayment = await pay(merchantA, kind, aReceipt);
      expect(aPayment.status).toBe(200);
      expect(aPayment.json.data.paymentId).not.toBe(bPayment.json.data.paymentId);
      expect(stack.sandbox!.stats.paymentsCreated[kind]).toBe(2);

      // Each payment's pointers lead to its own merchant's receipt.
      const token = await grantToken(stack, issuer.apiKey, user);
      const openedA = await decryptPayment(aPayment.json.data.paymentId, kind, token);
      expect(openedA.status).toBe(200);
      expect(openedA.json.data.merchant).toMatchObject({ merchantId: aReceipt.merchantId, name: 'A Coffee' });
      const openedB = await decryptPayment(bPayment.json.data.paymentId, kind, token);
      expect(openedB.json.data.merchant).toMatchObject({
        merchantId: bReceipt.merchantId,
        name: 'B Impostor',
      });

      // One payment per (merchant client, receiptId) still holds within A.
      const again = await pay(merchantA, kind === 'gateway_a' ? 'gateway_b' : 'gateway_a', aReceipt);
      expect(codeOf(again)).toEqual([409, 'CONFLICT']);
      expect(stack.sandbox!.stats.paymentsCreated[kind]).toBe(2);
    },
  );

  it("refuses a payment whose pointers name B's merchantId with A's ids", async () => {
    const ids = { receiptId: randomUUID(), transactionId: randomUUID() };
    const aReceipt = forUser(ids);
    const bReceipt = forUser(ids);
    expect((await pay(merchantA, 'gateway_a', aReceipt)).status).toBe(200);
    const bPayment = await pay(merchantB, 'gateway_a', bReceipt);
    expect(bPayment.status).toBe(200);
    // Payments made outside the service, pointing at B's merchantId, or at nobody's, with the shared ids.
    const gateway = await stack.deps.gateways.get('gateway_a');
    const paymentPointingAt = (merchantId: string) =>
      gateway.createPayment({
        idempotencyKey: randomUUID(),
        amount: 100,
        currency: 'USD',
        pointers: { ...ids, merchantId },
        lines: [{ name: 'x', quantity: 1, unitPrice: 100, totalPrice: 100 }],
        taxAmount: 0,
      });
    const forged = await paymentPointingAt(bReceipt.merchantId);
    const unclaimed = await paymentPointingAt(randomUUID());
    const token = await grantToken(stack, issuer.apiKey, user);
    expect(codeOf(await decryptPayment(forged.paymentId, 'gateway_a', token))).toEqual([404, 'not_found']);
    expect(codeOf(await decryptPayment(unclaimed.paymentId, 'gateway_a', token))).toEqual([404, 'not_found']);
    expect((await decryptPayment(bPayment.json.data.paymentId, 'gateway_a', token)).status).toBe(200);
  });

  it('gives the first of two racing clients a new merchantId, and the other 403', async () => {
    const merchantId = randomUUID();
    const replies = await Promise.all(
      [merchantA, merchantB, merchantA, merchantB].map((merchant) =>
        encrypt(merchant, forUser({ merchantId })),
      ),
    );
    const winners = new Set(
      replies.flatMap((reply, index) => (reply.status === 200 ? [index % 2 === 0 ? 'A' : 'B'] : [])),
    );
    expect(winners.size).toBe(1);
    const loser = winners.has('A') ? 'B' : 'A';
    replies.forEach((reply, index) => {
      if ((index % 2 === 0 ? 'A' : 'B') === loser) expect(codeOf(reply)).toEqual([403, 'forbidden']);
      else expect(reply.status).toBe(200);
    });
  });

  it('lets an issuer read the mapping whose receipt is for its user, whichever merchant client made it', async () => {
    const transactionId = randomUUID();
    // A's receipt is for the issuer's user; B's, under the same transactionId, is escrowed.
    const aReceipt = forUser({ transactionId });
    const a = await encrypt(merchantA, aReceipt);
    const b = await encrypt(merchantB, flattenedReceipt({ transactionId }));
    expect([a.status, b.status, b.json.data.isEscrowed]).toEqual([200, 200, true]);
    const aMapping = await storeMapping(merchantA, a.json.data);
    const bMapping = await storeMapping(merchantB, b.json.data);
    expect([aMapping.status, bMapping.status]).toEqual([200, 200]);

    const read = await readMapping(issuer, transactionId);
    expect(read.status).toBe(200);
    expect(read.json.data).toEqual(aMapping.json.data);
    // An issuer without a user on either receipt: the 404 of an unknown transaction.
    const other = await readMapping(otherIssuer, transactionId);
    const unknown = await readMapping(otherIssuer, randomUUID());
    expect(other.status).toBe(404);
    expect(withoutRequestIdentity(other.text)).toEqual(withoutRequestIdentity(unknown.text));
  });

  it('refuses a data folder whose receipts are keyed by receiptId alone, naming the table and the way out', async () => {
    const { client } = createDynamoClients({
      region: 'us-east-1',
      endpoint: process.env.TEST_DYNAMODB_ENDPOINT,
    });
    const names = prefixedTableNames(`old${randomBytes(4).toString('hex')}-`);
    // The receipts table as the previous version created it.
    await client.send(
      new CreateTableCommand({
        TableName: names.receipts,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'receiptId', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'receiptId', KeyType: 'HASH' }],
      }),
    );
    await expect(ensureTables(client, names)).rejects.toThrow(
      new RegExp(`Table ${names.receipts} is keyed \\(receiptId:HASH\\).*remove \\.local-data`),
    );
    client.destroy();
  });
});
