import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { captureLogs, type LogCapture } from '../support/logs.js';
import { flattenedReceipt, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { startTestStack, type TestStack } from '../support/stack.js';

interface ErrorReply {
  success: false;
  error: { code: string; message: string; details?: { fields?: { field: string; message: string }[] } };
}

/** What a new user of the API meets when a request is wrong: each error says what to fix. */
describe('error quality over HTTP', () => {
  let stack: TestStack;
  let logs: LogCapture;
  let merchant: string;
  let issuer: string;

  beforeAll(async () => {
    logs = captureLogs();
    stack = await startTestStack();
    merchant = (await stack.apiKey(['merchant'])).apiKey;
    issuer = (await stack.apiKey(['issuer'])).apiKey;
  });

  afterAll(async () => {
    await stack?.close();
    logs?.restore();
  });

  const encrypt = (body: unknown) =>
    stack.request<ErrorReply>('POST', '/api/v1/receipts/encrypt', { apiKey: merchant, body });
  const fieldsOf = (reply: { json: ErrorReply }) => reply.json.error.details?.fields ?? [];

  it('reports a missing required field as required, whatever its type', async () => {
    const { receiptId: _receiptId, subtotal: _subtotal, ...body } = flattenedReceipt();
    const reply = await encrypt(body);
    expect(reply.status).toBe(400);
    expect(fieldsOf(reply)).toEqual(
      expect.arrayContaining([
        { field: 'receiptId', message: 'is required' },
        { field: 'subtotal', message: 'is required' },
      ]),
    );
    const grant = await stack.request<ErrorReply>('POST', '/api/v1/keys/grant-access', {
      apiKey: issuer,
      body: { keyId: crypto.randomUUID() },
    });
    expect(fieldsOf(grant)).toEqual([{ field: 'userId', message: 'is required' }]);
  });

  it('refuses a misspelt field, naming it and the field it is close to, instead of escrowing silently', async () => {
    const reply = await encrypt(flattenedReceipt({ recipientHashedPAN: newHashedPan() }));
    expect(reply.status).toBe(400);
    expect(reply.json.error.code).toBe('INVALID_REQUEST');
    expect(fieldsOf(reply)).toEqual([
      { field: 'recipientHashedPAN', message: 'is not a known field; did you mean "recipientHashedPan"?' },
    ]);
    const nested = await encrypt({
      receipt: { ...sampleReceipt(), merchant: { ...sampleReceipt().merchant, logo: 'x' } },
      recipientIdentifier: { type: 'email', value: 'a@example.com' },
      unrelatedThing: true,
    });
    expect(fieldsOf(nested)).toEqual(
      expect.arrayContaining([
        { field: 'receipt.merchant.logo', message: 'is not a known field; did you mean "logoUrl"?' },
        { field: 'unrelatedThing', message: 'is not a known field' },
      ]),
    );
  });

  it('keeps free-form metadata free-form', async () => {
    const reply = await encrypt({
      receipt: sampleReceipt({ metadata: { anyKey: 1, another: { nested: true } } }),
      recipientIdentifier: { type: 'email', value: 'a@example.com' },
    });
    expect(reply.status).toBe(200);
  });

  it('names the body when the JSON is malformed', async () => {
    const reply = await stack.request<ErrorReply>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant,
      rawBody: '{"receiptId": ',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(reply.status).toBe(400);
    expect(fieldsOf(reply)).toEqual([{ field: '(body)', message: 'is not well-formed JSON' }]);
  });

  it('names the role an operation needs when the key lacks it', async () => {
    const reply = await stack.request<ErrorReply>('POST', '/api/v1/onboarding/generate-keys', {
      apiKey: merchant,
    });
    expect(reply.status).toBe(403);
    expect(reply.json.error.code).toBe('forbidden');
    expect(reply.json.error.message).toMatch(
      /needs an API key with the role "issuer"; this key has "merchant"/,
    );
  });

  it('points a bearer token at the X-API-Key header', async () => {
    const reply = await stack.request<ErrorReply>('POST', '/api/v1/onboarding/generate-keys', {
      headers: { Authorization: `Bearer ${issuer}` },
    });
    expect(reply.status).toBe(401);
    expect(reply.json.error.message).toMatch(/X-API-Key/);
    const none = await stack.request<ErrorReply>('POST', '/api/v1/onboarding/generate-keys');
    expect(none.json.error.message).toMatch(/X-API-Key/);
  });

  it('reports each bad field once', async () => {
    const reply = await encrypt(flattenedReceipt({ currency: 'usd' }));
    const currency = fieldsOf(reply).filter((field) => field.field === 'currency');
    expect(currency).toHaveLength(1);
  });

  it('refuses receipt content an issuer app could not show safely or that does not add up', async () => {
    const logo = await encrypt({
      receipt: sampleReceipt({
        merchant: { ...sampleReceipt().merchant, logoUrl: 'javascript:alert(document.cookie)' },
      }),
      recipientIdentifier: { type: 'email', value: 'a@example.com' },
    });
    expect(logo.status).toBe(400);
    expect(fieldsOf(logo)).toEqual([{ field: 'receipt.merchant.logoUrl', message: 'must be an https URL' }]);
    const country = await encrypt(flattenedReceipt({ merchantCountry: 'United States' }));
    expect(fieldsOf(country).map((field) => field.field)).toEqual(['merchantCountry']);
    const base = flattenedReceipt();
    const [first, ...others] = base.items as { quantity: number; unitPrice: number; totalPrice: number }[];
    const line = await encrypt({
      ...base,
      items: [{ ...first, totalPrice: first!.totalPrice + 1 }, ...others],
      subtotal: (base.subtotal as number) + 1,
      totalAmount: base.totalAmount + 1,
    });
    expect(fieldsOf(line)).toEqual([
      { field: 'items.0.totalPrice', message: expect.stringMatching(/quantity × unitPrice/) },
    ]);
  });

  it('found no response of this file outside the contract', () => {
    expect(stack.contractViolations).toEqual([]);
  });
});
