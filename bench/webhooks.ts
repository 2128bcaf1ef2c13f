import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createApiKey } from '../scripts/admin/api-keys.js';
import type { Role } from '../lib/kernel/route.js';
import { startLocalStack, type LocalStack } from '../local/stack.js';
import { DEFAULT_DISPATCHER_INTERVAL_MS } from '../local/stream-poller.js';
import { printTable, type TargetCheck } from './lib/report.js';
import { encryptBody, isRecord, onboardUser, post, withIds, type User } from './lib/setup.js';
import { percentile, round } from './lib/stats.js';

/**
 * Webhook delivery on the local stack, the same code as in AWS: a receipt stored through
 * receipts/encrypt reaches the receipts stream, the dispatcher (local/stream-poller.ts, polling as
 * `npm start` does) writes the delivery and POSTs it, signed, to a receiver on 127.0.0.1. Measured:
 * from the encrypt response to the webhook's arrival, with 1 and with 16 producers each waiting for
 * its webhook before the next receipt. The floor is a bare HTTP round trip to the same receiver at
 * one connection, measured in the same run; the poll interval bounds what lies between the two.
 * Then the inbox (GET /api/v1/users/{userId}/receipts) at one connection.
 */

export interface WebhookBenchOptions {
  /** Receipts per producer. */
  receiptsPerProducer: { single: number; concurrent: number };
  concurrentProducers: number;
  floorRequests: number;
  inboxRequests: number;
  /** The local dispatcher's poll interval: the stack's own default unless set. */
  dispatcherIntervalMs?: number;
}

interface Distribution {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface WebhookBenchResult {
  options: WebhookBenchOptions;
  floorRoundTrip: Distribution;
  storedToReceived: { producers1: Distribution; producers16: Distribution };
  inboxList: Distribution;
  targets: TargetCheck[];
}

const distribution = (values: readonly number[]): Distribution => ({
  samples: values.length,
  p50Ms: round(percentile(values, 50), 2),
  p99Ms: round(percentile(values, 99), 2),
  maxMs: round(Math.max(...values), 2),
});

/** A receiver that answers 204 and resolves whoever waits for a receipt's event. */
async function startReceiver(): Promise<{
  url: string;
  server: Server;
  arrival(receiptId: string): Promise<number>;
}> {
  const waiting = new Map<string, (at: number) => void>();
  const arrived = new Map<string, number>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = performance.now();
      response.writeHead(204).end();
      if (chunks.length === 0) return;
      const event: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      const data = isRecord(event) && isRecord(event.data) ? event.data : {};
      const receiptId = typeof data.receiptId === 'string' ? data.receiptId : '';
      const resolve = waiting.get(receiptId);
      if (resolve) resolve(at);
      else arrived.set(receiptId, at);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    server,
    arrival: (receiptId) => {
      const at = arrived.get(receiptId);
      if (at !== undefined) return Promise.resolve(at);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no webhook for ${receiptId} within 30 s`)), 30_000);
        waiting.set(receiptId, (value) => {
          clearTimeout(timer);
          resolve(value);
        });
      });
    },
  };
}

async function apiKey(stack: LocalStack, roles: Role[]): Promise<string> {
  const created = await createApiKey(
    { repository: stack.deps.repos.apiKeys, now: () => stack.deps.clock.now() },
    { name: `bench ${roles.join('+')}`, roles, tier: 'enterprise' },
  );
  return created.apiKey;
}

export async function runWebhookBench(options: WebhookBenchOptions): Promise<WebhookBenchResult> {
  const receiver = await startReceiver();
  const stack = await startLocalStack({
    inMemory: true,
    port: 0,
    logLevel: 'WARN',
    ...(options.dispatcherIntervalMs ? { dispatcherIntervalMs: options.dispatcherIntervalMs } : {}),
  });
  try {
    const merchant = await apiKey(stack, ['merchant']);
    const issuer = await apiKey(stack, ['issuer']);
    const created = await fetch(`${stack.url}/api/v1/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': issuer },
      body: JSON.stringify({ url: receiver.url, events: ['receipt.available'] }),
    });
    if (created.status !== 201) throw new Error(`webhook registration answered ${created.status}`);
    const users = await Promise.all(
      Array.from({ length: options.concurrentProducers }, () => onboardUser(stack.url, issuer)),
    );

