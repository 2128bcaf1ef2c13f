import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ManualClock } from '../../../lib/kernel/clock.js';
import { sdkBackstopMs } from '../../../lib/gateways/registry.js';
import { createStripeClient, loadStripeSdk } from '../../../lib/gateways/stripe-client.js';

const TIMEOUT_MS = 1_000;
const INTENT = {
  id: 'pi_1',
  object: 'payment_intent',
  amount: 100,
  currency: 'eur',
  status: 'requires_payment_method',
};

/**
 * A Stripe-shaped server whose next answers can be told to stall after their headers and the start of
 * their body: what lib/gateways/stripe-client.ts's deadline must end, as it ends a silent server.
 */
describe("Stripe's requests over node:http, each attempt ended on the injected clock", () => {
  let server: Server;
  let url: string;
  const attempts: { key: string | undefined; stalled: boolean }[] = [];
  const held: ServerResponse[] = [];
  let stallNext = 0;

  beforeAll(async () => {
    server = createServer((request: IncomingMessage, response: ServerResponse) => {
      request.resume();
      request.once('end', () => {
        const stall = stallNext > 0;
        if (stall) stallNext -= 1;
        attempts.push({ key: request.headers['idempotency-key'] as string | undefined, stalled: stall });
        const body = JSON.stringify(INTENT);
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
        if (!stall) return response.end(body);
        held.push(response);
        response.write(body.slice(0, 10));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    held.forEach((response) => response.destroy());
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });
  beforeEach(() => {
    attempts.length = 0;
    stallNext = 0;
  });

  const client = async (clock: ManualClock, maxNetworkRetries: number) =>
    createStripeClient(await loadStripeSdk(), {
      secretKey: 'sk_test_local',
      baseUrl: url,
      maxNetworkRetries,
      timeoutMs: sdkBackstopMs(TIMEOUT_MS),
      attempts: { timeouts: clock, ms: TIMEOUT_MS },
    });
  /** Resolves once the client has the stalled answer's headers: it is then reading the body. */
  const stalledOnce = () =>
    new Promise<void>((resolve) => {
      const seen = () => {
        unsubscribe('http.client.response.finish', seen);
        resolve();
      };
      subscribe('http.client.response.finish', seen);
    });

  it('times out an answer whose body stalls, as the SDK times out, retried under the same key', async () => {
    const clock = new ManualClock();
    const stripe = await client(clock, 1);
    stallNext = 1;
    const holding = stalledOnce();
    const creating = stripe.paymentIntents.create(
      { amount: 100, currency: 'eur' },
      { idempotencyKey: 'k-1' },
    );
    await holding;
    clock.advance(TIMEOUT_MS - 1);
    expect(clock.runningTimeouts).toBe(1);
    clock.advance(1);

    await expect(creating).resolves.toMatchObject({ id: 'pi_1' });
    expect(attempts).toEqual([
      { key: 'k-1', stalled: true },
      { key: 'k-1', stalled: false },
    ]);
    expect(clock.runningTimeouts).toBe(0);
  });

  it("gives the SDK's timeout error when no retry is left", async () => {
    const clock = new ManualClock();
    const stripe = await client(clock, 0);
    stallNext = 1;
    const holding = stalledOnce();
    const creating = stripe.paymentIntents.create({ amount: 100, currency: 'eur' });
    await holding;
    clock.advance(TIMEOUT_MS);

    await expect(creating).rejects.toMatchObject({
      type: 'StripeConnectionError',
      message: expect.stringContaining('timeout') as unknown,
    });
    expect(attempts).toHaveLength(1);
    expect(clock.runningTimeouts).toBe(0);
  });

  it('clears the deadline with the answer: a later move of the clock ends nothing', async () => {
    const clock = new ManualClock();
    const stripe = await client(clock, 0);
    await expect(stripe.paymentIntents.create({ amount: 100, currency: 'eur' })).resolves.toMatchObject(
      INTENT,
    );
    expect(clock.runningTimeouts).toBe(0);
    clock.advance(10 * TIMEOUT_MS);
    // The kept-alive connection serves the next call.
    await expect(stripe.paymentIntents.retrieve('pi_1')).resolves.toMatchObject(INTENT);
    expect(attempts).toHaveLength(2);
  });
});
