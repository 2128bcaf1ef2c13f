import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { deliveryDeps } from '../../lib/webhooks/delivery-deps.js';
import { CLAIM_LEASE_MS, retryDelaysMs } from '../../lib/webhooks/send.js';
import { sweepDueDeliveries } from '../../lib/webhooks/sweep.js';
import { LocalDeliveryQueue } from '../../local/delivery-queue.js';
import { flattenedReceipt, newHashedPan } from '../support/fixtures.js';
import { editedCursors, expectOpaque } from '../support/cursors.js';
import { onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { logsWhile } from '../support/logs.js';
import { patience, pollUntil } from '../support/processes.js';
import { startTestStack, type TestStack } from '../support/stack.js';

interface Data<T> {
  success: true;
  data: T;
}
interface Delivery {
  deliveryId: string;
  webhookId: string;
  eventType: string;
  status: 'pending' | 'succeeded' | 'failed';
  attemptCount: number;
  nextAttemptAt: string | null;
  attempts: { at: string; durationMs: number; httpStatus?: number; error?: string }[];
  createdAt: string;
}
interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on 127.0.0.1 that answers the statuses it is given, then 200. */
interface Receiver {
  url: string;
  received: Received[];
  statuses: number[];
  close(): Promise<void>;
}

const servers: Server[] = [];

async function startReceiver(statuses: number[] = []): Promise<Receiver> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      response.writeHead(statuses.shift() ?? 200).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/receipts`,
    received,
    statuses,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const headersOf = (message: Received): Record<string, string> => ({
  'webhook-id': String(message.headers['webhook-id']),
  'webhook-timestamp': String(message.headers['webhook-timestamp']),
  'webhook-signature': String(message.headers['webhook-signature']),
});

/**
 * Whether `secret` signed the message, by the standardwebhooks library's own signing: its verify()
 * also compares the timestamp with the machine's time, which the tests move forward by days.
 */
const signedBy = (secret: string, message: Received): boolean => {
  const headers = headersOf(message);
  const expected = new Webhook(secret).sign(
    headers['webhook-id']!,
    new Date(Number(headers['webhook-timestamp']) * 1000),
    message.body,
  );
  return headers['webhook-signature']!.split(' ').includes(expected);
};

/** The resolver the stack uses in place of DNS: tests point names where they need. */
const hosts = new Map<string, string[]>();

describe('webhook delivery over the local stack', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({
      resolveHost: async (hostname) => {
        const addresses = hosts.get(hostname);
        if (!addresses) throw new Error(`no test address for ${hostname}`);
        return addresses;
      },
    });
  });

  afterEach(async () => {
    stack.dispatcher.start();
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });

  afterAll(async () => {
    await stack?.close();
  });

  /** A merchant, an issuer and a registered user of its own: no webhook of another test sees them. */
  async function parties(): Promise<{ merchant: string; issuer: string; user: OnboardedUser }> {
    const merchant = (await stack.apiKey(['merchant'])).apiKey;
    const issuer = (await stack.apiKey(['issuer'])).apiKey;
    return { merchant, issuer, user: await onboardUser(stack, issuer) };
  }

  async function registerWebhook(
    apiKey: string,
    url: string,
    events: string[] = ['receipt.available'],
  ): Promise<{ webhookId: string; secret: string }> {
    const reply = await stack.request<Data<{ webhookId: string; secret: string }>>(
      'POST',
      '/api/v1/webhooks',
      {
        apiKey,
        body: { url, events },
      },
    );
    expect(reply.status).toBe(201);
    return reply.json.data;
  }

  async function rotateSecret(apiKey: string, webhookId: string): Promise<string> {
    const rotated = await stack.request<Data<{ secret: string }>>(
      'POST',
      `/api/v1/webhooks/${webhookId}/rotate-secret`,
      { apiKey },
    );
    expect(rotated.status).toBe(200);
    return rotated.json.data.secret;
  }

  async function encrypt(apiKey: string, recipientHashedPan: string) {
    const body = flattenedReceipt({ recipientHashedPan });
    const reply = await stack.request<Data<{ receiptId: string }>>('POST', '/api/v1/receipts/encrypt', {
      apiKey,
      body,
    });
    expect(reply.status).toBe(200);
    return body;
  }

  const deliveries = (apiKey: string, webhookId: string, query = '') =>
    stack.request<Data<{ deliveries: Delivery[]; nextCursor: string | null }>>(
      'GET',
      `/api/v1/webhooks/${webhookId}/deliveries${query}`,
      { apiKey },
    );

  const received = (receiver: Receiver, count: number) =>
    pollUntil(
      `${count} webhook(s) received`,
      async () => (receiver.received.length >= count ? receiver.received.slice(0, count) : undefined),
      { timeoutMs: 30_000, intervalMs: 50 },
    );

  /** The webhook's only delivery once `ready` says it has reached the state a test waits for. */
  const deliveryWhen = (apiKey: string, webhookId: string, ready: (delivery: Delivery) => boolean) =>
    pollUntil(
      'the delivery',
      async () => {
        const [delivery] = (await deliveries(apiKey, webhookId)).json.data.deliveries;
        return delivery && ready(delivery) ? delivery : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );

  it('delivers receipt.available for a payment to a registered user, verified by the standardwebhooks library', async () => {
    const { merchant, issuer, user } = await parties();
    const receiver = await startReceiver();
    const { webhookId, secret } = await registerWebhook(issuer, receiver.url);
    const body = flattenedReceipt({ recipientHashedPan: user.hashedPan });
    const payment = await stack.request<Data<{ paymentId: string }>>(
      'POST',
      '/api/v1/payments/gateway_a/create',
      {
        apiKey: merchant,
        body: { amount: body.totalAmount, ...body },
      },
    );
    expect(payment.status).toBe(200);

    const [message] = await received(receiver, 1);
    const event = new Webhook(secret).verify(message!.body, headersOf(message!)) as {
      type: string;
      timestamp: string;
      data: Record<string, unknown>;
    };
    expect(event.type).toBe('receipt.available');
    expect(message!.headers['webhook-id']).toMatch(/^msg_[a-z2-7]{26}$/);
    expect(message!.headers['content-type']).toBe('application/json');
    // Ids only: nothing of the receipt's content, its card or its envelope.
    expect(Object.keys(event).sort()).toEqual(['data', 'timestamp', 'type']);
    expect(Object.keys(event.data).sort()).toEqual(
      ['createdAt', 'keyId', 'merchantId', 'receiptId', 'transactionId', 'userId'].sort(),
    );
    expect(event.data).toMatchObject({
      receiptId: body.receiptId,
      merchantId: body.merchantId,
      transactionId: body.transactionId,
      userId: user.userId,
      keyId: user.keyId,
    });
    expect(message!.body).not.toContain(user.hashedPan);

    // Another secret does not verify it: the signature is the webhook's own.
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(
        message!.body,
        headersOf(message!),
      ),
    ).toThrow();

    const listed = await deliveryWhen(issuer, webhookId, (delivery) => delivery.status === 'succeeded');
    expect(listed).toMatchObject({
      deliveryId: message!.headers['webhook-id'],
      webhookId,
      eventType: 'receipt.available',
      attemptCount: 1,
      nextAttemptAt: null,
      attempts: [{ httpStatus: 200 }],
    });
    expect(JSON.stringify(listed)).not.toContain(secret);
  });

  it('delivers receipt.escrowed to the merchant that stored an escrowed receipt, and nothing to an issuer', async () => {
    const { merchant, issuer } = await parties();
    const merchantReceiver = await startReceiver();
    const issuerReceiver = await startReceiver();
    const { secret } = await registerWebhook(merchant, merchantReceiver.url, ['receipt.escrowed']);
    await registerWebhook(issuer, issuerReceiver.url);
    const unregisteredCard = newHashedPan();
    const body = await encrypt(merchant, unregisteredCard);

    const [message] = await received(merchantReceiver, 1);
    const event = new Webhook(secret).verify(message!.body, headersOf(message!)) as {
      type: string;
      data: Record<string, unknown>;
    };
    expect(event.type).toBe('receipt.escrowed');
    expect(Object.keys(event.data).sort()).toEqual(['createdAt', 'merchantId', 'receiptId', 'transactionId']);
    expect(event.data).toMatchObject({ receiptId: body.receiptId, transactionId: body.transactionId });
    expect(message!.body).not.toContain(unregisteredCard);
    expect(issuerReceiver.received).toEqual([]);
  });

  it('delivers receipt.available to the issuer when its user claims an escrowed receipt', async () => {
    const { merchant, issuer } = await parties();
    const receiver = await startReceiver();
    const { secret } = await registerWebhook(issuer, receiver.url);
    const hashedPan = newHashedPan();
    const at = '2026-11-21T09:15:00Z';
    const body = flattenedReceipt({ recipientHashedPan: hashedPan, transactionDate: at });
    expect((await stack.request('POST', '/api/v1/receipts/encrypt', { apiKey: merchant, body })).status).toBe(
      200,
    );
    // Registering the card releases nothing, so it raises nothing.
    const user = await onboardUser(stack, issuer, hashedPan);
    const claimed = await stack.request<Data<{ released: number }>>('POST', '/api/v1/receipts/claim', {
      apiKey: issuer,
      body: { userId: user.userId, transactions: [{ amount: 1548, currency: 'USD', transactionDate: at }] },
    });
    expect(claimed.json.data.released).toBe(1);

    const [message] = await received(receiver, 1);
    const event = new Webhook(secret).verify(message!.body, headersOf(message!)) as {
      type: string;
      data: Record<string, unknown>;
    };
    expect(event).toMatchObject({
      type: 'receipt.available',
      data: { receiptId: body.receiptId, userId: user.userId, keyId: user.keyId },
    });
    expect(receiver.received).toHaveLength(1);
  });

  it('delivers the events of receipts stored while the dispatcher was stopped once it runs again', async () => {
    const { merchant, issuer, user } = await parties();
    const receiver = await startReceiver();
    const { secret } = await registerWebhook(issuer, receiver.url);
    await stack.dispatcher.stop();
    const first = await encrypt(merchant, user.hashedPan);
    const second = await encrypt(merchant, user.hashedPan);
    expect(receiver.received).toEqual([]);

    stack.dispatcher.start();
    const messages = await received(receiver, 2);
    const ids = messages.map((message) => {
      const event = new Webhook(secret).verify(message.body, headersOf(message)) as {
        data: { receiptId: string };
      };
      return event.data.receiptId;
    });
    expect(ids.sort()).toEqual([first.receiptId, second.receiptId].sort());
  });

  it('signs with both secrets during a rotation overlap, and with the new one only after 24 h', async () => {
    const { merchant, issuer, user } = await parties();
    const receiver = await startReceiver();
    const { webhookId, secret: oldSecret } = await registerWebhook(issuer, receiver.url);
    const newSecret = await rotateSecret(issuer, webhookId);
    expect(newSecret).not.toBe(oldSecret);

    await encrypt(merchant, user.hashedPan);
    const [during] = await received(receiver, 1);
    expect(String(during!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    // Receivers still on the old secret and those already on the new one both accept it.
    expect(() => new Webhook(oldSecret).verify(during!.body, headersOf(during!))).not.toThrow();
    expect(() => new Webhook(newSecret).verify(during!.body, headersOf(during!))).not.toThrow();

    stack.clock.advance(24 * 3_600_000 + 1_000);
    await encrypt(merchant, user.hashedPan);
    const [, after] = await received(receiver, 2);
    expect(String(after!.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(signedBy(newSecret, after!)).toBe(true);
    expect(signedBy(oldSecret, after!)).toBe(false);
  });

  it('sends the event again with the same webhook-id after 500, 500, and stops at the 200', async () => {
    const { merchant, issuer, user } = await parties();
    const receiver = await startReceiver([500, 500]);
    const { webhookId, secret } = await registerWebhook(issuer, receiver.url);
    await encrypt(merchant, user.hashedPan);

    await received(receiver, 1);
    const afterFirst = await deliveryWhen(issuer, webhookId, (delivery) => delivery.attempts.length === 1);
    expect(afterFirst).toMatchObject({ status: 'pending', attemptCount: 1, attempts: [{ httpStatus: 500 }] });
    expect(Date.parse(afterFirst.nextAttemptAt!) - Date.parse(afterFirst.attempts[0]!.at)).toBe(5_000);

    stack.clock.advance(5_000);
    await received(receiver, 2);
    const afterSecond = await deliveryWhen(issuer, webhookId, (delivery) => delivery.attempts.length === 2);
    expect(afterSecond.status).toBe('pending');
    expect(Date.parse(afterSecond.nextAttemptAt!) - Date.parse(afterSecond.attempts[1]!.at)).toBe(300_000);

    stack.clock.advance(300_000);
    const messages = await received(receiver, 3);
    const done = await deliveryWhen(issuer, webhookId, (delivery) => delivery.status === 'succeeded');
    expect(done.attempts.map((attempt) => attempt.httpStatus)).toEqual([500, 500, 200]);
    expect(new Set(messages.map((message) => message.headers['webhook-id']))).toEqual(
      new Set([done.deliveryId]),
    );
    // The same body each time, freshly signed for its attempt's time.
    expect(new Set(messages.map((message) => message.body)).size).toBe(1);
    for (const message of messages) expect(signedBy(secret, message)).toBe(true);

    // Nothing more is sent for it, however long the sweeper runs: the dispatcher stopped, the sweeper
    // runs here once the clock has passed each step of the back-off schedule, and a claim's lease.
    await stack.dispatcher.stop();
    // The sweeper queues what is due; the queue (as the local stack's) makes the attempts.
    const delivery = deliveryDeps(stack.deps);
    const queue = new LocalDeliveryQueue(delivery);
    for (const delay of [...retryDelaysMs, CLAIM_LEASE_MS]) {
      stack.clock.advance(delay + CLAIM_LEASE_MS);
      await sweepDueDeliveries({ ...delivery, queue });
      await queue.drain();
    }
    const later = await deliveryWhen(issuer, webhookId, () => true);
    expect(later).toMatchObject({ status: 'succeeded', attemptCount: 3, nextAttemptAt: null });
    expect(receiver.received).toHaveLength(3);
  });

  it('does not call a webhook whose hostname resolves to a private address at delivery, and says why', async () => {
    const { merchant, issuer, user } = await parties();
    const receiver = await startReceiver();
    const hostname = 'hooks.issuer.test';
    hosts.set(hostname, ['127.0.0.1']);
    const port = new URL(receiver.url).port;
    const { webhookId } = await registerWebhook(issuer, `http://${hostname}:${port}/hooks/receipts`);
    // The name is re-pointed inside the network after registration (DNS rebinding).
    hosts.set(hostname, ['10.0.0.1']);
    await encrypt(merchant, user.hashedPan);

    const failed = await deliveryWhen(issuer, webhookId, (delivery) => delivery.status === 'failed');
    expect(failed.attempts).toHaveLength(1);
    expect(failed.attempts[0]!.error).toMatch(
      /^url_refused: .*private address: webhooks are sent to public unicast addresses only$/,
    );
    expect(failed.attempts[0]!.httpStatus).toBeUndefined();
    expect(receiver.received).toEqual([]);

    // Pointed back to the receiver, a retry reaches it through the checked address.
    hosts.set(hostname, ['127.0.0.1']);
    const retried = await stack.request<Data<Delivery>>(
      'POST',
      `/api/v1/webhooks/${webhookId}/deliveries/${failed.deliveryId}/retry`,
      { apiKey: issuer },
    );
    expect(retried.status).toBe(200);
    expect(retried.json.data).toMatchObject({ status: 'succeeded', attemptCount: 2 });
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.headers.host).toBe(`${hostname}:${port}`);
  });

  it('lists deliveries newest first with a cursor, and hides them and their retry from another client', async () => {
    const { merchant, issuer, user } = await parties();
    const receiver = await startReceiver();
    const { webhookId } = await registerWebhook(issuer, receiver.url);
    for (let i = 0; i < 3; i += 1) {
      await encrypt(merchant, user.hashedPan);
      // Distinct creation times, so "newest first" has one answer.
      stack.clock.advance(1_000);
    }
    await received(receiver, 3);

    const first = await deliveries(issuer, webhookId, '?limit=2');
    expect(first.status).toBe(200);
    expect(first.json.data.deliveries).toHaveLength(2);
    expect(first.json.data.nextCursor).toEqual(expect.any(String));
    const second = await deliveries(issuer, webhookId, `?limit=2&cursor=${first.json.data.nextCursor}`);
    expect(second.status).toBe(200);
    const all = [...first.json.data.deliveries, ...second.json.data.deliveries];
    expect(new Set(all.map((delivery) => delivery.deliveryId)).size).toBe(3);
    const times = all.map((delivery) => delivery.createdAt);
    expect(times).toEqual([...times].sort().reverse());

    const [newest] = first.json.data.deliveries;
    const other = (await stack.apiKey(['issuer'])).apiKey;
    const otherMerchant = (await stack.apiKey(['merchant'])).apiKey;
    for (const apiKey of [other, otherMerchant]) {
      expect((await deliveries(apiKey, webhookId)).status).toBe(404);
      const retry = await stack.request(
        'POST',
        `/api/v1/webhooks/${webhookId}/deliveries/${newest!.deliveryId}/retry`,
        {
          apiKey,
        },
      );
      expect(retry.status).toBe(404);
    }
    expect(receiver.received).toHaveLength(3);

    expect((await deliveries(issuer, webhookId, '?limit=0')).status).toBe(400);
    expect((await deliveries(issuer, 'wh_notanid')).status).toBe(400);

    // A retry of a succeeded delivery sends it again, same id.
    const retried = await stack.request<Data<Delivery>>(
      'POST',
      `/api/v1/webhooks/${webhookId}/deliveries/${newest!.deliveryId}/retry`,
      { apiKey: issuer },
    );
    expect(retried.status).toBe(200);
    expect(retried.json.data).toMatchObject({ status: 'succeeded', attemptCount: 2 });
    expect(receiver.received[3]!.headers['webhook-id']).toBe(newest!.deliveryId);
  });

  it("isolates destinations: a receiver that never answers delays none of another webhook's deliveries", async () => {
    // Issue 20, MEDIUM: a batch of first attempts waited for its slowest, so one client's webhook that
    // never answered held every other delivery until the attempt timed out (about 10 s per event). Now
    // attempts are queued per webhook: the second receiver gets each receipt's event while the first
    // still holds its first request open. The bound is that event, not a time: under the old batching,
    // receipts 2..5 reached the second receiver only after the first's request had been given up.
    const { merchant, issuer, user } = await parties();
    const held: ServerResponse[] = [];
    let abandoned = false;
    const hanging = createServer((request, response) => {
      request.resume();
      held.push(response);
      // The sender gave up (its attempt's timeout): the connection closes with nothing answered.
      response.on('close', () => {
        if (!response.writableEnded) abandoned = true;
      });
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    /** Each receipt's event at the fast receiver, and whether the hanging request was still open then. */
    const arrivals = new Map<string, { whileHeld: boolean }>();
    const fast = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        // The first receipt's event can reach this receiver before the other's request is even made.
        const whileHeld = !abandoned;
        response.writeHead(204).end();
        const { data } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          data: { receiptId: string };
        };
        arrivals.set(data.receiptId, { whileHeld });
      });
    });
    servers.push(fast);
    await new Promise<void>((resolve) => fast.listen(0, '127.0.0.1', resolve));
    const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    try {
      await registerWebhook(issuer, urlOf(hanging));
      await registerWebhook(issuer, urlOf(fast));
      const seen: { whileHeld: boolean }[] = [];
      for (let index = 0; index < 5; index += 1) {
        const { receiptId } = await encrypt(merchant, user.hashedPan);
        seen.push(
          await pollUntil(`the event of receipt ${index + 1}`, async () => arrivals.get(receiptId), {
            timeoutMs: patience(30_000),
            intervalMs: 10,
          }),
        );
      }
      // All five arrived while the first receiver held its first request, which the sender had not
      // given up; its later deliveries wait behind it, unsent: one webhook's attempts one at a time.
      expect(seen).toEqual(Array.from({ length: 5 }, () => ({ whileHeld: true })));
      expect(held).toHaveLength(1);
      expect(held[0]!.writableEnded).toBe(false);
    } finally {
      hanging.closeAllConnections();
      await new Promise((resolve) => hanging.close(resolve));
    }
  });

  it('hands out opaque cursors, and refuses with one code and message a cursor edited or made for another webhook', async () => {
    const merchant = (await stack.apiKey(['merchant'])).apiKey;
    const issuer = await stack.apiKey(['issuer']);
    const user = await onboardUser(stack, issuer.apiKey);
    const [receiver, otherReceiver] = [await startReceiver(), await startReceiver()];
    const { webhookId } = await registerWebhook(issuer.apiKey, receiver.url);
    const { webhookId: otherWebhookId } = await registerWebhook(issuer.apiKey, otherReceiver.url);
    for (let i = 0; i < 2; i += 1) {
      await encrypt(merchant, user.hashedPan);
      stack.clock.advance(1_000);
    }
    await received(receiver, 2);
    await received(otherReceiver, 2);

    const first = await deliveries(issuer.apiKey, webhookId, '?limit=1');
    const cursor = first.json.data.nextCursor!;
    const [newest] = first.json.data.deliveries;
    expectOpaque(cursor, [
      webhookId,
      issuer.clientId,
      newest!.deliveryId,
      newest!.createdAt,
      'webhookId',
      'deliveryId',
    ]);
    // Paging on with it works, and ends.
    const second = await deliveries(issuer.apiKey, webhookId, `?limit=1&cursor=${cursor}`);
    expect(second.status).toBe(200);
    expect(second.json.data.deliveries.map((delivery) => delivery.deliveryId)).not.toContain(
      newest!.deliveryId,
    );
    const last = second.json.data.nextCursor;
    if (last !== null) {
      const end = await deliveries(issuer.apiKey, webhookId, `?limit=1&cursor=${last}`);
      expect(end.json.data).toEqual({ deliveries: [], nextCursor: null });
    }

    const otherWebhooksCursor = (await deliveries(issuer.apiKey, otherWebhookId, '?limit=1')).json.data
      .nextCursor!;
    const inboxCursor = (
      await stack.request<Data<{ nextCursor: string }>>(
        'GET',
        `/api/v1/users/${user.userId}/receipts?limit=1`,
        { apiKey: issuer.apiKey },
      )
    ).json.data.nextCursor;
    const attempts: [webhook: string, cursor: string][] = [
      ...editedCursors(cursor).map((edited): [string, string] => [webhookId, edited]),
      // Made for another webhook of the same client, both ways round.
      [otherWebhookId, cursor],
      [webhookId, otherWebhooksCursor],
      // Another list's cursor, for the same client.
      [webhookId, inboxCursor],
      [webhookId, 'not-a-cursor'],
      [webhookId, ''],
      // The readable cursor this endpoint used to hand out.
      [
        webhookId,
        Buffer.from(JSON.stringify({ webhookId, deliveryId: newest!.deliveryId, createdAt: 'y' })).toString(
          'base64url',
        ),
      ],
      // Issue 20, LOW: a cursor with an empty field reached DynamoDB as an empty key and answered 500
      // (the readable cursor of the time); sealed with this list's own key and scope, and readable.
      [
        webhookId,
        await stack.deps.cursors.seal(
          { list: 'webhook-deliveries', resourceId: webhookId, clientId: issuer.clientId },
          { webhookId, deliveryId: '', createdAt: newest!.createdAt },
        ),
      ],
      [
        webhookId,
        Buffer.from(JSON.stringify({ webhookId, deliveryId: '', createdAt: newest!.createdAt })).toString(
          'base64url',
        ),
      ],
    ];
    const bodies = new Set<string>();
    for (const [webhook, attempt] of attempts) {
      const refused = await stack.request<{ error: { code: string } }>(
        'GET',
        `/api/v1/webhooks/${webhook}/deliveries?cursor=${encodeURIComponent(attempt)}`,
        { apiKey: issuer.apiKey },
      );
      expect([refused.status, refused.json.error.code]).toEqual([400, 'INVALID_CURSOR']);
      bodies.add(JSON.stringify(withoutRequestIdentity(refused.text)));
    }
    expect(bodies.size).toBe(1);
  });

  it('marks a delivery failed after the whole schedule, and a retry makes it pending with a fresh one', async () => {
    const { merchant, issuer, user } = await parties();
    const receiver = await startReceiver(Array.from({ length: 9 }, () => 503));
    const { webhookId } = await registerWebhook(issuer, receiver.url);
    await encrypt(merchant, user.hashedPan);
    await deliveryWhen(
      issuer,
      webhookId,
      (delivery) => delivery.attemptCount === 1 && delivery.attempts.length === 1,
    );

    const { value: failed, text: logs } = await logsWhile(async () => {
      for (const [index, delay] of retryDelaysMs.entries()) {
        stack.clock.advance(delay);
        await deliveryWhen(issuer, webhookId, (delivery) => delivery.attempts.length === index + 2);
      }
      return deliveryWhen(issuer, webhookId, (delivery) => delivery.status === 'failed');
    });
    // Counted once, for the alarm on failed deliveries: one count per delivery given up (other tests'
    // deliveries reach the end of their schedules as this one moves the shared clock a day on), and
    // this delivery given up once.
    const givenUp = logs
      .split('\n')
      .filter((line) => line.includes('"message":"webhook delivery failed"'))
      .map((line) => JSON.parse(line) as { webhookId?: string });
    expect(givenUp.filter((line) => line.webhookId === webhookId)).toHaveLength(1);
    expect(logs.match(/"metric":"WebhookDeliveriesFailed"/g)).toHaveLength(givenUp.length);
    expect(failed.attemptCount).toBe(8);
    expect(failed.nextAttemptAt).toBeNull();
    expect(failed.attempts.every((attempt) => attempt.httpStatus === 503)).toBe(true);
    const spanMs = Date.parse(failed.attempts.at(-1)!.at) - Date.parse(failed.attempts[0]!.at);
    expect(spanMs).toBeGreaterThanOrEqual(24 * 3_600_000);
    expect(receiver.received).toHaveLength(8);

    // The receiver still fails once more: the retry leaves it pending on a fresh schedule, 5 s away.
    const retried = await stack.request<Data<Delivery>>(
      'POST',
      `/api/v1/webhooks/${webhookId}/deliveries/${failed.deliveryId}/retry`,
      { apiKey: issuer },
    );
    expect(retried.status).toBe(200);
    expect(retried.json.data).toMatchObject({ status: 'pending', attemptCount: 9 });
    expect(
      Date.parse(retried.json.data.nextAttemptAt!) - Date.parse(retried.json.data.attempts.at(-1)!.at),
    ).toBe(5_000);
    stack.clock.advance(5_000);
    const recovered = await deliveryWhen(issuer, webhookId, (delivery) => delivery.status === 'succeeded');
    expect(recovered.attemptCount).toBe(10);
  });
});
