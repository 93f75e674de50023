/**
 * A progress engine: drives `step()` (poll the rings, reap completions) while there is work,
 * busy-polls for a time the spin policy (`spin_policy.ts`) fits to the machine when there is none;
 * after a quiet spell it naps where the machine can (`LoopMachine.nap`: the thread blocks in a
 * futex wait of at most `napUs` that the peer's announcement ends — a gap between sporadic calls
 * costs a wait and a wake, not a core); then it sleeps in `idleWait()` — a futex or
 * completion-channel wait that runs off the JS thread — so an idle process uses no CPU and a
 * busy one answers in microseconds.
 *
 * Yielding: a step that completed work returns to the microtask queue at once (so the callers it
 * resolved can submit their next call without a trip through the event loop); after a run of busy
 * turns ({@link BUSY_TURNS}, {@link BUSY_WORK}), and whenever a spin ends empty, it yields a full
 * macrotask so timers and TCP get their turn.
 *
 * Threading: one JS thread; `step` must not throw (errors are the step's to handle).
 * @module
 */
import { setImmediate } from "node:timers";
import { z } from "zod";
import {
  DEFAULT_NAP_US,
  NAP_AFTER_US,
  type SpinDecision,
  type SpinInputs,
  spinPolicy,
} from "./spin_policy.ts";
import { CALIBRATION_READINGS, SpinPace } from "./spin_pace.ts";
import { invalidateTurnClock, setTurnClock } from "./turn_clock.ts";

/** The progress-loop options as a zod schema (client and server options embed it). */
export const progressOptionsSchema: z.ZodDefault<
  z.ZodObject<{
    spinUs: z.ZodOptional<z.ZodNumber>;
    idleAfterMs: z.ZodOptional<z.ZodNumber>;
    idleWaitMs: z.ZodOptional<z.ZodNumber>;
    napUs: z.ZodOptional<z.ZodNumber>;
  }, z.core.$strict>
> = z.object({
  spinUs: z.number().min(0).max(1_000_000).optional(),
  idleAfterMs: z.number().min(0).max(60_000).optional(),
  idleWaitMs: z.number().int().min(1).max(60_000).optional(),
  napUs: z.number().int().min(0).max(100_000).optional(),
}).strict().default({});

/** Tunables of a progress loop. */
export interface ProgressOptions {
  /** Longest synchronous busy-poll per turn, in µs (default 20). */
  spinUs?: number;
  /** Time without work before going idle, in ms (default 5). A wake from idle costs ~0.1 ms
   * (the futex wait returns through the runtime's thread pool / a Worker), so a busy peer that
   * pauses for less than this is answered without it. */
  idleAfterMs?: number;
  /** Upper bound of one idle sleep in ms, so periodic work (TTL sweeps) still runs (default 2000). */
  idleWaitMs?: number;
  /**
   * Longest nap in µs where the fabric can nap (shm; default {@link DEFAULT_NAP_US}; 0: never nap,
   * spin as before). The thread's timers and TCP wait at most this long behind a nap.
   */
  napUs?: number;
}

/** What the loop learns about the machine (defaults: this host's, read through transport/cpu.ts). */
export interface LoopMachine {
  /** Cores this process may use. */
  cores: number;
  /** Tasks runnable on the host now (-1 = unknown); read about every {@link POLICY_REFRESH_MS}. */
  runnable(): number;
  /** True when every peer an answer is awaited from sleeps (evaluated when a spin starts). */
  peerAsleep(): boolean;
  /** The clock a spin reads, ms (default `performance.now`; tests give a clock of known cost). */
  now?: () => number;
  /** True when {@link nap} can be used now (every session on one source that naps, none queued). */
  canNap?(): boolean;
  /**
   * Blocks the thread for at most `us` µs until a peer announces work; true when woken or work
   * was announced meanwhile. Called only right after `canNap()` said true.
   */
  nap?(us: number): boolean;
}

/** How often the loop re-reads the runnable-task count, ms. */
export const POLICY_REFRESH_MS = 100;
/** Readings of the runnable-task count the policy takes the least of (see `#leastRunnable`). */
export const RUNNABLE_READINGS = 4;
/**
 * Polls at the start of a spin that each await a microtask first: a caller up to about this many
 * awaits away from its resolved promise submits in them, before the tight spin holds the thread.
 */
