import { describe, expect, it } from '@jest/globals';
import { bindingLimit, type RateLimitState } from '../../lib/db/rate-limits.js';

const state = (limit: number, remaining: number, resetAt: number, allowed = true): RateLimitState => ({
  limit,
  remaining,
  resetAt,
  allowed,
});

describe('the limit the X-RateLimit-* headers describe', () => {
  const minute = state(3_000, 2_990, 60);

  it('is the minute while the day has more left', () => {
    expect(bindingLimit(minute, state(200_000, 150_000, 86_400))).toEqual(minute);
  });

  it('is the day once it has fewer requests left than the minute', () => {
    expect(bindingLimit(minute, state(200_000, 2_500, 86_400))).toEqual(state(200_000, 2_500, 86_400));
  });

  it('is the minute on a tie, which resets first', () => {
    expect(bindingLimit(state(3_000, 100, 60), state(200_000, 100, 86_400))).toEqual(state(3_000, 100, 60));
  });

  it('is the minute when the minute refused the request, however little is left in the day', () => {
    const refused = state(3_000, 0, 60, false);
    expect(bindingLimit(refused, state(200_000, 0, 86_400))).toEqual(refused);
  });

  it('keeps the minute’s verdict when it reports the day', () => {
    expect(bindingLimit(minute, state(200_000, 0, 86_400, false)).allowed).toBe(true);
  });

  it('is the minute for a caller without a key (no daily quota)', () => {
    expect(bindingLimit(minute, undefined)).toEqual(minute);
  });
});
