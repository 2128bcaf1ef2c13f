import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { flattenedReceipt, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser, type OnboardedUser } from '../support/flow.js';
import { captureLogs, type LogCapture } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import type { SuccessEnvelope } from './support.js';

/**
 * Runs the spec's five-step flow on both gateways, plus receipts/encrypt and receipts/decrypt, with the
 * logger at DEBUG, then searches everything written to stdout and stderr for the secrets and the
 * receipt content that passed through: none may appear.
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
  let logs: LogCapture;
  const secrets = new Map<string, string>();
  const remember = (label: string, value: string) => secrets.set(label, value);

  beforeAll(async () => {
    logs = captureLogs();
    stack = await startTestStack({ logLevel: 'DEBUG' });
  });

  afterAll(async () => {
    await stack?.close();
    logs.restore();
  });

  const rememberUser = (label: string, user: OnboardedUser) => {
    const { privateKey, hashedPan } = user;
    remember(`${label} private key`, privateKey);
    // A logged slice is as bad as the whole key: look for 40-character windows across it.
    for (const start of [0, 100, Math.floor(privateKey.length / 2), privateKey.length - 40]) {
      remember(`${label} private key [${start}..${start + 40}]`, privateKey.slice(start, start + 40));
    }
    remember(`${label} hashedPan`, hashedPan);
  };

  it('runs the five-step flow on both gateways and both receipt endpoints, with refusals, at DEBUG', async () => {
    const merchant = await stack.apiKey(['merchant']);
    const issuer = await stack.apiKey(['issuer']);
    for (const [label, client] of [
      ['merchant', merchant],
      ['issuer', issuer],
    ] as const) {
      remember(`${label} API key`, client.apiKey);
      remember(`${label} API key secret`, client.apiKey.slice('rk_'.length + 32 + 1));
    }

    const onboarded: OnboardedUser[] = [];
    for (const [gateway, extra] of [
      ['gateway_a', { amount: 1548 }],
      ['gateway_b', { cardNonce: 'cnon:card-nonce-ok' }],
    ] as const) {
      // Steps 1 and 2: generate-keys, register.
      const user = await onboardUser(stack, issuer.apiKey, newHashedPan());
      rememberUser(gateway, user);
      onboarded.push(user);
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
      remember(`${gateway} token id`, tokenId);
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
    }

    const user = await onboardUser(stack, issuer.apiKey);
    rememberUser('receipts', user);
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
    remember('receipts token id', tokenId);
    const opened = await stack.request<SuccessEnvelope<unknown>>('POST', '/api/v1/receipts/decrypt', {
      apiKey: issuer.apiKey,
      body: { envelope: encrypted.json.data, accessTokenId: tokenId, privateKey: user.privateKey },
    });
    expect(opened.status).toBe(200);
    expect(opened.json.data).toEqual(receipt);
    const wrongKey = await stack.request('POST', '/api/v1/receipts/decrypt', {
      apiKey: issuer.apiKey,
      body: { envelope: encrypted.json.data, accessTokenId: tokenId, privateKey: onboarded[0]!.privateKey },
    });
    expect(wrongKey.status).toBe(403);
    // Requests that end in the service's error logging (gateway refusals): the logged errors must not
    // carry the receipt either.
    for (const extra of [{ currency: 'QQQ' }, { cardNonce: 'cnon:not-a-real-nonce' }]) {
      const failed = await stack.request('POST', '/api/v1/payments/gateway_b/create', {
        apiKey: merchant.apiKey,
        body: { ...flattened(user.hashedPan), ...extra },
      });
      expect(failed.status).not.toBe(200);
    }
    // An escrowed receipt for a recipient who is not registered yet, and the flattened form.
    const escrowed = await stack.request('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body: flattened(newHashedPan()),
    });
    expect(escrowed.status).toBe(200);
  });

  it('wrote log lines for the flow, and none of them carries a secret', () => {
    const text = logs.text();
    expect(text).toContain('"route":"decrypt-payment"');
    expect(text).toContain('"route":"decrypt-receipt"');
    expect(secrets.size).toBeGreaterThan(20);
    const found = [...secrets].filter(([, value]) => text.includes(value)).map(([label]) => label);
    expect(found).toEqual([]);
  });

  it('wrote none of the receipt content', () => {
    const text = logs.text();
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
  });
});