const CALLER_HOPS = 8;
/**
 * Turns with work in a row, and the work they did (calls), after which the loop yields a
 * macrotask so timers and TCP get their turn: a yield costs about as much as a small call, so one
 * call in flight pays for it every {@link BUSY_TURNS} calls, and a busy loop with 32 in flight
 * still yields every ~{@link BUSY_WORK} calls.
 */
const BUSY_TURNS = 64, BUSY_WORK = 512;

/** A started/stopped busy-poll-then-sleep loop. */
export class ProgressLoop {
  #running = false;
  #wakeup: ((spin: boolean) => void) | null = null;
  #spinUs = 20;
  #idleAfterMs = 5;
  #idleWaitMs = 2000;
  #napUs = DEFAULT_NAP_US;
  /** The last nap timed out (nothing came): the next turn looks once instead of spinning. */
  #napTimedOut = false;
  #runnable = -1;
  /** The last {@link RUNNABLE_READINGS} runnable-task readings (a ring; none yet: the maximum). */
  readonly #readings = new Int32Array(RUNNABLE_READINGS).fill(0x7fffffff);
  #readingAt = 0;
  #policyAt = -Infinity;
  /** Turns taken / idle sleeps taken / spins cut to nothing by the policy / clock readings of the
   * spins and empty turns (calibrations included) / spins that yield the core after every poll /
   * empty polls of the tight spins (tests and stats). */
  readonly counters = {
    turns: 0,
    sleeps: 0,
    shortSpins: 0,
    clockReads: 0,
    yieldingSpins: 0,
    spinPolls: 0,
    naps: 0,
  };
  /** The spin's clock and how often a spin reads it (`spin_pace.ts`). */
  readonly #read: () => number;
  readonly #pace: SpinPace;

  /**
   * @param step does one round of work; returns how much it did (0 = nothing)
   * @param idleWait sleeps until inbound work may exist (resolves true) or `ms` passed (false)
   * @param keepRunning when false after a step with no work, the loop stops (client: no calls)
   * @param yieldCpu gives the core away (sched_yield): on an oversubscribed machine the peer we
   *   are waiting for may need this very core
   * @param machine cores, runnable tasks and the peers' sleep, for the spin policy
   */
  constructor(
    private readonly step: () => number,
    private readonly idleWait: (ms: number) => Promise<boolean>,
    private readonly keepRunning: () => boolean,
    options: ProgressOptions = {},
    private readonly yieldCpu: () => void = () => {},
    private readonly machine: LoopMachine = {
      cores: 2,
      runnable: () => -1,
      peerAsleep: () => false,
    },
  ) {
    this.#read = machine.now ?? (() => performance.now());
    this.#pace = new SpinPace(this.#read);
    this.configure(options);
  }

  /** Applies the fields of `options` that are set (defaults: spinUs 20, idleAfterMs 5, idleWaitMs 2000, napUs 200). */
  configure(options: ProgressOptions): void {
    this.#decided = null;
    if (options.spinUs !== undefined) this.#spinUs = options.spinUs;
    if (options.idleAfterMs !== undefined) {
      this.#idleAfter = this.#idleAfterMs = options.idleAfterMs;
    }
    if (options.idleWaitMs !== undefined) this.#idleWaitMs = options.idleWaitMs;
    if (options.napUs !== undefined) this.#napUs = options.napUs;
  }

  /** True while the loop runs. */
  get running(): boolean {
    return this.#running;
  }

  /**
   * Starts the loop if it is not running; wakes it if it sleeps. `spin` false: a sleeping loop
   * takes one turn and sleeps again (a new session's first look), instead of busy-polling for
   * `idleAfterMs` as it does for submitted work.
   */
  start(spin = true): void {
    if (this.#running) {
      this.#wakeup?.(spin);
      return;
    }
    this.#running = true;
    void this.#run();
  }

  /** Stops the loop after the current turn. */
  stop(): void {
    this.#running = false;
    this.#wakeup?.(true);
  }

