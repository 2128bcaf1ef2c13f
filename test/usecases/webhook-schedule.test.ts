import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { Caller } from '../../lib/api-keys/authenticator.js';
import { ConflictError, NotFoundError } from '../../lib/kernel/errors.js';
import { listDeliveries, retryDelivery } from '../../lib/webhooks/deliveries-api.js';
import { deliveryDeps } from '../../lib/webhooks/delivery-deps.js';
import { dispatchReceiptStream } from '../../lib/webhooks/dispatch.js';
import type { ReceiptStreamRecord } from '../../lib/webhooks/events.js';
import { QUEUE_LEASE_MS, type DeliveryMessage, type DispatchDeps } from '../../lib/webhooks/queue.js';
import { LocalDeliveryQueue } from '../../local/delivery-queue.js';
import { createWebhook, deleteWebhook } from '../../lib/webhooks/registration.js';
import type { DeliveryDeps } from '../../lib/webhooks/send.js';
import { CLAIM_LEASE_MS } from '../../lib/webhooks/send.js';
import { sweepDueDeliveries } from '../../lib/webhooks/sweep.js';
import { pollUntil } from '../support/processes.js';
import type { SQSEvent } from 'aws-lambda';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHandler as createDeliverHandler } from '../../functions/webhooks/webhook-deliver/handler.js';
import { deliveryQueue } from '../../functions/webhooks/webhook-deliver/function.js';
import {
  newDelivery,
  type DeliveryRecord,
  type WebhookDeliveryRepository,
} from '../../lib/db/webhook-deliveries.js';
import { receiptStream, request, startUseCases, storeReceipt, type UseCases } from './support.js';

/**
 * When a webhook delivery is attempted: at once when its receipt is stored, then by the sweeper on
 * the documented back-off schedule until a 2xx or the last attempt, never twice for one due attempt,
 * and again on a manual retry. The receiver is a real HTTP server on loopback; time is the injected
 * clock. Tests go through the dispatcher's, sweeper's and deliveries API's entry points and read the
 * deliveries as the API lists them, so a dispatcher reworked inside keeps them as they are.
 */
const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/** docs/API.md: retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, eight attempts in all. */
const SCHEDULE = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR];

interface Receiver {
  url: string;
  received: { headers: IncomingHttpHeaders; body: string }[];
  /** Answers in order; 'hold' keeps the request open until `release`. When empty: `otherwise`. */
  answers: (number | 'hold')[];
  otherwise: number;
  release(status: number): void;
}

const servers: Server[] = [];

