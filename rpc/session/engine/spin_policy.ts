/**
 * How long a progress loop with nothing to do may busy-poll before it gives its turn away, and
 * when it may nap instead, as a pure function of the machine: the cores, the tasks runnable right
 * now, whether the peer it waits for is asleep, and whether its fabric can nap: busy-poll only
 * where it pays.
 *
 * - One core: never spin — the peer we wait for needs this very core; yield it at once.
 * - The peer sleeps (its futex wait must return before it can answer, which takes far longer than
 *   a short spin): the spin cannot see the answer; give the turn away at once (and yield the
 *   core).
 * - More runnable tasks than cores (oversubscribed — other processes, or the peer and us on a
 *   shared core): spin a quarter of the budget and `sched_yield` after every empty poll, so the
 *   side we wait for gets the core.
 * - Otherwise (a core each): spin the whole budget without yielding.
 *
 * When to go to the idle sleep (after how long without work): the configured `idleAfterMs`,
 * except on an oversubscribed host (more runnable tasks than cores, or one core), where a loop
 * that keeps turning without work only takes turns from the processes that have work — the
 * server it waits for among them — so it sleeps after {@link OVERSUBSCRIBED_IDLE_AFTER_MS}, and
 * the peer's kick wakes it.
 *
 * Naps (a core each, and every session on a source that naps — shm's notify page): once the loop
 * has been without work for {@link NAP_AFTER_US}, it stops spinning until the idle sleep and naps
 * instead — blocks its thread in a futex wait of at most `napUs` that the peer's announcement
 * ends. Not sooner: between the batches of a busy session (gaps of tens of µs at 32 in flight) a
 * nap and its wake cost more CPU than the spin they save and add their wake-up to the latency
 * (napping at every empty spin raised both p50 and CPU per call), while a server
 * between the calls of a client that calls every millisecond or two spun the whole gap. Not on
 * an oversubscribed host, whose loop yields and sleeps early anyway.
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
  /** The longest nap, µs (`progress.napUs`; 0: never nap). Default 0 (inputs of older callers). */
  napUs?: number;
  /** The engine can nap now (every session it drives is on one source that naps). */
  canNap?: boolean;
}

/** Time without work before the idle sleep on an oversubscribed host, ms (see the module doc). */
export const OVERSUBSCRIBED_IDLE_AFTER_MS = 0.2;
/**
 * Time without work after which a loop that can nap naps instead of spinning, µs: well past the
 * gaps between the batches of a busy session (tens of µs at 32 in flight).
 */
export const NAP_AFTER_US = 500;
/** Default longest nap, µs: the thread's event loop (timers, TCP) waits at most this long. */
export const DEFAULT_NAP_US = 200;

/** The decision. */
export interface SpinDecision {
  /** Longest busy-poll of one turn, µs (0 = poll once). */
  spinUs: number;
  /** `sched_yield` after every empty poll of the spin (and not only after the spin). */
  yieldEachPoll: boolean;
  /** Time without work before the idle sleep, ms. */
  idleAfterMs: number;
  /**
   * Once without work for {@link NAP_AFTER_US}, an empty turn naps (blocks the thread until a
   * peer announces) for at most this, µs, instead of spinning (0: never).
   */
  napUs: number;
}

/** See the module documentation. */
export function spinPolicy(i: SpinInputs): SpinDecision {
  const crowded = i.cores <= 1 || i.runnable > i.cores;
  const napUs = i.canNap === true && !crowded ? Math.max(0, i.napUs ?? 0) : 0;
  const idleAfterMs = crowded
    ? Math.min(i.idleAfterMs, OVERSUBSCRIBED_IDLE_AFTER_MS)
    : i.idleAfterMs;
  if (i.cores <= 1 || i.peerAsleep) return { spinUs: 0, yieldEachPoll: true, idleAfterMs, napUs };
  if (crowded) return { spinUs: i.spinUs / 4, yieldEachPoll: true, idleAfterMs, napUs };
  return { spinUs: i.spinUs, yieldEachPoll: false, idleAfterMs, napUs };
}
