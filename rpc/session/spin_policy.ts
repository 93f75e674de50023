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
}

/** The decision. */
export interface SpinDecision {
  /** Longest busy-poll of one turn, µs (0 = poll once). */
  spinUs: number;
  /** `sched_yield` after every empty poll of the spin (and not only after the spin). */
  yieldEachPoll: boolean;
}

/** See the module documentation. */
export function spinPolicy(i: SpinInputs): SpinDecision {
  if (i.cores <= 1 || i.peerAsleep) return { spinUs: 0, yieldEachPoll: true };
  if (i.runnable > i.cores) return { spinUs: i.spinUs / 4, yieldEachPoll: true };
  return { spinUs: i.spinUs, yieldEachPoll: false };
}
