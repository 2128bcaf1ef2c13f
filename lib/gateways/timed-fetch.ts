import type { Timeouts } from '../kernel/clock.js';

/** Statuses whose response has no body (a Response built with one throws). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
/** Described the body as it came over the wire; the body passed on is the decoded one. */
const WIRE_HEADERS = ['content-encoding', 'content-length'];

/**
 * How a timed-out attempt reaches the SDK, which then treats it as its own timeout:
 * - 'rejection': fetch rejects with an AbortError (Stripe's fetch client: a timeout, retried under
 *   the same idempotency key; it clears its own timer either way). The registry's Stripe client
 *   no longer sends through fetch (lib/gateways/stripe-client.ts, the same deadline on node:http);
 * - 'failed-body': fetch answers, and reading the answer fails with an AbortError (Square's fetcher:
 *   a SquareTimeoutError). Square's SDK clears its own timer only when fetch answers
 *   (core/fetcher/makeRequest.js): after a rejection its timer, our backstop's length, would keep
 *   the process alive until it fired.
 */
export type TimeoutDelivery = 'rejection' | 'failed-body';

/**
 * The fetch a gateway SDK sends through: each attempt, its answer's body included, ends after `ms`
 * of `timeouts`' time, or when the SDK's own signal aborts, whichever comes first. The timeout is
 * ours, not the SDK's: the SDKs' timers are their own setTimeout, which a test cannot move, so a
 * test that times out a held request would race the machine's load; with this one it moves its
 * clock. The SDKs still decide what a timed-out attempt means (Stripe retries it, Square gives up)
 * and are given a longer timeout of their own as a backstop (registry.ts).
 */
export function timedFetch(
  timeouts: Timeouts,
  ms: number,
  delivery: TimeoutDelivery,
  base: typeof fetch = fetch,
): typeof fetch {
  const timedOut = () => new DOMException(`gateway request timed out after ${ms} ms`, 'AbortError');
  return async (input, init = {}) => {
    const timeout = timeouts.timeout(ms);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout.signal]) : timeout.signal;
    try {
      const response = await base(input, { ...init, signal });
      // Read here, under the same signal, so that a body that stalls times out as a silent server does.
      const body = NULL_BODY_STATUSES.has(response.status) ? null : await response.arrayBuffer();
      const headers = new Headers(response.headers);
      WIRE_HEADERS.forEach((name) => headers.delete(name));
      return new Response(body, { status: response.status, statusText: response.statusText, headers });
    } catch (error) {
      if (!timeout.signal.aborted || init.signal?.aborted) throw error;
      if (delivery === 'rejection') throw timedOut();
      const failing = new ReadableStream({ start: (controller) => controller.error(timedOut()) });
      return new Response(failing, { status: 200 });
    } finally {
      timeout.clear();
    }
  };
}
