import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type Stripe from 'stripe';
import { matchReceiptsRoute } from '../../functions/receipts/match-receipts/route.js';
import { createSquareClient, loadSquareSdk } from '../../lib/gateways/square-client.js';
import { newHashedPan } from '../support/fixtures.js';
import { grantToken, onboardUser, type OnboardedUser } from '../support/flow.js';
import { fetchReceipt, pay, sandboxStripe, type Kind, type Paid } from '../support/lifecycle.js';
import { logsWhile } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { dumpTables, evidenceOfReceipt } from '../support/tables.js';
import { receiptRefOf } from '../../lib/db/evidence.js';
import { requireAllTables } from '../../lib/kernel/config.js';

const MATCH_PATH = matchReceiptsRoute.path;

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; details?: { fields?: { field: string; message: string }[] } };
}
interface CardTransaction {
  gateway: Kind;
  network?: string;
  authorizationCode?: string;
  networkTransactionId?: string;
  last4?: string;
  statementDescriptor?: string;
  acquirerReferenceNumber?: string;
  providerIds: Record<string, string>;
}
type Transaction = Record<string, unknown>;

/**
 * Issue 38 over HTTP on both gateways' sandboxes: the receipt of a charged payment carries the
 * network's references the provider gave for that payment, its refund receipt its refund's; claims
 * and statement matches find a receipt by its authorization code or network transaction id alone,
 * where amount and time cannot tell two same-minute sales apart; a wrong code finds nothing; and no
 * code is stored or logged in clear.
 */
