/** Time is injected everywhere so tests move it instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** One timeout: its signal aborts when its time is up; `clear()` when what it bounds is done. */
export interface Timeout {
  signal: AbortSignal;
  clear(): void;
}

/**
 * Where the service's own timeouts (a payment gateway call's) take their time from: the system's
 * timers in a function and on `npm start`, a test's clock in the tests, so a test moves the clock to
 * time a call out, and a slow machine times out nothing the test did not.
 */
export interface Timeouts {
  timeout(ms: number): Timeout;
}

const timedOut = (ms: number) => new DOMException(`timed out after ${ms} ms`, 'TimeoutError');

export const systemTimeouts: Timeouts = {
  timeout(ms) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(timedOut(ms)), ms);
    // A call in flight keeps the process alive itself; the timer alone should not.
    timer.unref();
    return { signal: controller.signal, clear: () => clearTimeout(timer) };
  },
};

/** A clock tests can set and advance; its timeouts end when it is moved past them. */
export class ManualClock implements Clock, Timeouts {
  private current: number;
  private readonly listeners = new Set<() => void>();
  private readonly timeouts = new Set<{ at: number; ms: number; controller: AbortController }>();
  constructor(start: Date | number = Date.now()) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current += ms;
    this.moved();
  }
  set(at: Date | number): void {
    this.current = typeof at === 'number' ? at : at.getTime();
    this.moved();
  }
  /**
   * Calls `listener` after each move, so what waits for time (the local stack's sweep of due retries)
   * looks at once instead of polling a clock that only moves when told. Returns the unsubscribe.
   */
  onMove(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  timeout(ms: number): Timeout {
    const pending = { at: this.current + ms, ms, controller: new AbortController() };
    this.timeouts.add(pending);
    return { signal: pending.controller.signal, clear: () => this.timeouts.delete(pending) };
  }
  /** How many timeouts are running (set and neither cleared nor ended). */
  get runningTimeouts(): number {
    return this.timeouts.size;
  }
  private moved(): void {
    for (const pending of this.timeouts) {
      if (pending.at > this.current) continue;
      this.timeouts.delete(pending);
      pending.controller.abort(timedOut(pending.ms));
    }
    for (const listener of this.listeners) listener();
  }
}

export const epochSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);