async function startReceiver(otherwise: number, answers: (number | 'hold')[] = []): Promise<Receiver> {
  const held: ServerResponse[] = [];
  const receiver: Receiver = {
    url: '',
    received: [],
    answers,
    otherwise,
    release(status) {
      const response = held.shift();
      if (!response) throw new Error('no request is held');
      response.writeHead(status).end();
    },
  };
  const server = createServer((incoming, response) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      receiver.received.push({ headers: incoming.headers, body: Buffer.concat(chunks).toString('utf8') });
      const answer = receiver.answers.shift() ?? receiver.otherwise;
      if (answer === 'hold') held.push(response);
      else response.writeHead(answer).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return receiver;
}

/** Names the tests point at addresses of their choosing, in place of DNS. */
const hosts = new Map<string, string[]>();

describe('webhook scheduling: when deliveries are attempted, and how often', () => {
  let useCases: UseCases;
  let stream: ReturnType<typeof receiptStream>;
  let deps: DeliveryDeps;
  /** The local stand-in for the SQS delivery queue: the dispatcher and sweeper queue, it attempts. */
  let dispatchDeps: DispatchDeps;

  beforeAll(async () => {
    useCases = await startUseCases({
      resolveHost: async (hostname) => {
        const addresses = hosts.get(hostname);
        if (!addresses) throw new Error(`no test address for ${hostname}`);
        return addresses;
      },
    });
    stream = receiptStream(useCases);
    deps = deliveryDeps(useCases.deps);
    dispatchDeps = { ...deps, queue: new LocalDeliveryQueue(deps) };
  });

  afterEach(async () => {
    await Promise.all(
      servers.splice(0).map((server) => {
        server.closeAllConnections();
        return new Promise((resolve) => server.close(resolve));
      }),
    );
  });

  afterAll(async () => {
    stream?.close();
    await useCases?.close();
  });

  /** A sweep, and the attempts it queued made. */
  const sweep = async () => {
    const swept = await sweepDueDeliveries(dispatchDeps);
    await (dispatchDeps.queue as LocalDeliveryQueue).drain();
    return swept;
  };
  /**
   * The stream's records through the dispatcher, as the event source mapping hands them over, and the
   * first attempts it queued made. Nothing failed: every record was processed.
   */
  const dispatch = async (records: ReceiptStreamRecord[]) => {
    const { batchItemFailures } = await dispatchReceiptStream(
      { Records: records as Parameters<typeof dispatchReceiptStream>[0]['Records'] },
      dispatchDeps,
    );
    expect(batchItemFailures).toEqual([]);
    await (dispatchDeps.queue as LocalDeliveryQueue).drain();
  };
  const advance = (ms: number) => useCases.clock.advance(ms);

  /** A merchant of its own with one webhook for receipt.escrowed at `url`. */
  async function merchantWithWebhook(url: string) {
    const merchant = await useCases.caller(['merchant']);
    const webhook = await createWebhook(useCases.deps, {
      url,
      events: ['receipt.escrowed'],
      caller: merchant,
      requestId: request().requestId,
    });
    return { merchant, webhook };
  }

  /**
   * That merchant with one receipt escrowed: the stream's record goes through the dispatcher, which
   * makes the first attempt.
   */
  async function escrowedDelivery(url: string) {
    const { merchant, webhook } = await merchantWithWebhook(url);
    await storeReceipt(useCases.deps, merchant, undefined);
    await dispatch(await stream.next());
    return { merchant, webhook };
  }

  /** The webhook's one delivery, as GET /webhooks/{webhookId}/deliveries shows it. */
  async function deliveryOf(merchant: Caller, webhookId: string) {
    // The service's deps, as the list route hands them over (the cursor codec with them, where deps have one).
    const { repos } = useCases.deps;
    const { deliveries } = await listDeliveries(
      { ...useCases.deps, webhooks: repos.webhooks, deliveries: repos.webhookDeliveries },
      { webhookId, clientId: merchant.clientId, limit: 10 },
    );
    expect(deliveries).toHaveLength(1);
    return deliveries[0]!;
  }

  const waitFor = (receiver: Receiver, count: number) =>
    pollUntil(
      `${count} request(s) at the receiver`,
      async () => receiver.received.length >= count || undefined,
      {
        timeoutMs: 10_000,
        intervalMs: 10,
      },
    );

  /** Sweeps just before the next attempt is due (nothing is sent), then when it is (one is). */
  async function sweepThrough(receiver: Receiver, delays: readonly number[]): Promise<void> {
    for (const delay of delays) {
      const before = receiver.received.length;
      advance(delay - SECOND);
      await sweep();
      expect(receiver.received).toHaveLength(before);
      advance(SECOND);
      await sweep();
      expect(receiver.received).toHaveLength(before + 1);
    }
  }

  it('retries a failed delivery on the documented schedule: not before each attempt is due, and once when it is', async () => {
    const receiver = await startReceiver(503);
    const { merchant, webhook } = await escrowedDelivery(receiver.url);
    expect(receiver.received).toHaveLength(1);

    for (const [index, delay] of SCHEDULE.entries()) {
      const pending = await deliveryOf(merchant, webhook.webhookId);
      expect(pending).toMatchObject({ status: 'pending', attemptCount: index + 1 });
      expect(Date.parse(pending.nextAttemptAt!) - Date.parse(pending.attempts.at(-1)!.at)).toBe(delay);
      await sweepThrough(receiver, [delay]);
    }

    // The same event each time, under the same webhook-id.
    expect(new Set(receiver.received.map((message) => message.headers['webhook-id'])).size).toBe(1);
    expect(new Set(receiver.received.map((message) => message.body)).size).toBe(1);
    const schedule = SCHEDULE.reduce((sum, delay) => sum + delay, 0);
    expect(schedule).toBeGreaterThanOrEqual(24 * HOUR);
  });

  it('gives up after the eighth attempt: failed, nothing due, and no sweep sends it again', async () => {
    const receiver = await startReceiver(503);
    const { merchant, webhook } = await escrowedDelivery(receiver.url);
    await sweepThrough(receiver, SCHEDULE);

    const failed = await deliveryOf(merchant, webhook.webhookId);
    expect(failed).toMatchObject({ status: 'failed', attemptCount: 8, nextAttemptAt: null });
    expect(failed.attempts.map((attempt) => attempt.httpStatus)).toEqual(Array(8).fill(503));
    for (let day = 0; day < 3; day += 1) {
      advance(24 * HOUR);
      await sweep();
    }
    expect(receiver.received).toHaveLength(8);
  });

  it('ends the schedule at the first 2xx: no sweep sends a delivered event again', async () => {
    const receiver = await startReceiver(204, [500]);
    const { merchant, webhook } = await escrowedDelivery(receiver.url);
    await sweepThrough(receiver, [SCHEDULE[0]!]);

    expect(await deliveryOf(merchant, webhook.webhookId)).toMatchObject({
      status: 'succeeded',
      attemptCount: 2,
      nextAttemptAt: null,
    });
    for (const delay of [...SCHEDULE, CLAIM_LEASE_MS]) {
      advance(delay);
      await sweep();
    }
    expect(receiver.received).toHaveLength(2);
  });

  /** The first-attempt messages the dispatcher queues for the stream's next records, held here. */
  async function queuedFirstAttempts(): Promise<DeliveryMessage[]> {
    const held: DeliveryMessage[] = [];
    const { batchItemFailures } = await dispatchReceiptStream(
      { Records: (await stream.next()) as Parameters<typeof dispatchReceiptStream>[0]['Records'] },
      { ...deps, queue: { enqueue: async (messages) => void held.push(...messages) } },
    );
    expect(batchItemFailures).toEqual([]);
    return held;
  }

  /**
   * Delivery's deps whose deliveries table refuses the first `times` record writes, as an unreachable
   * DynamoDB would (the sender's outcome, or the dead-letter path's record); only `webhookId`'s if given.
   */
  function unrecordable(times: number, webhookId?: string): DeliveryDeps {
    const table = deps.deliveries;
    let left = times;
    const deliveries = Object.assign(Object.create(table) as WebhookDeliveryRepository, {
      create: async (record: DeliveryRecord) => {
        if ((webhookId === undefined || record.webhookId === webhookId) && left-- > 0)
          throw Object.assign(new Error('DynamoDB unreachable'), { name: 'ServiceUnavailable' });
        return table.create(record);
      },
    });
    return { ...deps, deliveries };
  }

  /** The webhook's deliveries as GET /webhooks/{webhookId}/deliveries lists them. */
  async function listed(merchant: Caller, webhookId: string) {
    const { repos } = useCases.deps;
    return (
      await listDeliveries(
        { ...useCases.deps, webhooks: repos.webhooks, deliveries: repos.webhookDeliveries },
        { webhookId, clientId: merchant.clientId, limit: 10 },
      )
    ).deliveries;
  }

  it("writes nothing for a stored receipt's delivery until its first attempt is made: the queued message carries it, and one record is written with the outcome", async () => {
    const receiver = await startReceiver(200);
    const { merchant, webhook } = await merchantWithWebhook(receiver.url);
    await storeReceipt(useCases.deps, merchant, undefined);
    const messages = await queuedFirstAttempts();
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ attemptCount: 0, first: { eventType: 'receipt.escrowed' } });

    // Queued, not attempted: not listed, and nothing is due for a sweep.
    expect(await listed(merchant, webhook.webhookId)).toEqual([]);
    advance(QUEUE_LEASE_MS);
    expect(await sweep()).toEqual({ due: 0, queued: 0 });

    const queue = new LocalDeliveryQueue(deps);
    await queue.enqueue(messages);
    await queue.drain();
    expect(receiver.received).toHaveLength(1);
    expect(await listed(merchant, webhook.webhookId)).toMatchObject([
      { status: 'succeeded', attemptCount: 1, nextAttemptAt: null, attempts: [{ httpStatus: 200 }] },
    ]);
  });

  it('makes a first attempt again when its message comes back, its sender having died before recording it: not before the visibility timeout, then once, and records it', async () => {
    const receiver = await startReceiver(200);
    const { merchant, webhook } = await merchantWithWebhook(receiver.url);
    await storeReceipt(useCases.deps, merchant, undefined);
    const queue = new LocalDeliveryQueue(unrecordable(1));
    await queue.enqueue(await queuedFirstAttempts());
    await queue.drain();
    expect(receiver.received).toHaveLength(1);
    expect(await listed(merchant, webhook.webhookId)).toEqual([]);

    advance(deliveryQueue.visibilityTimeoutSeconds * SECOND - SECOND);
    await queue.redeliver();
    await queue.drain();
    expect(receiver.received).toHaveLength(1);

    advance(SECOND);
    await queue.redeliver();
    await queue.drain();
    expect(receiver.received).toHaveLength(2);
    expect(new Set(receiver.received.map((message) => message.headers['webhook-id'])).size).toBe(1);
    expect(await listed(merchant, webhook.webhookId)).toMatchObject([
      { status: 'succeeded', attemptCount: 1 },
    ]);
    expect(queue.size).toBe(0);
  });

  it("holds a webhook's later messages behind a first attempt that comes back, and keeps other webhooks' going", async () => {
    const blocked = await startReceiver(200);
    const other = await startReceiver(200);
    const held = await merchantWithWebhook(blocked.url);
    const served = await merchantWithWebhook(other.url);
    await storeReceipt(useCases.deps, held.merchant, undefined);
    await storeReceipt(useCases.deps, held.merchant, undefined);
    await storeReceipt(useCases.deps, served.merchant, undefined);
    const queue = new LocalDeliveryQueue(unrecordable(1, held.webhook.webhookId));
    await queue.enqueue(await queuedFirstAttempts());
    await queue.drain();
    // The first of `held`'s two failed to record and holds its group; `served`'s went through.
    expect(blocked.received).toHaveLength(1);
    expect(other.received).toHaveLength(1);

    advance(deliveryQueue.visibilityTimeoutSeconds * SECOND);
    await queue.redeliver();
    await queue.drain();
    expect(blocked.received).toHaveLength(3);
    expect((await listed(held.merchant, held.webhook.webhookId)).map((d) => d.status)).toEqual([
      'succeeded',
      'succeeded',
    ]);
  });

  it('records a first attempt the queue gave up on (its outcome never written, maxReceiveCount times) due, from the dead-letter queue, and the sweeper sends it', async () => {
    const receiver = await startReceiver(200);
    const { merchant, webhook } = await merchantWithWebhook(receiver.url);
    await storeReceipt(useCases.deps, merchant, undefined);
    // Every outcome write fails, and the dead-letter path's first try too: nothing is lost.
    const queue = new LocalDeliveryQueue(unrecordable(deliveryQueue.maxReceiveCount + 1));
    await queue.enqueue(await queuedFirstAttempts());
    for (let receive = 0; receive < deliveryQueue.maxReceiveCount; receive += 1) {
      await queue.redeliver();
      await queue.drain();
      advance(deliveryQueue.visibilityTimeoutSeconds * SECOND);
    }
    expect(receiver.received).toHaveLength(deliveryQueue.maxReceiveCount);
    expect(await listed(merchant, webhook.webhookId)).toEqual([]);
    expect(queue.size).toBe(1);

    await queue.redeliver();
    expect(queue.size).toBe(0);
    expect(await listed(merchant, webhook.webhookId)).toMatchObject([
      { status: 'pending', attemptCount: 0, attempts: [] },
    ]);
    expect(await sweep()).toEqual({ due: 1, queued: 1 });
    expect(receiver.received).toHaveLength(deliveryQueue.maxReceiveCount + 1);
    expect(await listed(merchant, webhook.webhookId)).toMatchObject([
      { status: 'succeeded', attemptCount: 1 },
    ]);
  });

  it("the deliverer's handler records a dead-lettered first attempt due, sending nothing, and attempts one from the delivery queue, by the queue each came from", async () => {
    const receiver = await startReceiver(200);
    const { merchant, webhook } = await merchantWithWebhook(receiver.url);
    await storeReceipt(useCases.deps, merchant, undefined);
    const [message] = await queuedFirstAttempts();
    const handle = createDeliverHandler(deps);
    const from = (queueName: string) =>
      ({
        Records: [
          {
            messageId: queueName,
            body: JSON.stringify(message),
            eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:receipt-service-test-${queueName}`,
          },
        ],
      }) as unknown as SQSEvent;

    expect(await handle(from(deliveryQueue.deadLetterQueueName))).toEqual({ batchItemFailures: [] });
    expect(receiver.received).toHaveLength(0);
    expect(await listed(merchant, webhook.webhookId)).toMatchObject([{ status: 'pending', attemptCount: 0 }]);

    expect(await handle(from('webhook-deliveries.fifo'))).toEqual({ batchItemFailures: [] });
    expect(receiver.received).toHaveLength(1);
    expect(await listed(merchant, webhook.webhookId)).toMatchObject([
      { status: 'succeeded', attemptCount: 1 },
    ]);
  });

  it("keeps the local queue's messages across a restart of its process, as SQS keeps them: a first attempt not recorded is made by the next process", async () => {
    const receiver = await startReceiver(200);
    const { merchant, webhook } = await merchantWithWebhook(receiver.url);
    await storeReceipt(useCases.deps, merchant, undefined);
    const file = join(await mkdtemp(join(tmpdir(), 'delivery-queue-')), 'delivery-queue.json');
    const before = new LocalDeliveryQueue(unrecordable(1), undefined, file);
    await before.enqueue(await queuedFirstAttempts());
    await before.drain();
    expect(receiver.received).toHaveLength(1);
    expect(await listed(merchant, webhook.webhookId)).toEqual([]);

    // The process is gone with the message unacknowledged: the next one reads it back.
    const after = new LocalDeliveryQueue(deps, undefined, file);
    await after.restore();
    await after.drain();
    expect(receiver.received).toHaveLength(2);
    expect(await listed(merchant, webhook.webhookId)).toMatchObject([
      { status: 'succeeded', attemptCount: 1 },
    ]);
    const again = new LocalDeliveryQueue(deps, undefined, file);
    await again.restore();
    expect(again.size).toBe(0);
  });

  it("sends nothing for a copy of a first attempt's message handled after its outcome, past the queue's deduplication window", async () => {
    const receiver = await startReceiver(503);
    const { merchant, webhook } = await merchantWithWebhook(receiver.url);
    await storeReceipt(useCases.deps, merchant, undefined);
    const messages = await queuedFirstAttempts();
    const queue = new LocalDeliveryQueue(deps);
    await queue.enqueue(messages);
    await queue.drain();
    advance(6 * MINUTE);
    await queue.enqueue(messages);
    await queue.drain();

    expect(receiver.received).toHaveLength(1);
    expect(await listed(merchant, webhook.webhookId)).toMatchObject([{ status: 'pending', attemptCount: 1 }]);
  });

  it('claims a first attempt whose delivery the previous release wrote pending before queueing it, and sends it once', async () => {
    const receiver = await startReceiver(200);
    const { merchant, webhook } = await merchantWithWebhook(receiver.url);
    await storeReceipt(useCases.deps, merchant, undefined);
    const [message] = await queuedFirstAttempts();
    // As the dispatcher wrote it before this release: pending, due at the queue lease.
    const now = useCases.clock.now();
    await deps.deliveries.create(
      newDelivery(
        { webhookId: message!.webhookId, deliveryId: message!.deliveryId, ...message!.first! },
        now,
        new Date(now.getTime() + QUEUE_LEASE_MS),
      ),
    );
    const queue = new LocalDeliveryQueue(deps);
    await queue.enqueue([message!]);
    await queue.drain();

    expect(receiver.received).toHaveLength(1);
    expect(await listed(merchant, webhook.webhookId)).toMatchObject([
      { status: 'succeeded', attemptCount: 1 },
    ]);
  });

  it('sends a due attempt once however many sweeps run at the same moment', async () => {
    const receiver = await startReceiver(503);
    const { merchant, webhook } = await escrowedDelivery(receiver.url);
    advance(SCHEDULE[0]!);

    await Promise.all([sweep(), sweep(), sweep(), sweep()]);

    expect(receiver.received).toHaveLength(2);
    expect(await deliveryOf(merchant, webhook.webhookId)).toMatchObject({
      status: 'pending',
      attemptCount: 2,
    });
  });

  it("leaves an attempt under way to its sender until the lease runs out; then it is sent again, and the first sender's late answer is not recorded over the new one", async () => {
    const receiver = await startReceiver(503, [503, 'hold', 200]);
    const { merchant, webhook } = await escrowedDelivery(receiver.url);
    advance(SCHEDULE[0]!);

    // The sender that hangs is a consumer of its own (in AWS another invocation of the delivery
    // function): the queue hands a webhook's attempts to one consumer at a time, in order.
    const stuck = new LocalDeliveryQueue(deps);
    const slow = sweepDueDeliveries({ ...deps, queue: stuck }).then(() => stuck.drain());
    await waitFor(receiver, 2);
    advance(CLAIM_LEASE_MS - SECOND);
    await sweep();
    expect(receiver.received).toHaveLength(2);

    // The sender is taken for dead once its lease has passed: another sweep sends the attempt.
    advance(SECOND);
    await sweep();
    expect(receiver.received).toHaveLength(3);
    receiver.release(500);
    await slow;

    const delivery = await deliveryOf(merchant, webhook.webhookId);
    expect(delivery).toMatchObject({ status: 'succeeded', nextAttemptAt: null });
    expect(delivery.attempts.map((attempt) => attempt.httpStatus)).toEqual([503, 200]);
  });

  it('retries a failed delivery by hand at once, on a fresh schedule starting at 5 s', async () => {
    const receiver = await startReceiver(503);
    const { merchant, webhook } = await escrowedDelivery(receiver.url);
    await sweepThrough(receiver, SCHEDULE);
    const { deliveryId } = await deliveryOf(merchant, webhook.webhookId);

    const retried = await retryDelivery(deps, {
      webhookId: webhook.webhookId,
      deliveryId,
      clientId: merchant.clientId,
    });

    expect(receiver.received).toHaveLength(9);
    expect(retried).toMatchObject({ status: 'pending', attemptCount: 9 });
    expect(Date.parse(retried.nextAttemptAt!) - Date.parse(retried.attempts.at(-1)!.at)).toBe(SCHEDULE[0]);
    receiver.otherwise = 200;
    await sweepThrough(receiver, [SCHEDULE[0]!]);
    expect(await deliveryOf(merchant, webhook.webhookId)).toMatchObject({
      status: 'succeeded',
      attemptCount: 10,
    });
  });

  it('refuses a manual retry while an attempt is under way, sending nothing; and another client cannot retry at all', async () => {
    const receiver = await startReceiver(503, [503, 'hold']);
    const { merchant, webhook } = await escrowedDelivery(receiver.url);
    const { deliveryId } = await deliveryOf(merchant, webhook.webhookId);
    advance(SCHEDULE[0]!);
    // The sender that hangs is a consumer of its own (in AWS another invocation of the delivery
    // function): the queue hands a webhook's attempts to one consumer at a time, in order.
    const stuck = new LocalDeliveryQueue(deps);
    const slow = sweepDueDeliveries({ ...deps, queue: stuck }).then(() => stuck.drain());
    await waitFor(receiver, 2);

    const input = { webhookId: webhook.webhookId, deliveryId, clientId: merchant.clientId };
    await expect(retryDelivery(deps, input)).rejects.toBeInstanceOf(ConflictError);
    const stranger = await useCases.caller(['merchant']);
    await expect(retryDelivery(deps, { ...input, clientId: stranger.clientId })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    expect(receiver.received).toHaveLength(2);
    receiver.release(200);
    await slow;
    expect(await deliveryOf(merchant, webhook.webhookId)).toMatchObject({
      status: 'succeeded',
      attemptCount: 2,
    });
  });

  it('creates one delivery per webhook and event however often the stream hands over the same record', async () => {
    const receiver = await startReceiver(200);
    const { merchant, webhook } = await merchantWithWebhook(receiver.url);
    await storeReceipt(useCases.deps, merchant, undefined);
    const records = await stream.next();

    await dispatch(records);
    await dispatch(records);

    expect(receiver.received).toHaveLength(1);
    expect(await deliveryOf(merchant, webhook.webhookId)).toMatchObject({
      status: 'succeeded',
      attemptCount: 1,
    });
  });

  it('lets no slow receiver hold the stream or another receiver: the batch is answered and the other webhook served while the slow one holds its first request', async () => {
    // Issue 40 (docs/SCALE.md, "The receipts stream"): a shard is read by up to four batches at once,
    // and a batch only writes deliveries and queues their attempts, so its time is never a receiver's.
    const slow = await startReceiver(200, ['hold']);
    const fast = await startReceiver(200);
    const held = await merchantWithWebhook(slow.url);
    const served = await merchantWithWebhook(fast.url);
    for (let index = 0; index < 3; index += 1) {
      await storeReceipt(useCases.deps, held.merchant, undefined);
      await storeReceipt(useCases.deps, served.merchant, undefined);
    }
    const records = await stream.next();
    expect(records).toHaveLength(6);

    // Answered, every record processed, with the slow receiver's request not yet answered (it is
    // released only below: a batch that waited for it would never return).
    const { batchItemFailures } = await dispatchReceiptStream(
      { Records: records as Parameters<typeof dispatchReceiptStream>[0]['Records'] },
      dispatchDeps,
    );
    expect(batchItemFailures).toEqual([]);
    await waitFor(fast, 3);
    await waitFor(slow, 1);
    // The other webhook has all three; the slow one its first, held, the other two queued behind it.
    expect(fast.received).toHaveLength(3);
    expect(slow.received).toHaveLength(1);

    slow.release(200);
    await (dispatchDeps.queue as LocalDeliveryQueue).drain();
    expect(slow.received).toHaveLength(3);
    for (const { merchant, webhook } of [held, served]) {
      const { repos } = useCases.deps;
      const { deliveries } = await listDeliveries(
        { ...useCases.deps, webhooks: repos.webhooks, deliveries: repos.webhookDeliveries },
        { webhookId: webhook.webhookId, clientId: merchant.clientId, limit: 10 },
      );
      expect(deliveries.map((delivery) => [delivery.status, delivery.attemptCount])).toEqual([
        ['succeeded', 1],
        ['succeeded', 1],
        ['succeeded', 1],
      ]);
    }
  });

  it('sends nothing more for a webhook deleted while its delivery was pending', async () => {
    const receiver = await startReceiver(503);
    const { merchant, webhook } = await escrowedDelivery(receiver.url);

    await deleteWebhook(useCases.deps, {
      webhookId: webhook.webhookId,
      caller: merchant,
      requestId: request().requestId,
    });
    for (const delay of SCHEDULE) {
      advance(delay);
      await sweep();
    }

    expect(receiver.received).toHaveLength(1);
  });

  it('fails a delivery at once, calling nothing, when its URL now resolves to a private address', async () => {
    const receiver = await startReceiver(200);
    const hostname = `hooks-${Date.now()}.merchant.test`;
    hosts.set(hostname, ['127.0.0.1']);
    const { merchant, webhook } = await merchantWithWebhook(
      `http://${hostname}:${new URL(receiver.url).port}/hooks`,
    );
    hosts.set(hostname, ['10.0.0.1']);
    await storeReceipt(useCases.deps, merchant, undefined);
    await dispatch(await stream.next());

    const failed = await deliveryOf(merchant, webhook.webhookId);
    expect(failed).toMatchObject({ status: 'failed', attemptCount: 1, nextAttemptAt: null });
    expect(failed.attempts[0]!.error).toMatch(
      /^url_refused: .*private address: webhooks are sent to public unicast addresses only$/,
    );
    advance(SCHEDULE[0]!);
    await sweep();
    expect(receiver.received).toEqual([]);
  });
});
