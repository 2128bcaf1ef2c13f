import type { Timeouts } from '../kernel/clock.js';

/** Statuses whose response has no body (a Response built with one throws). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
/** Described the body as it came over the wire; the body passed on is the decoded one. */
const WIRE_HEADERS = ['content-encoding', 'content-length'];

/**
 * The fetch a gateway SDK sends through: each attempt, its answer's body included, ends after `ms`
 * of `timeouts`' time, or when the SDK's own signal aborts, whichever comes first. The timeout is
 * ours, not the SDK's: the SDKs' timers are their own setTimeout, which a test cannot move, so a
 * test that times out a held request would race the machine's load; with this one it moves its
 * clock. The SDK still decides what a timed-out attempt means (Square gives up) and is given a longer
 * timeout of its own as a backstop (registry.ts). Square's SDK only sends with fetch; Stripe's calls
 * take the same deadline on node:http (stripe-client.ts).
 *
 * A timed-out attempt answers, and reading the answer fails with an AbortError, which Square's fetcher
 * makes a SquareTimeoutError. Not a rejection: Square's SDK clears its own timer only when fetch
 * answers (core/fetcher/makeRequest.js), so after a rejection its timer, our backstop's length, would
 * keep the process alive until it fired.
 */
export function timedFetch(timeouts: Timeouts, ms: number, base: typeof fetch = fetch): typeof fetch {
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
      const failing = new ReadableStream({ start: (controller) => controller.error(timedOut()) });
      return new Response(failing, { status: 200 });
    } finally {
      timeout.clear();
    }
  };
}
