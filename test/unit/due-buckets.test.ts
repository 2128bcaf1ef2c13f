import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { DUE_BUCKETS, dueBucketOf, dueBuckets } from '../../lib/db/webhook-deliveries.js';

/**
 * The webhook deliveries' by-due index was one partition key for the whole platform (docs/SCALE.md):
 * at 1,000 deliveries a second, each written to the index about three times, no bucket may take more
 * than a sixteenth or so of them.
 */
describe('the by-due buckets of webhook deliveries', () => {
  const deliveriesPerSecond = 1_000;
  const ids = Array.from({ length: deliveriesPerSecond * 10 }, () => `msg_${randomUUID()}`);

  it('keep a delivery in one bucket for life', () => {
    for (const id of ids.slice(0, 100)) expect(dueBucketOf(id)).toBe(dueBucketOf(id));
  });

  it('spread the platform’s deliveries evenly, each bucket far under 1,000 index writes a second', () => {
    const counts = new Map<string, number>();
    for (const id of ids) counts.set(dueBucketOf(id), (counts.get(dueBucketOf(id)) ?? 0) + 1);
    expect(counts.size).toBe(DUE_BUCKETS);
    const perSecond = [...counts.values()].map((count) => count / 10);
    // About three index writes per delivery: created due, claimed, finished.
    expect(Math.max(...perSecond) * 3).toBeLessThan(1_000 / 4);
    expect(Math.min(...perSecond)).toBeGreaterThan((deliveriesPerSecond / DUE_BUCKETS) * 0.7);
  });

  it('are all swept, the bucket of deliveries made before shards included', () => {
    expect(dueBuckets()).toHaveLength(DUE_BUCKETS + 1);
    expect(dueBuckets()).toContain('pending');
    for (const id of ids.slice(0, 100)) expect(dueBuckets()).toContain(dueBucketOf(id));
  });
});
