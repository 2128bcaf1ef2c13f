/**
 * The specification's retry guidance for clients, as a wrapped fetch under the typed client: retry
 * on 429, 500, 502, 503, 504 and on network failures (an attempt that timed out, a connection that
 * failed), at most 3 attempts, waiting 2^attempt × 1000 ms before the next (or Retry-After when
 * that is longer); never on any other status. A request is retried only when repeating it cannot do
 * a thing twice: GET, HEAD and DELETE always, a POST only when it carries an Idempotency-Key.
 */

/** Time as the retry policy sees it; tests inject one that never waits. */
export interface RetryClock {
  /** Milliseconds since the epoch (for a Retry-After given as an HTTP date). */
  now(): number;
  /** Resolves after `ms`: the wait between two attempts. */
  sleep(ms: number): Promise<void>;
  /** Calls `callback` after `ms` unless cancelled by the function it returns: the per-attempt timeout. */
  setTimeout(callback: () => void, ms: number): () => void;
}

export const systemClock: RetryClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => globalThis.setTimeout(resolve, ms)),
  setTimeout(callback, ms) {
    const handle = globalThis.setTimeout(callback, ms);
    return () => globalThis.clearTimeout(handle);
  },
};

export interface RetryOptions {
  /** Attempts in all, the first included (3); 1 sends each request once. */
  maxAttempts?: number;
  /** The wait after attempt n is 2^n × baseDelayMs (1000: 2 s, then 4 s), or Retry-After when longer. */
  baseDelayMs?: number;
  /**
   * The longest wait the client will sit through (60 000 ms). A Retry-After beyond it (a spent daily
   * quota, say) ends the retries, and the response goes back to the caller to decide.
   */
  maxDelayMs?: number;
  /** The statuses retried (429, 500, 502, 503, 504). */
  statuses?: readonly number[];
}

export const DEFAULT_RETRY: Required<RetryOptions> = {
  maxAttempts: 3,
  baseDelayMs: 1000,
  maxDelayMs: 60_000,
  statuses: [429, 500, 502, 503, 504],
};

/**
 * 30 s: longer than API Gateway's 29 s integration limit, so an attempt the service can still
 * answer is never abandoned; what it catches is a connection that stalled.
 */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** An attempt had no complete answer within the per-attempt timeout. */
export class RequestTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`The request had no complete answer within ${timeoutMs} ms.`);
    this.name = 'RequestTimeoutError';
  }
}

export type Fetch = (request: Request) => Promise<Response>;

export interface RetryPolicy {
  retry: RetryOptions | false;
  timeoutMs: number | false;
  clock: RetryClock;
}

/** Methods whose repetition changes nothing more than their first call did. */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE', 'PUT']);

const mayRepeat = (request: Request): boolean =>
  IDEMPOTENT_METHODS.has(request.method.toUpperCase()) || request.headers.has('Idempotency-Key');

/** Statuses whose response has no body by definition (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** Retry-After as delta-seconds or an HTTP date (RFC 9110 §10.2.3), in ms from now; 0 if absent. */
function retryAfterMs(response: Response, clock: RetryClock): number {
  const value = response.headers.get('Retry-After')?.trim();
  if (!value) return 0;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? 0 : Math.max(0, at - clock.now());
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The request was aborted.', 'AbortError');
}

/** Waits `ms` on the clock, or rejects as soon as the caller aborts the request. */
function wait(ms: number, clock: RetryClock, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    clock.sleep(ms).then(
      () => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) reject(abortError(signal));
        else resolve();
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * One attempt. With a timeout, the whole answer (status, headers and body) must arrive within it:
 * the body is read here, so a stall halfway through the body aborts the attempt too.
 */
async function attempt(fetch: Fetch, request: Request, timeoutMs: number | false, clock: RetryClock) {
  if (timeoutMs === false) return fetch(request);
  const controller = new AbortController();
  const callerSignal = request.signal;
  const followCaller = () => controller.abort(abortError(callerSignal));
  if (callerSignal.aborted) followCaller();
  else callerSignal.addEventListener('abort', followCaller, { once: true });
  let timedOut = false;
  const cancelTimer = clock.setTimeout(() => {
    timedOut = true;
    controller.abort(new RequestTimeoutError(timeoutMs));
  }, timeoutMs);
  try {
    const response = await fetch(new Request(request, { signal: controller.signal }));
    const body = NULL_BODY_STATUSES.has(response.status) ? null : await response.arrayBuffer();
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  } catch (error) {
    if (timedOut) throw new RequestTimeoutError(timeoutMs);
    throw error;
  } finally {
    cancelTimer();
    callerSignal.removeEventListener('abort', followCaller);
  }
}

/**
 * A fetch that follows the policy; openapi-fetch sends every request of the typed client through it.
 * Each attempt sends a fresh copy of the request (the body too); the caller's AbortSignal ends the
 * attempt under way and any wait.
 */
export function retryingFetch(fetch: Fetch, policy: RetryPolicy): Fetch {
  const retry = policy.retry === false ? undefined : { ...DEFAULT_RETRY, ...policy.retry };
  return async (request) => {
    const attempts = retry && mayRepeat(request) ? Math.max(1, retry.maxAttempts) : 1;
    for (let number = 1; ; number++) {
      const last = number >= attempts;
      // The original stays unread until the last attempt, so every attempt can copy it.
      const sent = last ? request : request.clone();
      const backoff = retry ? 2 ** number * retry.baseDelayMs : 0;
      let response: Response;
      try {
        response = await attempt(fetch, sent, policy.timeoutMs, policy.clock);
      } catch (error) {
        // fetch rejects with a TypeError when the network fails (by name: a polyfill or another realm
        // has its own TypeError); an abort by the caller is final.
        const network =
          error instanceof RequestTimeoutError ||
          (typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'TypeError');
        if (last || !network || request.signal.aborted || !retry || backoff > retry.maxDelayMs) throw error;
        await wait(backoff, policy.clock, request.signal);
        continue;
      }
      if (last || !retry || !retry.statuses.includes(response.status)) return response;
      const delay = Math.max(backoff, retryAfterMs(response, policy.clock));
      if (delay > retry.maxDelayMs) return response;
      // Unread only without a timeout; releasing it frees the connection for the next attempt.
      await response.body?.cancel().catch(() => undefined);
      await wait(delay, policy.clock, request.signal);
    }
  };
}
