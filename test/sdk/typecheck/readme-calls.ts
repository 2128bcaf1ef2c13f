/**
 * What a TypeScript integrator writes first, checked against the SDK's types: the README's
 * walk-through bodies (`$RECEIPT`, and the flattened encrypt body made from it) sent through the
 * typed client, an envelope opened on the device, and the SDK README's match call. Nothing here runs: test/sdk/types.slow.test.ts
 * compiles this file with the SDK's own compiler settings (and `npm run lint`'s tsc compiles it too),
 * checks that the bodies are the README's, and that every `@ts-expect-error` below marks the error
 * it names (tsc reports a directive whose error has gone).
 */
import {
  createClient,
  importPrivateKey,
  openEnvelope,
  type components,
  type paths,
} from '@receipt-service/sdk';

type PaymentBody =
  paths['/api/v1/payments/{gateway}/create']['post']['requestBody']['content']['application/json'];
type EncryptBody = paths['/api/v1/receipts/encrypt']['post']['requestBody']['content']['application/json'];

/** The values the README's shell gives its jq arguments (`--arg pan "$PAN_HASH"` …), fixed here. */
export const readmeArguments = {
  pan: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  card: '4242000123004567',
  receipt: '6f1c2f9e-3b0e-4c55-9d1a-2f7d4e0b9a11',
  merchant: '0b8e2a44-8f31-4d3c-a2f4-6c1f1d7e5b22',
  transaction: 'c3d9e8f7-1a2b-4c5d-8e9f-0a1b2c3d4e5f',
  line: '5d2c7b1a-9e8f-4a3b-8c2d-1e0f9a8b7c6d',
};

/** README "Walk-through with curl", step 3: `$RECEIPT`, sent to payments/gateway_a/create. */
export const paymentBody = {
  receiptId: '6f1c2f9e-3b0e-4c55-9d1a-2f7d4e0b9a11',
  merchantId: '0b8e2a44-8f31-4d3c-a2f4-6c1f1d7e5b22',
  merchantName: 'Corner Coffee',
  transactionId: 'c3d9e8f7-1a2b-4c5d-8e9f-0a1b2c3d4e5f',
  paymentMethod: 'card',
  cardLast4: '4567',
  cardBrand: 'visa',
  subtotal: 900,
  taxAmount: 78,
  totalAmount: 978,
  amount: 978,
  items: [
    {
      lineItemId: '5d2c7b1a-9e8f-4a3b-8c2d-1e0f9a8b7c6d',
      name: 'Flat white',
      quantity: 2,
      unitPrice: 450,
      totalPrice: 900,
    },
  ],
  recipientHashedPan: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
} satisfies PaymentBody;

/** The flattened encrypt body: the same fields without the payment's `amount`, as the README says. */
const { amount: _amount, ...flattened } = paymentBody;
export const encryptBody = flattened satisfies EncryptBody;

/** A merchant's payment and encrypt calls, and an issuer's device opening what it fetched. */
export async function integrate(pkcs8: string): Promise<void> {
  const merchant = createClient({ baseUrl: 'https://receipts.example.com', apiKey: 'rk_local_merchant' });
  await merchant.POST('/api/v1/payments/{gateway}/create', {
    params: { path: { gateway: 'gateway_a' } },
    body: paymentBody,
  });
  const encrypted = await merchant.POST('/api/v1/receipts/encrypt', { body: encryptBody });

  const issuer = createClient({ baseUrl: 'https://receipts.example.com', apiKey: 'rk_local_issuer' });
  const fetched = await issuer.GET('/api/v1/receipts/{receiptId}', {
    params: { path: { receiptId: paymentBody.receiptId } },
  });
  const { privateKey } = await importPrivateKey(pkcs8);
  const whole = fetched.data!;

  await openEnvelope(whole.data.envelope, privateKey);
  await openEnvelope(encrypted.data!.data, privateKey);
  // @ts-expect-error TS2345: the whole response ({ success, data }) is not an envelope.
  await openEnvelope(whole, privateKey);
  // @ts-expect-error TS2345: nor is its data ({ envelope, mapping }).
  await openEnvelope(whole.data, privateKey);
}

/** The SDK README's match call ("Matching receipts to card statement lines"), through the typed client. */
export async function matchStatement(
  userId: string,
  statementLines: {
    id: string;
    amountMinor: number;
    currency: string;
    authorisedAt: string;
    cardLast4?: string;
  }[],
): Promise<Record<string, string[]>> {
  const api = createClient({ baseUrl: 'https://receipts.example.com', apiKey: 'rk_local_issuer' });
  const { data, error } = await api.POST('/api/v1/users/{userId}/receipts/match', {
    params: { path: { userId } },
    body: {
      transactions: statementLines.map((line) => ({
        reference: line.id,
        amount: line.amountMinor,
        currency: line.currency,
        transactionDate: line.authorisedAt,
        cardLast4: line.cardLast4,
      })),
    },
  });
  if (error) throw new Error(error.error.code);
  const found: Record<string, string[]> = {};
  for (const { reference, receiptIds } of data.data.matches) found[reference] = receiptIds;
  return found;
}

/** Responses stay output-side: what the service always sends is required in their types. */
export const created: components['schemas']['PaymentResult'] = {
  paymentId: 'pi_1',
  clientSecret: null,
  orderId: null,
  gateway: 'gateway_a',
  // @ts-expect-error TS2741: receiptMetadata.isEscrowed is always sent, so the type requires it.
  receiptMetadata: {
    receiptId: paymentBody.receiptId,
    transactionId: paymentBody.transactionId,
    merchantId: paymentBody.merchantId,
  },
};
