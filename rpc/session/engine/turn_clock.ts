/**
 * The per-turn clock of the fabric data path: `performance.now()` read at most once per turn of
 * the progress loop, however many calls the turn submits or completes. On Deno the clock is an
 * op call, and reading it per call was a visible share of a call's cost.
 *
 * The cached value is dropped (`invalidate`) at the start of every loop turn and before the loop
 * gives the thread away (macrotask yield, idle sleep, stop), so code that runs outside a turn —
 * a timer callback, a caller after an await — reads the real clock. A value is therefore never
 * older than one synchronous turn plus its microtasks: good for deadlines (milliseconds) and
 * server-side timings, not for measuring one call's µs latency (sample the real clock for that).
 *
 * {@link dateNowThisTurn} is the same reading on the `Date.now()` scale (server-side deadlines and
 * timings): the offset between the two clocks is re-read about once a second, not per round (in
 * the Soft-RoCE VM every reading of either clock is a syscall and an emulated HPET access).
 *
 * Threading: one clock per JS thread (module state); every function on that thread.
 * @module
 */

let cached = 0;
let valid = false;

/** `performance.now()`, read at most once per loop turn (see the module documentation). */
export function nowThisTurn(): number {
  if (!valid) {
    cached = performance.now();
    valid = true;
  }
  return cached;
}

/** Drops the cached value: the next {@link nowThisTurn} reads the clock (the loop calls it). */
export function invalidateTurnClock(): void {
  valid = false;
}

/** Stores a clock reading made anyway (the loop's spin): the turn's later reads reuse it. */
export function setTurnClock(now: number): void {
  cached = now;
  valid = true;
}

/** How often {@link dateNowThisTurn} re-reads the wall clock's offset to the monotonic one, ms. */
const OFFSET_REFRESH_MS = 1000;
let offset = 0;
let offsetAt = -Infinity;

/** Most wall-clock readings one offset refresh makes (see {@link refreshOffset}). */
export const OFFSET_READINGS = 3;

/**
 * Re-reads the offset of the wall clock to the monotonic one. `Date.now()` is read between two
 * monotonic readings and paired with the later one, so the offset is never too large (a
 * deadline never gains time); a thread preempted between the readings would make it too small
 * by the preemption for a whole second, so a wide bracket is read again, up to
 * {@link OFFSET_READINGS} times, and the tightest kept.
 */
function refreshOffset(): void {
  let widest = Infinity;
  for (let i = 0; i < OFFSET_READINGS && widest > 0.1; i++) {
    const before = performance.now();
    const wall = Date.now();
    const after = performance.now();
    if (after - before < widest) {
      widest = after - before;
      offset = wall - after;
    }
  }
}

/**
 * {@link nowThisTurn} on the `Date.now()` scale (ms since the epoch): the turn's reading plus the
 * offset of the two clocks, re-read every {@link OFFSET_REFRESH_MS} (a wall-clock step shows
 * within that), in whole milliseconds like `Date.now()`: a deadline counted from it and checked
 * against `Date.now()` never has more left than it was given.
 */
export function dateNowThisTurn(): number {
  const now = nowThisTurn();
  if (now - offsetAt > OFFSET_REFRESH_MS || now < offsetAt) {
    refreshOffset();
    offsetAt = now;
  }
  return Math.floor(now + offset); // whole ms, as Date.now(): never ahead of a later Date.now()
}
