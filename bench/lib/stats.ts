/** Small, dependency-free statistics: every figure the bench prints comes through here. */

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Linear interpolation between closest ranks, so p50 of an even-sized sample is the usual median. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  const lowValue = sorted[low] as number;
  const highValue = sorted[high] as number;
  return lowValue + (highValue - lowValue) * (rank - low);
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length;
}

export function max(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : Math.max(...values);
}

/** Rounds for display and for the JSON file alike, so both say the same thing. */
export function round(value: number, digits = 2): number {
  if (!Number.isFinite(value)) return value;
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/** Rotates the run order each round so that no implementation always runs first (warm caches, turbo). */
export function rotated<T>(items: readonly T[], round: number): T[] {
  const offset = round % items.length;
  return [...items.slice(offset), ...items.slice(0, offset)];
}
