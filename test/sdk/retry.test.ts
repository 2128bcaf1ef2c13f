import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  createClient,
  DEFAULT_TIMEOUT_MS,
  RequestTimeoutError,
  type ClientOptions,
  type RetryClock,
} from '@receipt-service/sdk';

/**
 * The SDK client's retry policy against a real HTTP server on loopback (node:http) that answers from
 * a script, on a clock that never waits: sleeping moves it on at once, and timeouts fire only when it
 * is moved past them. The server stamps each request with the clock's time.
 */

class ManualClock implements RetryClock {
  time = 0;
  readonly sleeps: number[] = [];
  private readonly timers = new Set<{ at: number; callback: () => void }>();
  now(): number {
    return this.time;
  }
  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.advance(ms);
  }
  setTimeout(callback: () => void, ms: number): () => void {
    const timer = { at: this.time + ms, callback };
    this.timers.add(timer);
    return () => this.timers.delete(timer);
  }
  get pendingTimers(): number {
    return this.timers.size;
  }
  advance(ms: number): void {
    this.time += ms;
    for (const timer of [...this.timers]) {
      if (timer.at <= this.time) {
        this.timers.delete(timer);
        timer.callback();
      }
    }
  }
}

/** What the server does with one request: answer, hang (the client's timeout must end it), or drop it. */
type Step = { status: number; headers?: Record<string, string> } | 'hang' | 'drop';

interface Seen {
  method: string;
  path: string;
  at: number;
  idempotencyKey: string | undefined;
  body: string;
  /** The client closed the connection before any answer. */
  abandoned: boolean;
}

let server: Server;
let baseUrl: string;
let clock: ManualClock;
let script: Step[];
let seen: Seen[];

function answer(request: IncomingMessage, response: ServerResponse, body: string): void {
  const step = script.shift() ?? { status: 500 };
  const record: Seen = {
    method: request.method ?? '',
    path: request.url ?? '',
    at: clock.now(),
    idempotencyKey: request.headers['idempotency-key'] as string | undefined,
    body,
    abandoned: false,
  };
  seen.push(record);
  if (step === 'drop') {
    request.socket.destroy();
    return;
  }
  if (step === 'hang') {
    response.on('close', () => (record.abandoned = !response.writableEnded));
    // The attempt is on the wire and unanswered: move the clock to its timeout.
    clock.advance(DEFAULT_TIMEOUT_MS);
    return;
  }
  response.writeHead(step.status, { 'Content-Type': 'application/json', ...step.headers });
  response.end(JSON.stringify({ success: step.status < 400, attempt: seen.length }));
}

beforeAll(async () => {
  server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => answer(request, response, body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  clock = new ManualClock();
  script = [];
  seen = [];
});

const client = (options: Partial<ClientOptions> = {}) => createClient({ baseUrl, clock, ...options });
const health = (options?: Partial<ClientOptions>) => client(options).GET('/api/v1/health');

const paymentBody = {
  receiptId: '6f1c2f9e-3b0e-4c55-9d1a-2f7d4e0b9a11',
  merchantId: '0b8e2a44-8f31-4d3c-a2f4-6c1f1d7e5b22',
  merchantName: 'Corner Coffee',
  transactionId: 'c3d9e8f7-1a2b-4c5d-8e9f-0a1b2c3d4e5f',
  subtotal: 0,
  taxAmount: 0,
  totalAmount: 0,
  mockItems: true,
};
const createPayment = (idempotencyKey?: string) =>
  client().POST('/api/v1/payments/{gateway}/create', {
    params: {
      path: { gateway: 'gateway_b' },
      header: idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey },
    },
    body: paymentBody,
  });

