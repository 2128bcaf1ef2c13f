import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { flattenedReceipt, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser, type OnboardedUser } from '../support/flow.js';
import { eventsSettled, sandboxStripe, statusBecomes } from '../support/lifecycle.js';
import { logsWhile } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import type { SuccessEnvelope } from './support.js';

/**
 * Runs the spec's five-step flow on both gateways, plus receipts/encrypt and receipts/decrypt, with the
 * logger at DEBUG, then searches everything the test wrote to stdout and stderr for the secrets and
 * the receipt content that passed through: none may appear. Each test checks the logs of its own
 * requests, so either passes alone and in any order.
 */

// Distinctive values, so a hit in the logs can only be this receipt leaking.
const RECEIPT = {
  merchantName: 'Quillfeather Apothecary of Lower Wending',
  merchantStreet: '77 Obscurity Lane',
  merchantContactEmail: 'ledger.quillfeather@example.org',
  merchantTaxId: 'QF-55-99173',
  cardLast4: '7319',
  items: ['Moonwort Tincture 30 ml', 'Basilisk Scale Polish'],
  recipientEmail: 'cardholder.zq47@example.net',
  notes: 'Delivered by the night courier',
  loyaltyMember: 'QF-MEMBER-004417',
};

const flattened = (recipientHashedPan: string) =>
  flattenedReceipt({
    merchantName: RECEIPT.merchantName,
    merchantStreet: RECEIPT.merchantStreet,
    merchantContactEmail: RECEIPT.merchantContactEmail,
    merchantTaxId: RECEIPT.merchantTaxId,
    cardLast4: RECEIPT.cardLast4,
    recipientHashedPan,
    items: [
      {
        lineItemId: randomUUID(),
        name: RECEIPT.items[0],
        quantity: 2,
        unitPrice: 450,
        totalPrice: 900,
        category: 'Remedies',
      },
      { lineItemId: randomUUID(), name: RECEIPT.items[1], quantity: 1, unitPrice: 525, totalPrice: 525 },
    ],
  });

