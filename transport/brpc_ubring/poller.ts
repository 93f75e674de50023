/**
 * The UBRing poller: one loop per JS thread that pumps every brpc UBRing connection of the
 * thread, as brpc's poller bthreads do (`--ub_poller_num`): a UBRing peer writes memory and
 * rings no bell (no futex, no eventfd), so somebody has to look.
 *
 * Hot while bytes move: every turn of the event loop (a macrotask, so sockets and timers run in
 * between) until `spinMs` after the last byte moved or a connection asked for it
 * ({@link UbringPoller.kick}, e.g. after sending a request). Then idle: every `idlePollMs` on a
 * timer. The loop ends when no connection is left.
 *
 * Data path (no allocation per round). Threading: the JS thread that created the connections.
 * @module
 */
import { setImmediate } from "node:timers";

/** A connection the poller pumps. */
export interface Pumpable {
  /** Moves what can be moved now (read, write, heartbeat); true when any byte moved. */
  pump(now: number): boolean;
  readonly spinMs: number;
  readonly idlePollMs: number;
}

const immediate = (): Promise<void> => new Promise((r) => setImmediate(r));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The poller of one JS thread. */
export class UbringPoller {
  readonly #conns = new Set<Pumpable>();
  #running = false;
  #hotUntil = 0;
  #spinMs = 0;
  #idleMs = 1000;
  /** Rounds run (hot and idle), for tests and stats. */
  rounds = 0;

  /** Starts pumping `c`. */
  add(c: Pumpable): void {
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

  /** Goes hot now (an answer is expected, or a reader resumed). */
  kick(): void {
    this.#hotUntil = performance.now() + this.#spinMs;
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
        if (moved) this.#hotUntil = now + this.#spinMs;
        if (now < this.#hotUntil) await immediate();
        else await sleep(this.#idleMs);
      }
    } finally {
      this.#running = false;
    }
  }
}

/** This thread's poller. */
export const ubringPoller: UbringPoller = new UbringPoller();
