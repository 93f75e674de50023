/**
 * The process's one progress engine: it drives every fabric session of this JS thread — the
 * server host's sessions and every {@link Client}'s — and finds work in O(active sessions).
 *
 * How work is found, per turn:
 * - sessions whose fabric has a readiness source (`transport/readiness.ts`; shm's notify page)
 *   are driven only when a peer announced them (`collect` hands over their tokens), or when they
 *   asked for another turn (they did work, or have local work pending); idle ones are never
 *   looked at;
 * - sessions on a fabric without a source are driven every turn (their fabric cannot say who
 *   has work).
 * Between batches, when every session is on shm's notify page, the engine naps instead of
 * spinning: it blocks its thread in a short futex wait on the page's doorbell, which the peer's
 * announcement ends (`ProgressLoop`, `spin_policy.ts`).
 * When nothing happens for a while the engine sleeps in ONE wait per readiness source (one parked
 * thread for every shm session of the process, however many), plus one per session of a fabric
 * without a source, bounded by the earliest call deadline. A session's wake-up cannot be lost:
 * the doorbell value a wait sleeps on is read before the collect that found nothing, so an
 * announcement after it makes the wait return at once.
 *
 * The engine runs while something holds it: the server host once it serves a session, and each
 * client while it has calls in flight; with no holder it stops and parks nothing, so a client
 * process with no calls can exit.
 *
 * Threading: one engine per JS thread (module singleton); every method on that thread.
 * @module
 */
import type { ReadinessSource } from "../../../transport/readiness.ts";
import { cpuCores, cpuYielder, runnableTasks } from "../../../transport/cpu.ts";
import { ProgressLoop, type ProgressOptions } from "./progress.ts";
import type { EngineCounters, EngineSession, Registration } from "./engine_session.ts";

export type { EngineCounters, EngineSession, Registration };

/** A parked wait, reused across idle rounds until it returns. */
interface ParkedWait {
  readonly woke: Promise<boolean>;
  readonly startedAt: number;
}

/** The engine's record of one driven session. */
interface Entry {
  readonly driven: EngineSession;
  readonly source: ReadinessSource | null;
  readonly token: number;
  /** The turn it was last queued in (dedupe). */
  queuedTurn: number;
  /** It asked for the next turn. */
  active: boolean;
  /** Its own doorbell wait (fabric without readiness). */
  parked: ParkedWait | null;
}

/** The filler of an active list's used slots (never active: skipped). */
const NO_ENTRY: Entry = {
  driven: null as unknown as EngineSession,
  source: null,
  token: -1,
  queuedTurn: -1,
  active: false,
  parked: null,
};

/** What the engine keeps per readiness source. */
interface SourceRecord {
  readonly source: ReadinessSource;
  seen: number;
  parked: ParkedWait | null;
  readonly byToken: (Entry | undefined)[];
  count: number;
}

/** See the module documentation. Get it with {@link ProgressEngine.forThread}. */
export class ProgressEngine {
  static #instance: Promise<ProgressEngine> | null = null;
  readonly #loop: ProgressLoop;
  /** Per readiness source: its seen doorbell, its parked wait and its entries by token. */
  readonly #sources = new Map<ReadinessSource, SourceRecord>();
  /** The same records as an array (the data path iterates it without allocating). */
  #sourceList: SourceRecord[] = [];
  /** Steps until the next look at the clock for ticks. */
  #stepsToClock = 0;
  readonly #withoutReadiness: Entry[] = [];
  readonly #all = new Set<Entry>();
  /** Entries that asked for this turn and (the first `#nextCount`) for the next one: arrays kept
   * at their size and counted (on V8 `length = 0` per step cost ~10 % of a call at 1 in flight). */
  #active: Entry[] = [];
  #nextActive: Entry[] = [];
  #nextCount = 0;
  readonly #holders = new Set<object>();
  /** Holders with deadlines (a few: read at every spin, without an iterator). */
  readonly #deadlineHolders: EngineSession[] = [];
  /** Tokens one collect hands over; grown to the largest source's capacity. */
  #collected = new Uint32Array(0);
  #turn = 0;
  #lastTick = 0;
  /** Counters (tests and stats). */
  readonly counters: EngineCounters = { sessionRounds: 0, announced: 0, holds: 0 };