describe('secrets and receipt content never reach the logs', () => {
  let stack: TestStack;
  let merchant: { apiKey: string };
  let issuer: { apiKey: string };

  beforeAll(async () => {
    stack = await startTestStack({ logLevel: 'DEBUG' });
    merchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
  });

  afterAll(async () => {
    await stack?.close();
  });

  /** The secrets a test handled, by label; the API keys are in every test's requests. */
  const secretsOf = () => {
    const secrets = new Map<string, string>();
    for (const [label, client] of [
      ['merchant', merchant],
      ['issuer', issuer],
    ] as const) {
      secrets.set(`${label} API key`, client.apiKey);
      secrets.set(`${label} API key secret`, client.apiKey.slice(-43));
    }
    return secrets;
  };

  const rememberUser = (secrets: Map<string, string>, label: string, user: OnboardedUser) => {
    const { privateKey, hashedPan } = user;
    secrets.set(`${label} private key`, privateKey);
    // A logged slice is as bad as the whole key: look for 40-character windows across it.
    for (const start of [0, 100, Math.floor(privateKey.length / 2), privateKey.length - 40]) {
      secrets.set(`${label} private key [${start}..${start + 40}]`, privateKey.slice(start, start + 40));
    }
    secrets.set(`${label} hashedPan`, hashedPan);
  };

  /** Neither a secret nor any of the receipt's content in the text. */
  const expectNoLeaks = (text: string, secrets: Map<string, string>) => {
    const found = [...secrets].filter(([, value]) => text.includes(value)).map(([label]) => label);
    expect(found).toEqual([]);
    const values = [
      RECEIPT.merchantName,
      RECEIPT.merchantStreet,
      RECEIPT.merchantContactEmail,
      RECEIPT.merchantTaxId,
      ...RECEIPT.items,
      RECEIPT.recipientEmail,
      RECEIPT.notes,
      RECEIPT.loyaltyMember,
    ];
    expect(values.filter((value) => text.includes(value))).toEqual([]);
    // Four digits alone turn up inside any hex id; the card number leaks only in a card-shaped context.
    const last4 = [
      new RegExp(`last_?4\\W{0,6}${RECEIPT.cardLast4}`, 'i'),
      new RegExp(`"${RECEIPT.cardLast4}"`),
      new RegExp(`${RECEIPT.cardLast4}\\W{0,3}(?:visa|card)`, 'i'),
    ];
    expect(last4.filter((pattern) => pattern.test(text)).map(String)).toEqual([]);
  };

  it('logs the five-step flow on both gateways, with refusals and gateway errors, at DEBUG without a secret or receipt content', async () => {
    const secrets = secretsOf();
    const { text } = await logsWhile(async () => {
      for (const [gateway, extra] of [
        ['gateway_a', { amount: 1548 }],
        ['gateway_b', { cardNonce: 'cnon:card-nonce-ok' }],
      ] as const) {
        // Steps 1 and 2: generate-keys, register.
        const user = await onboardUser(stack, issuer.apiKey, newHashedPan());
        rememberUser(secrets, gateway, user);
        // Step 3: the merchant charges and attaches the encrypted receipt.
        const created = await stack.request<SuccessEnvelope<{ paymentId: string }>>(
          'POST',
          `/api/v1/payments/${gateway}/create`,
          {
            apiKey: merchant.apiKey,
            body: { ...flattened(user.hashedPan), ...extra },
          },
        );
        expect(created.status).toBe(200);
        // Step 4: a token; step 5: the receipt by payment id.
        const tokenId = await grantToken(stack, issuer.apiKey, user);
        secrets.set(`${gateway} token id`, tokenId);
        const opened = await stack.request<SuccessEnvelope<{ merchant: { name: string } }>>(
          'POST',
          '/api/v1/payments/decrypt',
          {
            apiKey: issuer.apiKey,
            body: {
              paymentId: created.json.data.paymentId,
              gateway,
              accessTokenId: tokenId,
              privateKey: user.privateKey,
            },
          },
        );
        expect(opened.status).toBe(200);
        expect(opened.json.data.merchant.name).toBe(RECEIPT.merchantName);
        // Refusals carry the same secrets in their requests and take the error paths.
        const refused = await stack.request('POST', '/api/v1/payments/decrypt', {
          apiKey: issuer.apiKey,
          body: {
            paymentId: created.json.data.paymentId,
            gateway,
            accessTokenId: randomUUID(),
            privateKey: user.privateKey,
          },
        });
        expect(refused.status).toBe(403);
        const duplicate = await stack.request('POST', '/api/v1/onboarding/register', {
          apiKey: issuer.apiKey,
          body: { hashedPan: user.hashedPan, publicKey: user.publicKey, keyId: user.keyId },
        });
        expect(duplicate.status).toBe(409);
        // Requests that end in the service's error logging (gateway refusals): the logged errors must
        // not carry the receipt either.
        if (gateway === 'gateway_b') {
          for (const failing of [{ currency: 'QQQ' }, { cardNonce: 'cnon:not-a-real-nonce' }]) {
            const failed = await stack.request('POST', '/api/v1/payments/gateway_b/create', {
              apiKey: merchant.apiKey,
              body: { ...flattened(user.hashedPan), ...failing },
            });
            expect(failed.status).not.toBe(200);
          }
        }
      }
    });
    expect(text).toContain('"route":"decrypt-payment"');
    // 4 API key values, and per gateway 5 private key values, the hashedPan and the token id.
    expect(secrets.size).toBe(4 + 2 * 7);
    expectNoLeaks(text, secrets);
  });

  it('logs the payment lifecycle (confirmation, refunds, gateway events, forged ones) at DEBUG without a secret or receipt content', async () => {
    const secrets = secretsOf();
    secrets.set('stripe webhook secret', stack.sandbox!.webhookSecrets.stripe);
    secrets.set('square webhook signature key', stack.sandbox!.webhookSecrets.square);
    const { text } = await logsWhile(async () => {
      const user = await onboardUser(stack, issuer.apiKey, newHashedPan());
      rememberUser(secrets, 'lifecycle', user);
      const till = await sandboxStripe(stack);
      for (const [gateway, extra] of [
        ['gateway_a', { amount: 1548 }],
        ['gateway_b', { cardNonce: 'cnon:card-nonce-ok' }],
      ] as const) {
        const body = flattened(user.hashedPan);
        const created = await stack.request<SuccessEnvelope<{ paymentId: string }>>(
          'POST',
          `/api/v1/payments/${gateway}/create`,
          { apiKey: merchant.apiKey, body: { ...body, ...extra } },
        );
        expect(created.status).toBe(200);
        const { paymentId } = created.json.data;
        if (gateway === 'gateway_a')
          await till.paymentIntents.confirm(paymentId, { payment_method: 'pm_card_visa' });
        await statusBecomes(stack, merchant.apiKey, body.receiptId, 'succeeded');
        const items = body.items as { lineItemId: string }[];
        const refunded = await stack.request('POST', `/api/v1/payments/${gateway}/${paymentId}/refunds`, {
          apiKey: merchant.apiKey,
          body: {
            refundId: randomUUID(),
            items: [{ lineItemId: items[0]!.lineItemId, quantity: 1 }],
            reason: RECEIPT.notes,
          },
        });
        expect(refunded.status).toBe(201);
        expect(stack.sandbox!.dashboardRefund(gateway, paymentId).status).toBe(200);
        await statusBecomes(stack, merchant.apiKey, body.receiptId, 'refunded');
        // A forged event takes the refusal path: its signature is not the provider's.
        const forged = await stack.request('POST', `/api/v1/gateways/${gateway}/events`, {
          rawBody: JSON.stringify({ id: 'evt_forged', type: 'refund.created', note: RECEIPT.notes }),
          headers: {
            'Content-Type': 'application/json',
            'Stripe-Signature': 't=1,v1=00',
            'X-Square-HmacSha256-Signature': 'AA==',
          },
        });
        expect(forged.status).toBe(401);
      }
      await eventsSettled(stack);
    });
    expect(text).toContain('"route":"gateway-events"');
    expect(text).toContain('"route":"create-refund"');
    expectNoLeaks(text, secrets);
  });

  it('logs receipts/encrypt and receipts/decrypt, escrowed and refused, at DEBUG without a secret or receipt content', async () => {
    const secrets = secretsOf();
    const { text } = await logsWhile(async () => {
      const user = await onboardUser(stack, issuer.apiKey);
      rememberUser(secrets, 'receipts', user);
      const stranger = await onboardUser(stack, issuer.apiKey);
      rememberUser(secrets, 'stranger', stranger);
      const receipt = sampleReceipt({ notes: RECEIPT.notes });
      receipt.merchant = {
        ...receipt.merchant,
        name: RECEIPT.merchantName,
        contactEmail: RECEIPT.merchantContactEmail,
        taxId: RECEIPT.merchantTaxId,
      };
      receipt.items = receipt.items.map((item, index) => ({
        ...item,
        name: RECEIPT.items[index] ?? item.name,
      }));
      receipt.transaction = {
        ...receipt.transaction,
        cardDetails: { ...receipt.transaction.cardDetails, last4: RECEIPT.cardLast4 },
      };
      receipt.loyaltyInfo = { ...receipt.loyaltyInfo, memberNumber: RECEIPT.loyaltyMember };
      const encrypted = await stack.request<SuccessEnvelope<unknown>>('POST', '/api/v1/receipts/encrypt', {
        apiKey: merchant.apiKey,
        body: {
          receipt,
          recipientIdentifier: { type: 'email', value: RECEIPT.recipientEmail },
          recipientHashedPan: user.hashedPan,
        },
      });
      expect(encrypted.status).toBe(200);
      const tokenId = await grantToken(stack, issuer.apiKey, user);
      secrets.set('receipts token id', tokenId);
      const opened = await stack.request<SuccessEnvelope<unknown>>('POST', '/api/v1/receipts/decrypt', {
        apiKey: issuer.apiKey,
        body: { envelope: encrypted.json.data, accessTokenId: tokenId, privateKey: user.privateKey },
      });
      expect(opened.status).toBe(200);
      expect(opened.json.data).toEqual(receipt);
      const wrongKey = await stack.request('POST', '/api/v1/receipts/decrypt', {
        apiKey: issuer.apiKey,
        body: { envelope: encrypted.json.data, accessTokenId: tokenId, privateKey: stranger.privateKey },
      });
      expect(wrongKey.status).toBe(403);
      // An escrowed receipt for a recipient who is not registered yet, in the flattened form.
      const unregistered = newHashedPan();
      secrets.set('unregistered hashedPan', unregistered);
      const escrowed = await stack.request('POST', '/api/v1/receipts/encrypt', {
        apiKey: merchant.apiKey,
        body: flattened(unregistered),
      });
      expect(escrowed.status).toBe(200);
    });
    expect(text).toContain('"route":"decrypt-receipt"');
    // 4 API key values, 6 for each of the two users, the token id and the unregistered hashedPan.
    expect(secrets.size).toBe(4 + 2 * 6 + 2);
    expectNoLeaks(text, secrets);
  });
});