describe('the SDK client retries as the specification says', () => {
  it('503, 503, 200: three attempts, 2 s and 4 s apart, and the 200 is the answer', async () => {
    script = [{ status: 503 }, { status: 503 }, { status: 200 }];
    const { data, response } = await health();
    expect(response.status).toBe(200);
    expect(data).toEqual({ success: true, attempt: 3 });
    expect(seen.map(({ at }) => at)).toEqual([0, 2000, 6000]);
    expect(clock.sleeps).toEqual([2000, 4000]);
  });

  it.each([429, 500, 502, 504])('retries %i the same way', async (status) => {
    script = [{ status }, { status: 200 }];
    expect((await health()).response.status).toBe(200);
    expect(seen.map(({ at }) => at)).toEqual([0, 2000]);
  });

  it('stops after the third attempt and hands back the last answer', async () => {
    script = [{ status: 503 }, { status: 503 }, { status: 503 }, { status: 200 }];
    const { error, response } = await health();
    expect(response.status).toBe(503);
    expect(error).toEqual({ success: false, attempt: 3 });
    expect(seen).toHaveLength(3);
  });

  it.each([400, 401, 403, 404, 409])('sends a request answered %i once', async (status) => {
    script = [{ status }, { status: 200 }];
    expect((await health()).response.status).toBe(status);
    expect(seen).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it('sends a POST without an Idempotency-Key once, whatever the answer', async () => {
    script = [{ status: 503 }, { status: 200 }];
    expect((await createPayment()).response.status).toBe(503);
    expect(seen).toHaveLength(1);
  });

  it('retries a POST that carries an Idempotency-Key, with the same key and body each time', async () => {
    script = [{ status: 502 }, { status: 200 }];
    expect((await createPayment('order-42')).response.status).toBe(200);
    expect(seen.map(({ method, idempotencyKey }) => ({ method, idempotencyKey }))).toEqual([
      { method: 'POST', idempotencyKey: 'order-42' },
      { method: 'POST', idempotencyKey: 'order-42' },
    ]);
    expect(JSON.parse(seen[1]!.body)).toEqual(paymentBody);
    expect(seen[1]!.body).toBe(seen[0]!.body);
  });

  it('retries a DELETE', async () => {
    script = [{ status: 503 }, { status: 200 }];
    const deleted = await client().DELETE('/api/v1/webhooks/{webhookId}', {
      params: { path: { webhookId: 'wh_1' } },
    });
    expect(deleted.response.status).toBe(200);
    expect(seen.map(({ method }) => method)).toEqual(['DELETE', 'DELETE']);
  });

  it('waits for Retry-After when it is longer than the back-off, and for the back-off when it is shorter', async () => {
    script = [
      { status: 429, headers: { 'Retry-After': '7' } },
      { status: 503, headers: { 'Retry-After': '1' } },
      { status: 200 },
    ];
    expect((await health()).response.status).toBe(200);
    expect(clock.sleeps).toEqual([7000, 4000]);
  });

  it('takes Retry-After as an HTTP date too', async () => {
    clock.time = Date.parse('2026-01-01T00:00:00Z');
    script = [{ status: 503, headers: { 'Retry-After': 'Thu, 01 Jan 2026 00:00:09 GMT' } }, { status: 200 }];
    expect((await health()).response.status).toBe(200);
    expect(clock.sleeps).toEqual([9000]);
  });

  it('hands back a 429 whose Retry-After is beyond the longest wait, instead of sitting through it', async () => {
    script = [{ status: 429, headers: { 'Retry-After': '3600' } }, { status: 200 }];
    expect((await health()).response.status).toBe(429);
    expect(seen).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it('aborts an attempt at its timeout and retries it', async () => {
    script = ['hang', { status: 200 }];
    const { data, response } = await health();
    expect(response.status).toBe(200);
    expect(data).toEqual({ success: true, attempt: 2 });
    expect(seen.map(({ at }) => at)).toEqual([0, DEFAULT_TIMEOUT_MS + 2000]);
    // The first attempt's connection was closed by the client, unanswered.
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen[0]!.abandoned).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('retries a dropped connection', async () => {
    script = ['drop', { status: 200 }];
    expect((await health()).response.status).toBe(200);
    expect(seen).toHaveLength(2);
  });

  it('throws RequestTimeoutError when the last attempt times out', async () => {
    script = ['hang'];
    const failure = await health({ retry: false }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RequestTimeoutError);
    expect(seen).toHaveLength(1);
  });

  it('takes its own timeout and attempt count, and can be turned off', async () => {
    script = [{ status: 503 }, { status: 503 }, { status: 503 }, { status: 200 }];
    expect((await health({ retry: { maxAttempts: 4, baseDelayMs: 10 } })).response.status).toBe(200);
    expect(clock.sleeps).toEqual([20, 40, 80]);

    script = [{ status: 503 }, { status: 200 }];
    seen = [];
    expect((await health({ retry: false })).response.status).toBe(503);
    expect(seen).toHaveLength(1);

    // No timeout: no timer is set for the attempt.
    script = [{ status: 200 }];
    const pending = health({ timeoutMs: false });
    expect(clock.pendingTimers).toBe(0);
    expect((await pending).response.status).toBe(200);
  });

  it('stops waiting when the caller aborts, and sends nothing more', async () => {
    script = [{ status: 503 }, { status: 200 }];
    const controller = new AbortController();
    let sleeping!: () => void;
    const asleep = new Promise<void>((resolve) => (sleeping = resolve));
    // A clock whose wait never ends by itself: only the abort can end it.
    const stuck: RetryClock = {
      now: () => 0,
      sleep: () => {
        sleeping();
        return new Promise(() => undefined);
      },
      setTimeout: () => () => undefined,
    };
    const pending = client({ clock: stuck }).GET('/api/v1/health', { signal: controller.signal });
    await asleep;
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(seen).toHaveLength(1);
  });
});
