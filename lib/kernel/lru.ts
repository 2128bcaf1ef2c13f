/** Least-recently-used map with a fixed capacity: Map keeps insertion order, so re-inserting on a hit moves an entry to the young end. */
export class LruCache<K, V> {
  private readonly entries = new Map<K, { value: V; storedAt: number }>();

  /**
   * `maxAgeMs`: an entry older than this is a miss, for values that can change elsewhere. A cache
   * age, not a business time, so it reads the monotonic clock unless a test hands it another.
   */
  constructor(
    private readonly capacity: number,
    private readonly maxAgeMs = Number.POSITIVE_INFINITY,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('LRU capacity must be a positive integer');
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    if (this.now() - entry.storedAt > this.maxAgeMs) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { value, storedAt: this.now() });
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}
