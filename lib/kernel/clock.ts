/** Time is injected everywhere so tests move it instead of sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests can set and advance. */
export class ManualClock implements Clock {
  private current: number;
  private readonly listeners = new Set<() => void>();
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
  private moved(): void {
    for (const listener of this.listeners) listener();
  }
}

export const epochSeconds = (date: Date): number => Math.floor(date.getTime() / 1000);