  private constructor(yieldCpu: () => void) {
    this.#loop = new ProgressLoop(
      () => this.#step(),
      (ms) => this.#idle(ms),
      () => this.#holders.size > 0,
      {},
      yieldCpu,
      {
        cores: cpuCores(),
        runnable: runnableTasks,
        peerAsleep: () => this.#peersAsleep(),
        canNap: () => this.#canNap(),
        nap: (us) => this.#nap(us),
      },
    );
  }

  /**
   * True when a nap can stand for the next turns: every session is on one readiness source that
   * naps (shm's notify page), none is queued for the next turn, and no session of a fabric
   * without a source must be polled.
   */
  #canNap(): boolean {
    const sources = this.#sourceList;
    return sources.length === 1 && this.#nextCount === 0 &&
      this.#withoutReadiness.length === 0 && sources[0].source.nap !== undefined;
  }

  /**
   * Blocks the thread until a peer announces or `us` µs pass: the doorbell value the last collect
   * started from is what the nap compares, so an announcement after that collect ends it at once.
   */
  #nap(us: number): boolean {
    const src = this.#sourceList[0];
    return src.source.nap!(src.seen, us);
  }

  /** True when some client waits for answers and every such client's peer sleeps. */
  #peersAsleep(): boolean {
    const list = this.#deadlineHolders;
    for (let k = 0; k < list.length; k++) {
      const d = list[k];
      if (d.peerAsleep === undefined || !d.peerAsleep()) return false;
    }
    return list.length > 0;
  }

  /** This thread's engine (created on first use). */
  static forThread(): Promise<ProgressEngine> {
    ProgressEngine.#instance ??= cpuYielder().then((y) => new ProgressEngine(y));
    return ProgressEngine.#instance;
  }

  /** Applies the fields of `options` that are set (process-wide: the last setting wins). */
  configure(options: ProgressOptions | undefined): void {
    if (options) this.#loop.configure(options);
  }

  /** Loop counters: turns, idle sleeps, naps… (kept for the host's `loopCounters`). */
  get loopCounters(): { turns: number; sleeps: number; shortSpins: number; naps: number } {
    return { ...this.#loop.counters };
  }

  /** Registers a session; it gets its first turn at once. */
  add(driven: EngineSession): Registration {
    const readiness = driven.endpoint.readiness;
    const entry: Entry = {
      driven,
      source: readiness?.source ?? null,
      token: readiness?.token ?? -1,
      queuedTurn: -1,
      active: false,
      parked: null,
    };
    this.#all.add(entry);
    if (entry.source) {
      let src = this.#sources.get(entry.source);
      if (!src) {
        src = {
          source: entry.source,
          seen: entry.source.doorbell(),
          parked: null,
          byToken: [],
          count: 0,
        };
        this.#sources.set(entry.source, src);
        this.#sourceList = [...this.#sources.values()];
        if (this.#collected.length < entry.source.capacity) {
          this.#collected = new Uint32Array(entry.source.capacity);
        }
      }
      src.byToken[entry.token] = entry;
      src.count++;
    } else {
      this.#withoutReadiness.push(entry);
    }
    const activate = (spin: boolean) => {
      if (!entry.active && this.#all.has(entry)) {
        entry.active = true;
        this.#nextActive[this.#nextCount++] = entry;
      }
      this.#loop.start(spin);
    };
    // The first turn is one look: a sleeping engine does not busy-poll for every new session (a
    // server taking 1,000 sessions/s would never sleep).
    activate(false);
    let removed = false;
    return {
      activate: () => activate(true),
      remove: () => {
        if (removed) return;
        removed = true;
        this.#remove(entry);
      },
    };
  }

  #remove(entry: Entry): void {
    this.#all.delete(entry);
    this.#dropDeadlines(entry.driven);
    if (entry.source) {
      const src = this.#sources.get(entry.source);
      if (src && src.byToken[entry.token] === entry) {
        src.byToken[entry.token] = undefined;
        if (--src.count === 0) {
          this.#sources.delete(entry.source);
          this.#sourceList = [...this.#sources.values()];
          if (src.parked) entry.source.wake(); // let its parked wait return now, not at its timeout
        }
      }
    } else {
      const i = this.#withoutReadiness.indexOf(entry);
      if (i >= 0) this.#withoutReadiness.splice(i, 1);
    }
    entry.active = false; // dropped from the active lists on their next pass
  }

  /**
   * Keeps the engine running on behalf of `holder` (a server host, or a client with calls in
   * flight); a `driven` with deadlines bounds the engine's sleeps while held.
   */
  hold(holder: object, deadlines?: EngineSession): void {
    this.counters.holds++;
    this.#holders.add(holder);
    if (deadlines && !this.#deadlineHolders.includes(deadlines)) {
      this.#deadlineHolders.push(deadlines);
    }
    this.#loop.start(false); // running is enough: a busy-poll is for work (activate, wake)
  }

  /** Ends `holder`'s hold (the engine stops when no hold is left). */
  release(holder: object, deadlines?: EngineSession): void {
    this.#holders.delete(holder);
    if (deadlines) this.#dropDeadlines(deadlines);
  }

  #dropDeadlines(d: EngineSession): void {
    const i = this.#deadlineHolders.indexOf(d);
    if (i >= 0) this.#deadlineHolders.splice(i, 1);
  }

  #run(entry: Entry): number {
    entry.queuedTurn = this.#turn;
    entry.active = false;
    this.counters.sessionRounds++;
    const did = entry.driven.step();
    if ((did > 0 || entry.driven.wantsTurn()) && this.#all.has(entry) && !entry.active) {
      entry.active = true;
      this.#nextActive[this.#nextCount++] = entry;
    }
    return did;
  }

  #step(): number {
    const turn = ++this.#turn;
    let work = 0;
    // This turn's requests for a turn (swapped first: every run below asks for the next turn).
    const active = this.#nextActive, count = this.#nextCount;
    this.#nextActive = this.#active;
    this.#nextCount = 0;
    this.#active = active;
    // Who was announced — first: every announcement collected must be followed by a round of its
    // session that starts after the collect (a round earlier in this turn may have missed it).
    const out = this.#collected, sources = this.#sourceList;
    for (let k = 0; k < sources.length; k++) {
      const src = sources[k], source = src.source;
      src.seen = source.doorbell(); // before collect: a later announcement wakes the wait
      const n = source.collect(out);
      this.counters.announced += n;
      for (let i = 0; i < n; i++) {
        const e = src.byToken[out[i]];
        if (e !== undefined && e.queuedTurn !== turn) work += this.#run(e);
      }
    }
    // Who asked for this turn.
    for (let i = 0; i < count; i++) {
      const e = active[i];
      active[i] = NO_ENTRY; // a removed session is not kept alive by a stale slot
      if (e.active && e.queuedTurn !== turn) work += this.#run(e);
    }
    // Fabrics that cannot say who has work: everyone.
    const all = this.#withoutReadiness;
    for (let i = 0; i < all.length; i++) {
      if (all[i].queuedTurn !== turn) work += this.#run(all[i]);
    }
    if (--this.#stepsToClock <= 0) { // the clock is not free (Deno): look every 256 steps
      this.#stepsToClock = 256;
      const now = performance.now();
      if (now - this.#lastTick > 1000) {
        this.#lastTick = now;
        for (const e of this.#all) e.driven.tick?.();
      }
    }
    return work;
  }

  #park(current: ParkedWait | null, ms: number, start: () => Promise<boolean>): ParkedWait {
    // Reuse a parked wait unless it is overdue (it should have timed out): a lost wait is replaced.
    if (current && performance.now() - current.startedAt <= 2 * ms + 500) return current;
    return { woke: start(), startedAt: performance.now() };
  }

  async #idle(maxMs: number): Promise<boolean> {
    let ms = maxMs;
    for (const d of this.#deadlineHolders) ms = d.msToDeadline?.(ms) ?? ms;
    ms = Math.max(1, Math.ceil(ms));
    const waits: Promise<boolean>[] = [];
    for (const src of this.#sourceList) {
      const source = src.source;
      const parked = this.#park(src.parked, ms, () => {
        const p: Promise<boolean> = source.wait(src.seen, ms).finally(() => {
          if (src.parked?.woke === p) src.parked = null;
        });
        return p;
      });
      src.parked = parked;
      waits.push(parked.woke);
    }
    for (const e of this.#withoutReadiness) {
      if (e.driven.expectsInbound?.() === false) continue;
      const parked = this.#park(e.parked, ms, () => {
        const p: Promise<boolean> = e.driven.endpoint.waitInbound(e.driven.seenDoorbell(), ms)
          .finally(() => {
            if (e.parked?.woke === p) e.parked = null;
          });
        return p;
      });
      e.parked = parked;
      waits.push(parked.woke);
    }
    if (waits.length === 0) waits.push(new Promise((r) => setTimeout(() => r(false), ms)));
    const woke = await Promise.race(waits);
    this.#stepsToClock = 0; // after a sleep the next step looks at the clock (ticks stay ~1 s)
    for (const d of this.#deadlineHolders) d.afterSleep?.();
    return woke;
  }

  /** Wakes the engine (work was submitted from this thread). */
  wake(): void {
    this.#loop.start();
  }

  /** Parked waits now (tests: one wait per readiness source serves all its sessions). */
  get parkedWaits(): number {
    let n = 0;
    for (const src of this.#sources.values()) if (src.parked) n++;
    for (const e of this.#withoutReadiness) if (e.parked) n++;
    return n;
  }
}