  /**
   * Looks once; when that finds nothing, spins ({@link #spinFor}). The clock is read every
   * `pollsPerClock` empty polls of the tight spin (`spin_pace.ts`: 16 where the clock is cheap,
   * more where a reading is dear), never before (on Deno a reading is an op call, and with one
   * call in flight most spins end sooner); returns the work found, and the
   * last clock reading in `this.#now` (NaN: none). Returns a number when the first look found
   * work (no promise on the busy path). The runnable-task count the policy uses is refreshed at
   * a clock reading ({@link #clock}).
   */
  #spin(): number | Promise<number> {
    const did = this.step();
    this.#now = NaN;
    if (did > 0 || !this.keepRunning()) return did;
    const canNap = this.#napUs > 0 && this.machine.canNap?.() === true;
    const d = this.#decision(this.machine.peerAsleep(), canNap);
    this.#idleAfter = d.idleAfterMs;
    this.#napAllowedUs = d.napUs;
    if (d.spinUs <= 0 || (this.#napTimedOut && d.napUs > 0)) {
      // (After a nap that found nothing, one look: the next nap follows, not a spin.)
      this.counters.shortSpins++;
      return 0;
    }
    if (d.yieldEachPoll) this.counters.yieldingSpins++;
    return this.#spinFor(d.spinUs / 1000, d.yieldEachPoll);
  }

  /** The last decision's `napUs` (0: this turn may not nap). */
  #napAllowedUs = 0;

  /**
   * Naps when the policy allows it and the loop has been without work for {@link NAP_AFTER_US}
   * (`quietMs`): the machine blocks the thread until a peer announces, or for at most `napUs`
   * (never past the idle sleep's turn). Returns true when it napped.
   */
  #napIfQuiet(quietMs: number): boolean {
    const napUs = this.#napAllowedUs;
    if (napUs <= 0 || quietMs * 1000 < NAP_AFTER_US || this.machine.canNap?.() !== true) {
      return false;
    }
    const untilIdleUs = (this.#idleAfter - quietMs) * 1000;
    this.counters.naps++;
    invalidateTurnClock();
    const woke = this.machine.nap!(Math.max(1, Math.min(napUs, untilIdleUs)));
    this.#napTimedOut = !woke;
    return true;
  }

