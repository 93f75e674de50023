/**
 * The UBRing poller: one loop per JS thread that pumps every brpc UBRing connection of the
 * thread, as brpc's poller bthreads do (`--ub_poller_num`): a UBRing peer writes memory and
 * rings no bell (no futex, no eventfd), so somebody has to look.
 *
 * Hot while bytes move: every turn of the event loop (a macrotask, so sockets and timers run in
 * between) until `spinMs` after the last byte moved or a connection asked for it
 * ({@link UbringPoller.kick}, e.g. after sending a request): back to back for a short while
 * without progress (a peer with a core free answers a small call within it), then each round
 * first naps briefly (`Atomics.wait` on a private word: the thread leaves the CPU, which on a
 * small host the peer's own poller and workers may need; most late answers come once it did).
 * The CPU stays bounded by `spinMs` after the last byte moved. Why these choices (figures and
 * the A/B runs in bench/results/ubring.md):
 * - A timed wait sleeps its timeout plus the thread's timer slack (50 µs by default), several
 *   times a short nap itself; every late answer was seen that much later. While the loop runs
 *   the thread's timer slack is 1 µs (the helper's `vb_timer_slack`, restored when the loop
 *   ends), so a nap sleeps about what it asks plus a context switch.
 * - Giving the core away with `sched_yield` instead of napping starved the poller on a loaded
 *   host (each yield most likely pushes the task's deadline back a slice, and only a sleep
 *   resets it).
 * - The spin before the first nap trades the answers it catches against the late ones, which it
 *   delays by its length.
 * Then idle: a futex wait of at most
 * `idlePollMs` off the JS thread (the helper's nonblocking `vb_futex_wait`) on the io_id word the
 * peer bumps after each write into the first connection's ring — nobody wakes it, but it ends the
 * moment the word differs from what the last round saw, and at its timeout without the 4 ms
 * clamp a chain of timers gets; without the helper, a timer. The loop ends when no connection is
 * left. A connection whose object the wait still names is unmapped when the wait returns
 * ({@link UbringPoller.release}).
 *
 * Data path (no allocation per round). Threading: the JS thread that created the connections.
 * @module
 */
import { setImmediate } from "node:timers";
import { type Helper, loadHelper } from "../../ffi/helper.ts";
import type { NonNullPtr } from "../../ffi/types.ts";

/** A connection the poller pumps. */
export interface Pumpable {
  /** Moves what can be moved now (read, write, heartbeat); true when any byte moved. */
  pump(now: number): boolean;
  readonly spinMs: number;
  readonly idlePollMs: number;
  /** The word the peer bumps when it writes, and its value at the last pump (null: none). */
  wakeWord(): { pointer: NonNullPtr; seen: number } | null;
}

const immediate = (): Promise<void> => new Promise((r) => setImmediate(r));

/** Hot rounds spin back to back this long (ms) after the last byte moved or a kick (see the
 * module doc)... */
const BUSY_MS = 0.005;
/** ...then each first naps this long (ms), with the thread's timer slack at {@link SLACK_NS}. */
const NAP_MS = 0.01;
/** The thread's timer slack while the loop runs (ns). */
const SLACK_NS = 1000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The poller of one JS thread. */
export class UbringPoller {
  readonly #conns = new Set<Pumpable>();
  #running = false;
  #hotUntil = 0;
  /** When bytes last moved or a connection last kicked (performance.now()). */
  #lastMove = 0;
  /** A word nobody notifies: Atomics.wait on it is a nap that leaves the CPU. */
  readonly #nap = new Int32Array(new SharedArrayBuffer(4));
  /** The thread's timer slack before the loop lowered it (ns; -1: not lowered). */
  #slackBefore = -1;
  #spinMs = 0;
  #idleMs = 1000;
  /** Rounds run (hot and idle), of them idle waits, and hot rounds that first napped, for tests
   * and stats. */
  rounds = 0;
  idleWaits = 0;
  naps = 0;
  /** The helper (futex waits), false when it cannot load, null until tried. */
  #helper: Helper | false | null = null;
  #waitingOn: Pumpable | null = null;
  #afterWait: (() => void)[] = [];

  /** Starts pumping `c`. */
  add(c: Pumpable): void {
    if (this.#helper === null) {
      this.#helper = false;
      loadHelper().then((h) => (this.#helper = h), () => {});
    }
    this.#conns.add(c);
    this.#spinMs = Math.max(this.#spinMs, c.spinMs);
    this.#idleMs = Math.min(this.#idleMs, c.idlePollMs);
    this.kick();
  }

  /** Stops pumping `c`. */
  remove(c: Pumpable): void {
    this.#conns.delete(c);
    if (this.#conns.size === 0) {
      this.#spinMs = 0;
      this.#idleMs = 1000;
    }
  }

  /** Runs `fn` (an unmap of `c`'s memory) now, or once the idle wait on `c`'s word returned. */
  release(c: Pumpable, fn: () => void): void {
    if (this.#waitingOn === c) this.#afterWait.push(fn);
    else fn();
  }

  /** Goes hot now (an answer is expected, or a reader resumed). */
  kick(): void {
    this.#lastMove = performance.now();
    this.#hotUntil = this.#lastMove + this.#spinMs;
    if (!this.#running && this.#conns.size > 0) void this.#loop();
  }

  async #loop(): Promise<void> {
    this.#running = true;
    try {
      while (this.#conns.size > 0) {
        this.rounds++;
        const now = performance.now();
        let moved = false;
        for (const c of this.#conns) if (c.pump(now)) moved = true;
        if (moved) {
          this.#hotUntil = now + this.#spinMs;
          this.#lastMove = now;
        }
        if (now < this.#hotUntil) {
          if (now - this.#lastMove > BUSY_MS) {
            if (this.#slackBefore < 0) this.#lowerSlack();
            this.naps++;
            Atomics.wait(this.#nap, 0, 0, NAP_MS);
          }
          await immediate();
        } else await this.#idle();
      }
    } finally {
      this.#running = false;
      this.#restoreSlack();
    }
  }

  /** Lowers the thread's timer slack for the naps (once the helper is there). */
  #lowerSlack(): void {
    const h = this.#helper;
    if (!h) return;
    const before = Number(h.lib.symbols.vb_timer_slack(SLACK_NS));
    if (before >= 0) this.#slackBefore = before;
  }

  #restoreSlack(): void {
    const h = this.#helper;
    if (this.#slackBefore < 0 || !h) return;
    h.lib.symbols.vb_timer_slack(this.#slackBefore);
    this.#slackBefore = -1;
  }

  /** One idle wait: on the first connection's wake word when the helper is there, else a timer. */
  async #idle(): Promise<void> {
    this.idleWaits++;
    const h = this.#helper;
    const c: Pumpable | undefined = this.#conns.values().next().value;
    const w = h && c !== undefined ? c.wakeWord() : null;
    if (!h || w === null) return await sleep(this.#idleMs);
    this.#waitingOn = c!;
    try {
      await h.lib.nonblocking.vb_futex_wait(w.pointer, w.seen >>> 0, this.#idleMs);
    } catch {
      this.#helper = false; // a wait that cannot run: timers from now on
    } finally {
      this.#waitingOn = null;
      const after = this.#afterWait;
      this.#afterWait = [];
      for (const fn of after) fn();
    }
  }
}

/** This thread's poller. */
export const ubringPoller: UbringPoller = new UbringPoller();
