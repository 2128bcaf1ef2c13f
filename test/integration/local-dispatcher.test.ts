import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { flattenedReceipt } from '../support/fixtures.js';
import { onboardUser, type OnboardedUser } from '../support/flow.js';
import { pollUntil } from '../support/processes.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/**
 * The local stand-in for the stream's event source mapping and the sweeper's schedule
 * (local/stream-poller.ts): it polls an idle stream less and less often, comes back at once when a
 * request may have written or the clock moved, and sweeps on a clock move however far its backstop
 * is. The test holds the polls: each is run when the test says, and the wait asked for is read.
 */
class Polls {
  private pending: { poll: () => void; ms: number; cancelled: boolean }[] = [];

  readonly schedule = (poll: () => void, ms: number): (() => void) => {
    const entry = { poll, ms, cancelled: false };
    this.pending.push(entry);
    return () => {
      entry.cancelled = true;
    };
  };

  private live() {
    this.pending = this.pending.filter((entry) => !entry.cancelled);
    return this.pending;
  }

  /** The wait the dispatcher asked for before its next poll (exactly one is pending). */
  nextWaitMs(): number {
    const live = this.live();
    expect(live).toHaveLength(1);
    return live[0]!.ms;
  }

  /** Runs the pending poll and answers the wait asked for after it, once the poll has ended. */
  async run(): Promise<number> {
    const [entry] = this.live();
    if (!entry) throw new Error('no poll pending');
    this.pending = [];
    entry.poll();
    return pollUntil('the next poll to be asked for', async () => this.live()[0]?.ms, {
      timeoutMs: 30_000,
      intervalMs: 10,
    });
  }
}

const INTERVAL_MS = 200;
const IDLE_INTERVAL_MS = 1_600;

describe('the local webhook dispatcher', () => {
  const polls = new Polls();
  let stack: TestStack;
  let receiver: Server;
  let receiverUrl = '';
  const received: string[] = [];
  /** What the receiver answers next; 200 once these are used. */
  const statuses: number[] = [];
  let merchant = '';
  let issuer = '';
  let user: OnboardedUser;

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push(Buffer.concat(chunks).toString('utf8'));
        response.writeHead(statuses.shift() ?? 200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    stack = await startTestStack({
      dispatcherIntervalMs: INTERVAL_MS,
      dispatcherIdleIntervalMs: IDLE_INTERVAL_MS,
      // An hour: any sweep these tests see comes from a clock move, not from the backstop.
      sweepIntervalMs: 3_600_000,
      dispatcherSchedule: polls.schedule,
    });
    merchant = (await stack.apiKey(['merchant'])).apiKey;
    issuer = (await stack.apiKey(['issuer'])).apiKey;
    user = await onboardUser(stack, issuer);
    const registered = await stack.request('POST', '/api/v1/webhooks', {
      apiKey: issuer,
      body: { url: receiverUrl, events: ['receipt.available'] },
    });
    expect(registered.status).toBe(201);
  });

  afterAll(async () => {
    await stack?.close();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it('waits twice as long after each poll that finds nothing, up to its idle interval', async () => {
    // Nothing written since the start: every poll comes back empty.
    const waits = [];
    for (let poll = 0; poll < 6; poll += 1) waits.push(await polls.run());
    expect(waits).toEqual([400, 800, 1_600, 1_600, 1_600, 1_600]);
  });

  it('polls again within its interval once the server has answered a request, and delivers what it wrote', async () => {
    expect(polls.nextWaitMs()).toBe(IDLE_INTERVAL_MS);
    const encrypted = await stack.request('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant,
      body: flattenedReceipt({ recipientHashedPan: user.hashedPan }),
    });
    expect(encrypted.status).toBe(200);
    expect(polls.nextWaitMs()).toBe(INTERVAL_MS);
    // That poll reads the receipt's record: found work keeps the next one close too.
    expect(await polls.run()).toBe(INTERVAL_MS);
    await pollUntil('the receipt.available event', async () => (received.length === 1 ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    expect(JSON.parse(received[0]!)).toMatchObject({ type: 'receipt.available' });
  });

  it('sweeps a retry made due by a clock move on the next poll, with its backstop an hour away', async () => {
    // Idle again, then a receipt whose first attempt fails: its retry is due 5 s later.
    while ((await polls.run()) < IDLE_INTERVAL_MS);
    statuses.push(500);
    const before = received.length;
    const encrypted = await stack.request('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant,
      body: flattenedReceipt({ recipientHashedPan: user.hashedPan }),
    });
    expect(encrypted.status).toBe(200);
    await polls.run();
    await pollUntil('the first attempt', async () => (received.length === before + 1 ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    while ((await polls.run()) < IDLE_INTERVAL_MS);
    // Polls without a clock move do not sweep: the retry waits.
    await polls.run();
    expect(received).toHaveLength(before + 1);

    stack.clock.advance(5_000);
    expect(polls.nextWaitMs()).toBe(INTERVAL_MS);
    await polls.run();
    await pollUntil('the retry', async () => (received.length === before + 2 ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    expect(received[before + 1]).toBe(received[before]);
  });
});
