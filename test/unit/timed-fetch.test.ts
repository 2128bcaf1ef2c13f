import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '../../lib/kernel/clock.js';
import { timedFetch } from '../../lib/gateways/timed-fetch.js';

/**
 * A server that answers only when told, and whose request ends when its signal aborts, as fetch's
 * does: what the gateway SDKs' requests meet when the provider is slow.
 */
function slowServer() {
  const waiting: { answer: (response: Response) => void; signal: AbortSignal | null | undefined }[] = [];
  const fetch: typeof globalThis.fetch = (_input, init) =>
    new Promise<Response>((resolve, reject) => {
      const signal = init?.signal;
      signal?.addEventListener('abort', () => reject(signal.reason));
      waiting.push({ answer: resolve, signal });
    });
  return { fetch, waiting };
}

/** One request through timedFetch (a 1 s timeout on a fresh clock) to a slow server. */
function send() {
  const clock = new ManualClock();
  const server = slowServer();
  const request = timedFetch(clock, 1_000, server.fetch)('http://gateway.test/v1/payments');
  return { clock, server, request };
}

describe("timedFetch: Square's requests, timed out on the injected clock", () => {
  it("ends an attempt when the clock has moved past the timeout, Square's way: it answers, and its body fails with the AbortError", async () => {
    const { clock, server, request } = send();

    clock.advance(999);
    expect(server.waiting[0]?.signal?.aborted).toBe(false);
    clock.advance(1);

    const response = await request;
    expect(server.waiting[0]?.signal?.aborted).toBe(true);
    await expect(response.text()).rejects.toMatchObject({ name: 'AbortError' });
    expect(clock.runningTimeouts).toBe(0);
  });

  it('times nothing out while the clock stands still, however long the answer takes, and then lets go', async () => {
    const { clock, server, request } = send();
    expect(clock.runningTimeouts).toBe(1);

    server.waiting[0]?.answer(
      new Response('{"id":"pi_1"}', { status: 200, headers: { 'content-type': 'application/json' } }),
    );
    const response = await request;

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.json()).toEqual({ id: 'pi_1' });
    // Cleared with the answer: a later move of the clock aborts nothing.
    expect(clock.runningTimeouts).toBe(0);
    clock.advance(5_000);
    expect(server.waiting[0]?.signal?.aborted).toBe(false);
  });

  it("passes the SDK's own abort on as the SDK's, and times each attempt separately", async () => {
    const clock = new ManualClock();
    const server = slowServer();
    const fetch = timedFetch(clock, 1_000, server.fetch);
    const own = new AbortController();
    const first = fetch('http://gateway.test/a', { signal: own.signal });
    own.abort(new Error('the SDK gave up'));
    await expect(first).rejects.toThrow('the SDK gave up');

    clock.advance(600);
    const second = fetch('http://gateway.test/b');
    clock.advance(600);
    expect(server.waiting[1]?.signal?.aborted).toBe(false);
    clock.advance(400);
    await expect((await second).text()).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('keeps a body-less answer body-less', async () => {
    const clock = new ManualClock();
    const server = slowServer();
    const fetch = timedFetch(clock, 1_000, server.fetch);
    const request = fetch('http://gateway.test/v1/thing', { method: 'DELETE' });
    server.waiting[0]?.answer(new Response(null, { status: 204 }));
    const response = await request;
    expect([response.status, await response.text()]).toEqual([204, '']);
  });
});
