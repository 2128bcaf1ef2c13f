import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from '@jest/globals';
import type Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import type { Envelope } from '@receipt-service/sdk';
import { createStripeClient, loadStripeSdk } from '../../lib/gateways/stripe-client.js';
import { gatewayFields, flattenedReceipt, type FlattenedFixture } from './fixtures.js';
import { patience, pollUntil } from './processes.js';
import type { TestStack } from './stack.js';

/*
 * What the payment lifecycle tests share: paying, reading a receipt's status, confirming an intent in
 * the gateway sandbox with the real stripe SDK (as a till would), and a webhook receiver.
 */

export type Kind = 'gateway_a' | 'gateway_b';

interface Data<T> {
  success: true;
  data: T;
}

export interface Paid {
  paymentId: string;
  body: FlattenedFixture;
}

/** A payment with an itemised receipt: two flat whites at 450, a croissant at 525, tax 123 (78 listed on the coffee). */
export async function pay(
  stack: TestStack,
  merchantKey: string,
  kind: Kind,
  recipientHashedPan: string | undefined,
  overrides: Record<string, unknown> = {},
): Promise<Paid> {
  const body = flattenedReceipt({ ...(recipientHashedPan ? { recipientHashedPan } : {}), ...overrides });
  const created = await stack.request<Data<{ paymentId: string }>>(
    'POST',
    `/api/v1/payments/${kind}/create`,
    {
      apiKey: merchantKey,
      body: { ...gatewayFields(kind, body), ...body },
    },
  );
  expect(created.status).toBe(200);
  return { paymentId: created.json.data.paymentId, body };
}

export interface Fetched {
  envelope: Envelope;
  mapping: Record<string, unknown> | null;
  paymentStatus: string | null;
  relatedReceiptId: string | null;
}

export async function fetchReceipt(stack: TestStack, apiKey: string, receiptId: string): Promise<Fetched> {
  const reply = await stack.request<Data<Fetched>>('GET', `/api/v1/receipts/${receiptId}`, { apiKey });
  expect(reply.status).toBe(200);
  return reply.json.data;
}

/** Waits (bounded) until the receipt's paymentStatus is `status`: events arrive asynchronously. */
export async function statusBecomes(
  stack: TestStack,
  apiKey: string,
  receiptId: string,
  status: string,
): Promise<void> {
  await pollUntil(
    `receipt ${receiptId} to become ${status}`,
    async () => ((await fetchReceipt(stack, apiKey, receiptId)).paymentStatus === status ? true : undefined),
    { timeoutMs: patience(15_000), intervalMs: 50 },
  );
}

/** Waits until the sandbox has no event left to deliver (each answered 2xx, or given up). */
export async function eventsSettled(stack: TestStack): Promise<void> {
  await pollUntil(
    'the sandbox to deliver its events',
    async () => (stack.sandbox!.events.pending() === 0 ? true : undefined),
    { timeoutMs: patience(20_000), intervalMs: 50 },
  );
}

/** The stripe SDK pointed at the gateway sandbox: what a till (or Stripe.js) does with the intent. */
export async function sandboxStripe(stack: TestStack): Promise<Stripe> {
  return createStripeClient(await loadStripeSdk(), {
    secretKey: 'sk_test_till',
    baseUrl: stack.sandbox!.url,
    maxNetworkRetries: 0,
    timeoutMs: 10_000,
  });
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** The verified events of one type. */
  events(secret: string, type: string): { type: string; data: Record<string, unknown> }[];
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1 that answers 200. */
export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    events(secret, type) {
      return received
        .map((message) => {
          const headers = {
            'webhook-id': String(message.headers['webhook-id']),
            'webhook-timestamp': String(message.headers['webhook-timestamp']),
            'webhook-signature': String(message.headers['webhook-signature']),
          };
          // Signed by the webhook's secret, checked with the standardwebhooks library's own signing
          // (its verify() also compares the timestamp with the machine's clock, which tests move).
          const expected = new Webhook(secret).sign(
            headers['webhook-id'],
            new Date(Number(headers['webhook-timestamp']) * 1000),
            message.body,
          );
          expect(headers['webhook-signature'].split(' ')).toContain(expected);
          return JSON.parse(message.body) as { type: string; data: Record<string, unknown> };
        })
        .filter((event) => event.type === type);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
