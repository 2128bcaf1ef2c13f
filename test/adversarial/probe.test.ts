import { afterAll, beforeAll, describe, it } from '@jest/globals';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import { flattenedReceipt } from '../support/fixtures.js';
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
    const show = (label: string, r: { status: number; text: string; headers: Headers }) =>
      console.log(label, r.status, r.text.slice(0, 300));
    show('pct', await stack.request('GET', '/api/v1/transactions/%E0%A4%A', { apiKey: merchant.apiKey }));
    show('pct2', await stack.request('GET', '/api/v1/payments/%zz/create', { apiKey: merchant.apiKey }));
    const enc = await stack.request<{ data: ReceiptEnvelope }>('POST', '/api/v1/receipts/encrypt', { apiKey: merchant.apiKey, body: flattenedReceipt() });
    show('enc', enc);
    for (const metadata of [{ n: 1e300 }, { n: 1e-200 }, { deep: JSON.parse('{"a":'.repeat(40) + '1' + '}'.repeat(40)) }, { '': 1 }, { s: '\ud800' }, { e: [] }, { e: {} }]) {
      const enc2 = await stack.request<{ data: ReceiptEnvelope }>('POST', '/api/v1/receipts/encrypt', { apiKey: merchant.apiKey, body: flattenedReceipt() });
      show(`meta ${JSON.stringify(metadata).slice(0, 40)}`, await stack.request('POST', '/api/v1/transactions', { apiKey: merchant.apiKey, body: { envelope: enc2.json.data, paymentGateway: 'other', metadata } }));
    }
    show('empty', await stack.request('POST', '/api/v1/keys/grant-access', { apiKey: issuer.apiKey, rawBody: '', headers: { 'Content-Type': 'application/json' } }));
    show('nobody', await stack.request('POST', '/api/v1/keys/grant-access', { apiKey: issuer.apiKey }));
    show('big', await stack.request('POST', '/api/v1/payments/gateway_a/create', { apiKey: merchant.apiKey, body: flattenedReceipt({ items: [{ lineItemId: crypto.randomUUID(), name: 'x', quantity: 1, unitPrice: 9e15, totalPrice: 9e15 }], subtotal: 9e15, taxAmount: 0, totalAmount: 9e15, amount: 9e15 }) }));
    show('big-b', await stack.request('POST', '/api/v1/payments/gateway_b/create', { apiKey: merchant.apiKey, body: flattenedReceipt({ items: [{ lineItemId: crypto.randomUUID(), name: 'x', quantity: 1, unitPrice: 9e15, totalPrice: 9e15 }], subtotal: 9e15, taxAmount: 0, totalAmount: 9e15 }) }));
    show('huge', await stack.request('POST', '/api/v1/payments/gateway_a/create', { apiKey: merchant.apiKey, body: flattenedReceipt({ items: [{ lineItemId: crypto.randomUUID(), name: 'x', quantity: 1, unitPrice: 1e300, totalPrice: 1e300 }], subtotal: 1e300, taxAmount: 0, totalAmount: 1e300, amount: 1e300 }) }));
    show('neg-b', await stack.request('POST', '/api/v1/payments/gateway_b/create', { apiKey: merchant.apiKey, body: flattenedReceipt({ items: [{ lineItemId: crypto.randomUUID(), name: 'x', quantity: 1, unitPrice: -100, totalPrice: -100 }, { lineItemId: crypto.randomUUID(), name: 'y', quantity: 0.5, unitPrice: 300, totalPrice: 300 }], subtotal: 200, taxAmount: 0, totalAmount: 200 }) }));
    show('nonce', await stack.request('POST', '/api/v1/payments/gateway_b/create', { apiKey: merchant.apiKey, body: { ...flattenedReceipt(), cardNonce: '\u0000é' } }));
    show('eur', await stack.request('POST', '/api/v1/payments/gateway_a/create', { apiKey: merchant.apiKey, body: { ...flattenedReceipt({ currency: 'ZZZ' }), amount: 1548 } }));
    show('jpy-b', await stack.request('POST', '/api/v1/payments/gateway_b/create', { apiKey: merchant.apiKey, body: { ...flattenedReceipt({ currency: 'QQQ' }) } }));
  });
});