describe('card-network references (issue 38)', () => {
  let stack: TestStack;
  let merchant: string;
  let issuer: string;
  let otherIssuer: string;

  beforeAll(async () => {
    stack = await startTestStack({ logLevel: 'DEBUG' });
    const clients = await Promise.all([
      stack.apiKey(['merchant']),
      stack.apiKey(['issuer']),
      stack.apiKey(['issuer']),
    ]);
    [merchant, issuer, otherIssuer] = clients.map((client) => client.apiKey) as [string, string, string];
  });

  afterAll(async () => {
    await stack?.close();
  });

  /** A sale charged at create: gateway_a confirms with a payment method, gateway_b with its nonce. */
  const sale = (kind: Kind, hashedPan: string, merchantId: string): Promise<Paid> =>
    pay(stack, merchant, kind, hashedPan, {
      merchantId,
      ...(kind === 'gateway_a' ? { paymentMethodId: 'pm_card_visa' } : {}),
    });

  async function decrypt(
    receiptId: string,
    user: OnboardedUser,
  ): Promise<{ cardTransaction?: CardTransaction }> {
    const { envelope } = await fetchReceipt(stack, issuer, receiptId);
    const token = await grantToken(stack, issuer, user);
    const opened = await stack.request<Data<{ receipt?: unknown } & Record<string, unknown>>>(
      'POST',
      '/api/v1/receipts/decrypt',
      { apiKey: issuer, body: { envelope, accessTokenId: token, privateKey: user.privateKey } },
    );
    expect(opened.status).toBe(200);
    const data = opened.json.data;
    return (data.receipt ?? data) as { cardTransaction?: CardTransaction };
  }

  /** What the sandbox gave for the payment and its refunds, read with the provider's own SDK. */
  async function providerSide(kind: Kind, paymentId: string) {
    if (kind === 'gateway_a') {
      const stripe = await sandboxStripe(stack);
      const intent = await stripe.paymentIntents.retrieve(paymentId, { expand: ['latest_charge'] });
      const charge = intent.latest_charge as Stripe.Charge;
      const card = charge.payment_method_details!.card!;
      const refunds = await stripe.refunds.list({ payment_intent: paymentId });
      return {
        sale: {
          gateway: kind,
          network: card.network!,
          authorizationCode: card.authorization_code!,
          networkTransactionId: card.network_transaction_id!,
          last4: card.last4!,
          statementDescriptor: charge.calculated_statement_descriptor!,
          providerIds: { paymentIntentId: paymentId, chargeId: charge.id },
        } as CardTransaction,
        refunds: refunds.data.map((refund): CardTransaction => ({
          gateway: kind,
          acquirerReferenceNumber: refund.destination_details!.card!.reference!,
          providerIds: { paymentIntentId: paymentId, chargeId: charge.id, refundId: refund.id },
        })),
      };
    }
    const square = createSquareClient(await loadSquareSdk(), {
      accessToken: 'till-token',
      baseUrl: stack.sandbox!.url,
      environment: 'sandbox',
      maxRetries: 0,
      timeoutMs: 10_000,
    });
    const { payment } = await square.payments.get({ paymentId });
    const details = payment!.cardDetails!;
    const refunds = await Promise.all(
      (payment!.refundIds ?? []).map(async (refundId) => (await square.refunds.get({ refundId })).refund!),
    );
    return {
      sale: {
        gateway: kind,
        network: details.card!.cardBrand!.toLowerCase(),
        authorizationCode: details.authResultCode!,
        last4: details.card!.last4!,
        statementDescriptor: details.statementDescription!,
        providerIds: { paymentId },
      } as CardTransaction,
      refunds: refunds.map((refund): CardTransaction => ({
        gateway: kind,
        network: refund.destinationDetails!.cardDetails!.card!.cardBrand!.toLowerCase(),
        authorizationCode: refund.destinationDetails!.cardDetails!.authResultCode!,
        last4: refund.destinationDetails!.cardDetails!.card!.last4!,
        providerIds: { paymentId, refundId: refund.id },
      })),
    };
  }

  const match = (apiKey: string, userId: string, transactions: Transaction[]) =>
    stack.request<Data<{ matches: { reference: string; receiptIds: string[] }[] }> & ErrorBody>(
      'POST',
      MATCH_PATH.replace('{userId}', userId),
      { apiKey, body: { transactions } },
    );
  const claim = (userId: string, transactions: Transaction[]) =>
    stack.request<Data<{ results: { receiptIds: string[] }[]; released: number }> & ErrorBody>(
      'POST',
      '/api/v1/receipts/claim',
      { apiKey: issuer, body: { userId, transactions } },
    );

  describe.each(['gateway_a', 'gateway_b'] as const)('%s', (kind) => {
    it("seals the payment's and the refund's references, finds each of two same-minute sales by its code alone, and keeps every code out of the tables and the DEBUG log", async () => {
      const { value: codes, text: logs } = await logsWhile(async () => {
        const seen: string[] = [];
        const remember = (references: CardTransaction) => {
          for (const value of [references.authorizationCode, references.networkTransactionId])
            if (value) seen.push(value);
        };

        // The user's own receipts: two same-amount sales in the same minute at one merchant, one card.
        const user = await onboardUser(stack, issuer);
        const merchantId = randomUUID();
        const [first, second] = [
          await sale(kind, user.hashedPan, merchantId),
          await sale(kind, user.hashedPan, merchantId),
        ];
        const provider = [
          await providerSide(kind, first.paymentId),
          await providerSide(kind, second.paymentId),
        ];
        expect(provider[0]!.sale.authorizationCode).not.toBe(provider[1]!.sale.authorizationCode);
        expect((await decrypt(first.body.receiptId, user)).cardTransaction).toEqual(provider[0]!.sale);
        expect((await decrypt(second.body.receiptId, user)).cardTransaction).toEqual(provider[1]!.sale);
        provider.forEach(({ sale: references }) => remember(references));

        // The refund receipt carries the refund's references, as the provider gave them.
        const refunded = await stack.request<Data<{ receiptId: string | null }>>(
          'POST',
          `/api/v1/payments/${kind}/${first.paymentId}/refunds`,
          { apiKey: merchant, body: { refundId: randomUUID(), amount: 300 } },
        );
        expect(refunded.status).toBe(201);
        const refundReceiptId = refunded.json.data.receiptId!;
        const [refundReferences] = (await providerSide(kind, first.paymentId)).refunds;
        expect((await decrypt(refundReceiptId, user)).cardTransaction).toEqual(refundReferences);
        remember(refundReferences!);

        // A statement match: amount and time find both; each code alone finds exactly its own.
        const [a, b] = [first.body.receiptId, second.body.receiptId];
        const codeOf = (index: number) => ({
          authorizationCode: provider[index]!.sale.authorizationCode,
          amount: 1548,
          currency: 'USD',
        });
        const statement: Transaction[] = [
          { reference: 'by-time', amount: 1548, currency: 'USD', transactionDate: '2026-11-21T09:15:30Z' },
          { reference: 'code-a', ...codeOf(0) },
          { reference: 'code-b', ...codeOf(1) },
          { reference: 'code-b-with-time', ...codeOf(1), transactionDate: '2026-11-21T09:15:00Z' },
          { reference: 'wrong-code', authorizationCode: 'ZZ9ZZ9', amount: 1548, currency: 'USD' },
          { reference: 'code-a-wrong-amount', ...codeOf(0), amount: 1549 },
          { reference: 'wrong-ntid', networkTransactionId: '999999999999999' },
        ];
        if (kind === 'gateway_a')
          statement.push(
            { reference: 'ntid-a', networkTransactionId: provider[0]!.sale.networkTransactionId },
            { reference: 'ntid-b', networkTransactionId: provider[1]!.sale.networkTransactionId },
          );
        const matched = await match(issuer, user.userId, statement);
        expect(matched.status).toBe(200);
        const found = Object.fromEntries(
          matched.json.data.matches.map(({ reference, receiptIds }) => [reference, receiptIds.toSorted()]),
        );
        expect(found).toEqual({
          'by-time': [a, b].toSorted(),
          'code-a': [a],
          'code-b': [b],
          'code-b-with-time': [b],
          'wrong-code': [],
          'code-a-wrong-amount': [],
          'wrong-ntid': [],
          ...(kind === 'gateway_a' ? { 'ntid-a': [a], 'ntid-b': [b] } : {}),
        });
        // Another issuer naming this user with a right code: the same 404 as ever.
        expect((await match(otherIssuer, user.userId, [{ reference: 'x', ...codeOf(0) }])).status).toBe(404);

        // A claim: two escrowed same-minute sales of a card registered afterwards.
        const hashedPan = newHashedPan();
        const escrowMerchant = randomUUID();
        const escrowed = [
          await sale(kind, hashedPan, escrowMerchant),
          await sale(kind, hashedPan, escrowMerchant),
        ];
        const escrowedReferences = [
          (await providerSide(kind, escrowed[0]!.paymentId)).sale,
          (await providerSide(kind, escrowed[1]!.paymentId)).sale,
        ];
        escrowedReferences.forEach(remember);
        const late = await onboardUser(stack, issuer, hashedPan);
        const wrong = await claim(late.userId, [
          { authorizationCode: 'ZZ9ZZ9', amount: 1548, currency: 'USD' },
          { networkTransactionId: '999999999999999' },
        ]);
        expect(wrong.status).toBe(200);
        expect([
          wrong.json.data.released,
          wrong.json.data.results.map((result) => result.receiptIds),
        ]).toEqual([0, [[], []]]);
        const byCode = await claim(late.userId, [
          { authorizationCode: escrowedReferences[0]!.authorizationCode, amount: 1548, currency: 'USD' },
        ]);
        expect(byCode.json.data.results).toEqual([
          { transactionIndex: 0, receiptIds: [escrowed[0]!.body.receiptId] },
        ]);
        const secondClaim =
          kind === 'gateway_a'
            ? { networkTransactionId: escrowedReferences[1]!.networkTransactionId }
            : { authorizationCode: escrowedReferences[1]!.authorizationCode, amount: 1548, currency: 'USD' };
        const bySecond = await claim(late.userId, [secondClaim]);
        expect(bySecond.json.data.results).toEqual([
          { transactionIndex: 0, receiptIds: [escrowed[1]!.body.receiptId] },
        ]);
        expect((await decrypt(escrowed[1]!.body.receiptId, late)).cardTransaction).toEqual(
          escrowedReferences[1],
        );
        // Each sale names every entry it has, its references' included (a release and an erasure find
        // them by these ids: issue 40), and a released one's entries all took its longer expiry.
        for (const receiptId of [a, b, escrowed[0]!.body.receiptId, escrowed[1]!.body.receiptId]) {
          const [stored] = await stack.deps.repos.receipts.allWithReceiptId(receiptId);
          const entries = await evidenceOfReceipt(
            stack.deps.dynamo.doc,
            requireAllTables(stack.config).evidence,
            receiptRefOf(stored!),
          );
          expect(entries.length).toBeGreaterThan(1);
          expect(stored!.evidenceIds).toEqual(new Set(entries.map((entry) => entry.evidenceId)));
          expect(new Set(entries.map((entry) => entry.ttl))).toEqual(new Set([stored!.ttl]));
        }

        // A code needs the amount and currency it was given for; the 400 names what is missing.
        const partial = await match(issuer, user.userId, [{ reference: 'x', authorizationCode: 'A1B2C3' }]);
        expect(partial.status).toBe(400);
        expect(partial.json.error.details?.fields?.map((field) => field.field).toSorted()).toEqual([
          'transactions.0.amount',
          'transactions.0.currency',
        ]);
        return seen;
      });

      expect(codes.length).toBeGreaterThanOrEqual(kind === 'gateway_a' ? 8 : 5);
      expect(logs.length).toBeGreaterThan(1000);
      const tables = await dumpTables(stack);
      expect(codes.filter((code) => tables.includes(code))).toEqual([]);
      expect(codes.filter((code) => logs.includes(code))).toEqual([]);
    });
  });
});
