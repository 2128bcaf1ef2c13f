import { describe, expect, it } from '@jest/globals';
import { LruCache } from '../../lib/kernel/lru.js';

describe('LruCache', () => {
  it('evicts the least recently used entry beyond its capacity', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1);
    cache.set('c', 3);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([1, undefined, 3]);
  });

  it('forgets an entry older than its maximum age, and one deleted', () => {
    let now = 0;
    const cache = new LruCache<string, string>(10, 30_000, () => now);
    cache.set('user', 'key-1');
    cache.set('other', 'key-2');
    now = 30_000;
    expect(cache.get('user')).toBe('key-1');
    now = 30_001;
    expect(cache.get('user')).toBeUndefined();
    // A hit does not make an entry younger: its age counts from when it was stored.
    cache.set('user', 'key-3');
    now = 45_000;
    expect(cache.get('user')).toBe('key-3');
    now = 60_002;
    expect(cache.get('user')).toBeUndefined();
    cache.delete('other');
    expect(cache.get('other')).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
