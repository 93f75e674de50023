/**
 * The per-turn clock of the fabric data path: `performance.now()` read at most once per turn of
 * the progress loop, however many calls the turn submits or completes. On Deno the clock is an
 * op call (0.1–1 µs under load), and reading it per call was a visible share of a call's cost.
 *
 * The cached value is dropped (`invalidate`) at the start of every loop turn and before the loop
 * gives the thread away (macrotask yield, idle sleep, stop), so code that runs outside a turn —
 * a timer callback, a caller after an await — reads the real clock. A value is therefore never
 * older than one synchronous turn plus its microtasks: good for deadlines (milliseconds) and
 * server-side timings, not for measuring one call's µs latency (sample the real clock for that).
 *
 * Threading: one clock per JS thread (module state); every function on that thread.
 * @module
 */

let cached = 0;
let valid = false;

/** `performance.now()`, read at most once per loop turn (see the module documentation). */
export function turnNow(): number {
  if (!valid) {
    cached = performance.now();
    valid = true;
  }
  return cached;
}

/** Drops the cached value: the next {@link turnNow} reads the clock. The progress loop calls it. */
export function invalidateTurnClock(): void {
  valid = false;
}

/** Stores a clock reading made anyway (the loop's spin): the turn's later reads reuse it. */
export function setTurnClock(now: number): void {
  cached = now;
  valid = true;
}
