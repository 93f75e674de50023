/**
 * Retry delays: doubling from a base after each failure in a row, capped, then spread by ±20 %
 * jitter so that many clients that failed together (a server restarted, a registry went away)
 * do not all try again in the same millisecond.
 *
 * Pure functions; any thread may call them.
 * @module
 */

/** How far a delay is spread either way: ±20 %. */
export const JITTER_FRACTION = 0.2;

/**
 * The delay after `failures` failures in a row (1 = the first): `baseMs` doubled per further
 * failure, never over `capMs`, then multiplied by a factor in [0.8, 1.2) drawn from `random`
 * (a function returning [0, 1), `Math.random` by default; tests pass a fixed one). Rounded to
 * whole milliseconds; 0 when `baseMs` is 0.
 */
export function backoffMs(
  failures: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  const plain = Math.min(capMs, baseMs * 2 ** Math.min(30, Math.max(0, failures - 1)));
  return jitter(plain, random);
}

/** `ms` spread by ±{@link JITTER_FRACTION}, from `random` ([0, 1)), rounded to whole ms. */
export function jitter(ms: number, random: () => number = Math.random): number {
  return Math.round(ms * (1 - JITTER_FRACTION + 2 * JITTER_FRACTION * random()));
}