  /** The spin policy's decision for these inputs (recomputed only when one of them changed). */
  #decision(peerAsleep: boolean, canNap: boolean): SpinDecision {
    const inputs = this.#inputs;
    if (
      this.#decided === null || inputs.peerAsleep !== peerAsleep ||
      inputs.runnable !== this.#runnable || inputs.canNap !== canNap
    ) {
      inputs.cores = this.machine.cores;
      inputs.runnable = this.#runnable;
      inputs.peerAsleep = peerAsleep;
      inputs.spinUs = this.#spinUs;
      inputs.idleAfterMs = this.#idleAfterMs;
      inputs.napUs = this.#napUs;
      inputs.canNap = canNap;
      this.#decided = spinPolicy(inputs);
    }
    return this.#decided;
  }

  readonly #inputs: SpinInputs = {
    cores: 1,
    runnable: -1,
    peerAsleep: false,
    spinUs: 0,
    idleAfterMs: 0,
    napUs: 0,
    canNap: false,
  };
  /** The last decision, for {@link #inputs} (null: none yet, or the options changed). */
  #decided: SpinDecision | null = null;

  /**
   * The least of the last {@link RUNNABLE_READINGS} readings, `reading` the newest (-1, unknown,
   * wins: not crowded). One reading is an instant: a runtime's GC or compiler thread, or a
   * kworker, made a host with one spinning process per core read as crowded for the next
   * {@link POLICY_REFRESH_MS}, and the loop yielded the core after every poll.
   */
  #leastRunnable(reading: number): number {
    const r = this.#readings;
    r[this.#readingAt] = reading;
    this.#readingAt = (this.#readingAt + 1) % RUNNABLE_READINGS;
    let least = r[0];
    for (let k = 1; k < RUNNABLE_READINGS; k++) least = Math.min(least, r[k]);
    return least;
  }

  /** A clock reading of the spin: kept for the turn and the loop, and the policy's inputs refreshed. */
  #clock(): number {
    this.counters.clockReads++;
    let now = this.#read();
    if (now - this.#policyAt > POLICY_REFRESH_MS) {
      this.#policyAt = now;
      this.#runnable = this.#leastRunnable(this.machine.runnable());
      this.counters.clockReads += CALIBRATION_READINGS;
      now = this.#pace.calibrate(); // what a reading costs now (its last reading is the clock)
    }
    this.#now = now;
    setTurnClock(now);
    return now;
  }

  /**
   * The busy-poll: polls until work or `spinMs` passed. Its first {@link CALLER_HOPS} polls each
   * await a microtask first, so a caller a few awaits away from the promise a step just resolved
   * (an `async` wrapper, a generated client) submits its next call now: a spin that held the
   * thread from its first poll made such a caller wait for the whole spin and the loop's yield.
   * Then it polls in a tight loop (the cheapest way to see an answer the moment it lands),
   * reading the clock every `pollsPerClock` polls (each pair of readings also tells the pace
   * what a poll costs); the budget `spinMs` counts from the loop's first clock reading.
   */
  async #spinFor(spinMs: number, yieldEachPoll: boolean): Promise<number> {
    for (let k = 1; k <= CALLER_HOPS; k++) {
      await undefined;
      const did = this.step();
      if (did > 0 || !this.keepRunning()) return did;
    }
    // Crowded (a yield per poll): the spin's polls are dear, so the budget counts from here;
    // else from the first reading, one interval of polls on.
    let t0 = yieldEachPoll ? this.#clock() : NaN, last = t0;
    const pace = this.#pace, counters = this.counters;
    for (let polls = 0;;) {
      if (yieldEachPoll) this.yieldCpu();
      const did = this.step();
      if (did > 0 || !this.keepRunning()) {
        counters.spinPolls += polls;
        return did;
      }
      if (++polls >= pace.pollsPerClock) {
        counters.spinPolls += polls;
        const now = this.#clock();
        pace.observe(now - last, polls); // (NaN before the spin's first reading: no sample)
        polls = 0;
        last = now;
        if (Number.isNaN(t0)) t0 = now;
        else if (now - t0 > spinMs) return 0;
      }
    }
  }

  #now = NaN;
  /** Time without work before the idle sleep, as the spin policy last decided it (ms). */
  #idleAfter = 5;

  async #run(): Promise<void> {
    let lastWork = performance.now();
    let workSeen = false;
    let micro = 0, microWork = 0;
    while (this.#running) {
      let napped = false;
      const first = this.#spin();
      const did = typeof first === "number" ? first : await first;
      this.counters.turns++;
      if (did > 0) {
        this.#napTimedOut = false; // (work found in any poll of the turn: spin again when it ends)
        workSeen = true; // lastWork is set at the next empty turn (no clock read in busy turns)
        microWork += did;
        if (++micro < BUSY_TURNS && microWork < BUSY_WORK) {
          await undefined; // microtask: the callers just resolved run before the next poll
          continue;
        }
      } else if (!this.keepRunning()) {
        break;
      } else {
        const now = Number.isNaN(this.#now) ? this.#clock() : this.#now;
        if (workSeen) {
          workSeen = false;
          lastWork = now;
        }
        if (now - lastWork > this.#idleAfter) {
          this.counters.sleeps++;
          invalidateTurnClock();
          let guard: ReturnType<typeof setTimeout> | undefined;
          const woke = await Promise.race([
            // A failing wait (e.g. its worker died) must not end the loop: sleep on a timer instead.
            this.idleWait(this.#idleWaitMs).catch(() =>
              new Promise<boolean>((r) => setTimeout(() => r(false), 10))
            ),
            new Promise<boolean>((r) => (this.#wakeup = r)),
            // …and a wait that never returns must not park the loop for good.
            new Promise<boolean>((
              r,
            ) => (guard = setTimeout(() => r(false), this.#idleWaitMs + 250))),
          ]);
          clearTimeout(guard);
          this.#wakeup = null;
          // Kicked (or inbound): busy-poll again for a while. Timed out, or started without a spin:
          // look once, then sleep again at once.
          lastWork = woke ? performance.now() : -Infinity;
          workSeen = false;
          invalidateTurnClock();
          continue;
        }
        napped = this.#napIfQuiet(now - lastWork); // (the core was given away: no yield)
      }
      micro = microWork = 0;
      if (did === 0 && !napped) this.yieldCpu();
      invalidateTurnClock(); // code that runs while we yield reads the real clock
      await new Promise<void>((r) => setImmediate(r));
    }
    invalidateTurnClock();
    this.#running = false;
  }
}
