import { afterAll, beforeAll, describe, it } from '@jest/globals';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import { flattenedReceipt, sampleReceipt } from '../support/fixtures.js';
import { startTestStack, type TestStack } from '../support/stack.js';

describe('probe', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => stack?.close());
  it('probes', async () => {
    const merchant = await stack.apiKey(['merchant']);
    const issuer = await stack.apiKey(['issuer']);
    const show = (label: string, r: { status: number; text: string }) => console.log(label, r.status, r.text.slice(0, 300));
    const deep = (d: number) => '['.repeat(d) + ']'.repeat(d);
    const receipt = JSON.stringify(sampleReceipt({ metadata: { x: 'DEEP' } }));
    show('enc-deep', await stack.request('POST', '/api/v1/receipts/encrypt', { apiKey: merchant.apiKey, rawBody: `{"receipt":${receipt.replace('"DEEP"', deep(6000))},"recipientIdentifier":{"type":"email","value":"a@b.c"}}`, headers: { 'Content-Type': 'application/json' } }));
    const enc = await stack.request<{ data: ReceiptEnvelope }>('POST', '/api/v1/receipts/encrypt', { apiKey: merchant.apiKey, body: flattenedReceipt() });
    show('tx-deep', await stack.request('POST', '/api/v1/transactions', { apiKey: merchant.apiKey, rawBody: `{"envelope":${JSON.stringify(enc.json.data)},"paymentGateway":"other","metadata":{"a":${deep(6000)}}}`, headers: { 'Content-Type': 'application/json' } }));
    show('grant-deep', await stack.request('POST', '/api/v1/keys/grant-access', { apiKey: issuer.apiKey, rawBody: `{"userId":${deep(30000)}}`, headers: { 'Content-Type': 'application/json' } }));
    show('grant-deep-obj', await stack.request('POST', '/api/v1/keys/grant-access', { apiKey: issuer.apiKey, rawBody: '{"a":'.repeat(20000) + '1' + '}'.repeat(20000), headers: { 'Content-Type': 'application/json' } }));
    show('grant-deep-proto', await stack.request('POST', '/api/v1/keys/grant-access', { apiKey: issuer.apiKey, rawBody: '{"a":'.repeat(20000) + '{"__proto__":1}' + '}'.repeat(20000), headers: { 'Content-Type': 'application/json' } }));
    show('ctype', await stack.request('POST', '/api/v1/keys/grant-access', { apiKey: issuer.apiKey, rawBody: '{}', headers: { 'Content-Type': 'application/json; charset=utf-16' } }));
    show('ctype2', await stack.request('POST', '/api/v1/keys/grant-access', { apiKey: issuer.apiKey, rawBody: '{}', headers: { 'Content-Type': 'application/vnd.api+json' } }));
    show('b-cur', await stack.request('POST', '/api/v1/payments/gateway_b/create', { apiKey: merchant.apiKey, body: flattenedReceipt({ currency: 'XTS' }) }));
    show('b-zero', await stack.request('POST', '/api/v1/payments/gateway_b/create', { apiKey: merchant.apiKey, body: flattenedReceipt({ items: [{ lineItemId: crypto.randomUUID(), name: '   ', quantity: 1e-9, unitPrice: 0, totalPrice: 0 }], subtotal: 0, taxAmount: 5, totalAmount: 5 }) }));
    show('a-zero', await stack.request('POST', '/api/v1/payments/gateway_a/create', { apiKey: merchant.apiKey, body: { ...flattenedReceipt({ items: [], mockItems: true, subtotal: 0, taxAmount: 1, totalAmount: 1 }), amount: 1 } }));
  });
});