    // The floor: the same receiver, one bare POST at a time.
    const floor: number[] = [];
    for (let i = 0; i < options.floorRequests; i += 1) {
      const start = performance.now();
      const reply = await fetch(receiver.url, { method: 'POST', body: '' });
      await reply.arrayBuffer();
      floor.push(performance.now() - start);
    }

    const produce = async (user: User, count: number, into: number[]) => {
      for (let i = 0; i < count; i += 1) {
        const body = withIds(encryptBody(user)) as { receipt: { receiptId: string } };
        await post(stack.url, '/api/v1/receipts/encrypt', merchant, body);
        const stored = performance.now();
        const arrived = await receiver.arrival(body.receipt.receiptId);
        // The webhook can beat the response back to the producer: that is zero wait, not less.
        into.push(Math.max(0, arrived - stored));
      }
    };
    // Warm-up: the first receipt pays for module loading and the stream's first iterator.
    await produce(users[0] as User, 3, []);
    const single: number[] = [];
    await produce(users[0] as User, options.receiptsPerProducer.single, single);
    const concurrent: number[] = [];
    await Promise.all(users.map((user) => produce(user, options.receiptsPerProducer.concurrent, concurrent)));

    const inbox: number[] = [];
    const inboxUser = users[0] as User;
    for (let i = 0; i < options.inboxRequests; i += 1) {
      const start = performance.now();
      const reply = await fetch(`${stack.url}/api/v1/users/${inboxUser.userId}/receipts?limit=25`, {
        headers: { 'x-api-key': issuer },
      });
      await reply.arrayBuffer();
      if (reply.status !== 200) throw new Error(`inbox answered ${reply.status}`);
      inbox.push(performance.now() - start);
    }

    const result = {
      floorRoundTrip: distribution(floor),
      storedToReceived: { producers1: distribution(single), producers16: distribution(concurrent) },
      inboxList: distribution(inbox),
    };
    const interval = options.dispatcherIntervalMs ?? DEFAULT_DISPATCHER_INTERVAL_MS;
    printTable(
      `Receipt stored → webhook received (local stack, dispatcher poll interval ${interval} ms), and the floor`,
      ['measurement', 'samples', 'p50 ms', 'p99 ms', 'max ms'],
      [
        ['bare HTTP round trip to the receiver (floor)', ...Object.values(result.floorRoundTrip)],
        ['stored → received, 1 producer', ...Object.values(result.storedToReceived.producers1)],
        [
          `stored → received, ${options.concurrentProducers} producers`,
          ...Object.values(result.storedToReceived.producers16),
        ],
        ['GET users/{userId}/receipts, 1 connection', ...Object.values(result.inboxList)],
      ],
    );
    const targets: TargetCheck[] = [
      {
        section: 'webhooks',
        target: 'stored → webhook received, p50 / p99 (1 producer)',
        measured: `${result.storedToReceived.producers1.p50Ms} / ${result.storedToReceived.producers1.p99Ms} ms (floor ${result.floorRoundTrip.p50Ms} / ${result.floorRoundTrip.p99Ms} ms)`,
        met: null,
        informational: true,
      },
      {
        section: 'webhooks',
        target: `stored → webhook received, p50 / p99 (${options.concurrentProducers} producers)`,
        measured: `${result.storedToReceived.producers16.p50Ms} / ${result.storedToReceived.producers16.p99Ms} ms`,
        met: null,
        informational: true,
      },
      {
        section: 'webhooks',
        target: 'inbox listing p99 at 1 connection',
        measured: `${result.inboxList.p99Ms} ms`,
        met: null,
        informational: true,
      },
    ];
    return { options, ...result, targets };
  } finally {
    await stack.close();
    await new Promise((resolve) => receiver.server.close(resolve));
  }
}
