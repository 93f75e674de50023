/**
 * How long a progress loop with nothing to do may busy-poll before it gives its turn away, as a
 * pure function of the machine: the cores, the tasks runnable right now, and whether the peer it
 * waits for is asleep. Issue 11 item 4: busy-poll only where it pays.
 *
 * - One core: never spin — the peer we wait for needs this very core; yield it at once.
 * - The peer sleeps (its futex wait must return before it can answer, ~50–100 µs): a spin of a few
 *   µs cannot see the answer; give the turn away at once (and yield the core).
 * - More runnable tasks than cores (oversubscribed — other processes, or the peer and us on a
 *   shared core): spin a quarter of the budget and `sched_yield` after every empty poll, so the
 *   side we wait for gets the core.
 * - Otherwise (a core each): spin the whole budget without yielding.
 *
 * When to go to the idle sleep (after how long without work): the configured `idleAfterMs`,
 * except on an oversubscribed host (more runnable tasks than cores, or one core), where a loop
 * that keeps turning without work only takes turns from the processes that have work — the
 * server it waits for among them — so it sleeps after {@link OVERSUBSCRIBED_IDLE_AFTER_MS}, and
 * the peer's kick wakes it (the kernel then runs it ahead of the busy tasks).
 *
 * Pure; never throws.
 * @module
 */

/** What the decision is made from. */
export interface SpinInputs {
  /** Cores this process may use (≥ 1). */
  cores: number;
  /** Tasks runnable on the host (this one included), or -1 when unknown (treated as not oversubscribed). */
  runnable: number;
  /** Every peer this process waits for an answer from is asleep. */
  peerAsleep: boolean;
  /** The configured spin budget in µs (`progress.spinUs`). */
  spinUs: number;
  /** The configured time without work before the idle sleep, ms (`progress.idleAfterMs`). */
  idleAfterMs: number;
}

/** Time without work before the idle sleep on an oversubscribed host, ms (see the module doc). */
export const OVERSUBSCRIBED_IDLE_AFTER_MS = 0.2;

/** The decision. */
export interface SpinDecision {
  /** Longest busy-poll of one turn, µs (0 = poll once). */
  spinUs: number;
  /** `sched_yield` after every empty poll of the spin (and not only after the spin). */
  yieldEachPoll: boolean;
  /** Time without work before the idle sleep, ms. */
  idleAfterMs: number;
}

/** See the module documentation. */
export function spinPolicy(i: SpinInputs): SpinDecision {
  const crowded = i.cores <= 1 || i.runnable > i.cores;
  const idleAfterMs = crowded
    ? Math.min(i.idleAfterMs, OVERSUBSCRIBED_IDLE_AFTER_MS)
    : i.idleAfterMs;
  if (i.cores <= 1 || i.peerAsleep) return { spinUs: 0, yieldEachPoll: true, idleAfterMs };
  if (crowded) return { spinUs: i.spinUs / 4, yieldEachPoll: true, idleAfterMs };
  return { spinUs: i.spinUs, yieldEachPoll: false, idleAfterMs };
}
