/**
 * The URMA hub: one context, one JFCE and the JFCs of every URMA endpoint of this process (per
 * library, device and EID), and the URMA readiness source (transport/readiness.ts) of the
 * process's progress engine. eRPC's shape on URMA: every jetty sends and receives through the
 * hub's JFC, so one `urma_poll_jfc` finds the work of every session, and one wait on the one
 * JFCE serves them all.
 *
 * - Who has work: a peer announces new requests / answers with a WRITE_IMM into the session's
 *   doorbell word whose immediate (`rw.notify_data`) names this side's token; it consumes one of
 *   the jetty's receives and completes on the hub's JFC naming the local jetty (`local_id`). The
 *   hub maps `local_id` to the endpoint (the device writes it: a peer cannot name another
 *   session) and announces that endpoint's token; an immediate that names another token is only
 *   counted ({@link UrmaHub.counters}`.misnamed`).
 * - Every record is handed to its jetty's {@link CompletionSink} (send completions in posting
 *   order, receives); after a reap each sink that got records runs `afterReap()` (repost, publish
 *   credits), outside the record loop so it may post and reap again.
 * - Limits: a JFC holds `depth` records; each jetty reserves {@link CQES_PER_JETTY} of them
 *   (its receives, its signaled sends, one batch of error completions), so a JFC serves
 *   `depth / CQES_PER_JETTY` jetties and a further one gets another JFC on the same JFCE. A
 *   JFC that overflows anyway (the device reports it) is broken: every endpoint on it fails with
 *   the reason and the hub puts no new jetty on it. A post refused for want of room (URMA_EAGAIN)
 *   is back-pressure: its poster reaps the records (`reapRecords`) and posts the rest.
 * - `wait` arms every JFC, reaps once more (a completion that raced with the arming is seen
 *   now), then waits on the JFCE fd off the JS thread (helper `vb_wait_fd`) and acknowledges the
 *   events. `wake` — and an announcement made while a wait is parked (the engine keeps one across
 *   turns) — sends a zero-length SEND to the hub's own wake jetty (wake_jetty.ts), once per
 *   sleep: it completes on the JFC and makes the JFCE readable.
 *
 * Jetties come ready from the hub's pool (jetty_pool.ts); their bindings are hub_binding.ts.
 * Control path: `forProcess`, `bind`; data path: `reap`, `collect`, `announce` (allocate
 * nothing). One JS thread.
 * @module
 */
import { URMA_CR_OPC } from "../../ffi/symbols/liburma.ts";
import type { ReadinessSource } from "../readiness.ts";
import { UrmaContext, type UrmaDeviceAttr } from "./context.ts";
import { CrReader } from "./data_path.ts";
import { type CompletionSink, HubBinding, type HubJfc } from "./hub_binding.ts";
import { JFC_DEPTH_WANTED, MAX_TOKENS, REAP_BATCH } from "./endpoint_config.ts";
import type { Jfce } from "./jfc.ts";
import { CQES_PER_JETTY, JettyPool, type PoolOptions } from "./jetty_pool.ts";
import { WakeJetty } from "./wake_jetty.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** Hub counters (tests, stats). */
export interface HubCounters {
  /** `urma_poll_jfc` calls. */
  polls: number;
  /** Completion records reaped. */
  records: number;
  /** Tokens announced. */
  announced: number;
  /** Receive completions whose immediate named another token than their jetty's. */
  misnamed: number;
  /** Records of no known jetty (released already). */
  strays: number;
  /** Waits that slept on the JFCE. */
  sleeps: number;
  /** Posts refused because a JFC had no room (URMA_EAGAIN), reaped and posted on. */
  fullPosts: number;
}

/** How a hub is opened (tests shrink the JFC to provoke an overrun). */
export interface HubOptions extends PoolOptions {
  /** JFC depth (default: the device's maximum, at most JFC_DEPTH_WANTED). */
  jfcDepth?: number;
  /** Records reserved per jetty (default CQES_PER_JETTY; a test may lie to overfill a JFC). */
  cqesPerJetty?: number;
}

/** See the module documentation. */
export class UrmaHub implements ReadinessSource {
  static readonly #hubs = new Map<string, UrmaHub>();
  readonly kind = "urma" as const;
  readonly capacity = MAX_TOKENS;
  readonly lib: UrmaLib;
  readonly ctx: UrmaContext;
  readonly jfce: Jfce;
  /** What the device can do (`urma_query_device`, once). */
  readonly cap: UrmaDeviceAttr;
  /** The JFCs (normally one). */
  readonly jfcs: HubJfc[] = [];
  /** The prepared jetties and cached segments. */
  readonly pool: JettyPool;
  readonly counters: HubCounters = {
    polls: 0,
    records: 0,
    announced: 0,
    misnamed: 0,
    strays: 0,
    sleeps: 0,
    fullPosts: 0,
  };
  readonly #depth: number;
  readonly #perJetty: number;
  readonly #key: string;
  readonly #records = new CrReader(REAP_BATCH);
  readonly #byJetty = new Map<number, HubBinding>();
  readonly #byToken: (HubBinding | undefined)[] = [];
  readonly #freeTokens: number[] = [];
  readonly #ready = new Uint32Array(MAX_TOKENS);
  readonly #isReady = new Uint8Array(MAX_TOKENS);
  #readyCount = 0;
  readonly #touched: HubBinding[] = [];
  #reaping = false;
  /** Moves at every announcement and local wake (the engine's doorbell). */
  #bell = 0;
  #sleepers = 0;
  /** A self-send woke the current sleep already. */
  #rung = false;
  #wake: WakeJetty | null = null;
  #closed = false;

  private constructor(lib: UrmaLib, ctx: UrmaContext, key: string, o: HubOptions) {
    this.lib = lib;
    this.ctx = ctx;
    this.#key = key;
    this.cap = ctx.query();
    this.jfce = ctx.createJfce();
    this.#depth = Math.min(o.jfcDepth ?? JFC_DEPTH_WANTED, this.cap.maxJfcDepth);
    this.#perJetty = o.cqesPerJetty ?? CQES_PER_JETTY;
    this.pool = new JettyPool(this, o);
    try {
      this.#wake = new WakeJetty(this);
    } catch {
      this.#wake = null; // waits then end at their timeout
    }
  }

  /**
   * This process's hub for `lib` on `device` / `eidIndex` (created on first use). Throws when
   * the device cannot be opened.
   */
  static forProcess(
    lib: UrmaLib,
    device: string | undefined,
    eidIndex: number,
    options: HubOptions = {},
  ): UrmaHub {
    const key = `${lib.path}|${device ?? ""}|${eidIndex}`;
    let hub = UrmaHub.#hubs.get(key);
    if (hub && !hub.#closed) return hub;
    const ctx = UrmaContext.open(lib, device, eidIndex);
    try {
      hub = new UrmaHub(lib, ctx, key, options);
    } catch (e) {
      ctx.close();
      throw e;
    }
    UrmaHub.#hubs.set(key, hub);
    return hub;
  }

  /** The hubs open in this process (tests). */
  static get open(): UrmaHub[] {
    return [...UrmaHub.#hubs.values()];
  }

  /**
   * Simulator objects the hubs of this process hold for themselves (context, JFCE, JFCs, the
   * wake jetty's five, the pool's): tests subtract them to count what sessions leave behind.
   */
  static heldObjects(): number {
    let n = 0;
    for (const hub of UrmaHub.#hubs.values()) {
      n += 2 + hub.jfcs.length + (hub.#wake ? WakeJetty.OBJECTS : 0) + hub.pool.heldObjects;
    }
    return n;
  }

  /** Jetties one JFC serves. */
  get jettiesPerJfc(): number {
    return Math.max(1, Math.floor(this.#depth / this.#perJetty));
  }

  /** A JFC with room for one more jetty (creating one on the hub's JFCE when all are full). */
  placeJetty(): HubJfc {
    for (const j of this.jfcs) {
      if (j.broken === null && j.users < this.jettiesPerJfc) {
        j.users++;
        return j;
      }
    }
    const j: HubJfc = { jfc: this.ctx.createJfc(this.#depth, this.jfce), users: 1, broken: null };
    this.jfcs.push(j);
    return j;
  }

  /** A jetty left `home` (its JFC is deleted once broken and unused). */
  unplaceJetty(home: HubJfc): void {
    home.users--;
    if (home.users <= 0 && home.broken !== null) {
      const i = this.jfcs.indexOf(home);
      if (i >= 0) this.jfcs.splice(i, 1);
      try {
        home.jfc.close();
      } catch { /* its queues are gone; nothing else to do */ }
    }
  }

  /** Routes the completions of jetty `jettyId` (on `home`) to `sink`; its token. */
  bind(jettyId: number, home: HubJfc, sink: CompletionSink): HubBinding {
    const token = this.#freeTokens.pop() ?? this.#byToken.length;
    if (token >= MAX_TOKENS) throw new RangeError(`more than ${MAX_TOKENS} URMA endpoints`);
    const b = new HubBinding(token, jettyId, sink, home);
    this.#byToken[token] = b;
    this.#byJetty.set(jettyId, b);
    return b;
  }

  /** Ends a binding (its records become strays). Safe twice. */
  unbind(b: HubBinding): void {
    if (b.released) return;
    b.released = true;
    if (this.#byJetty.get(b.jettyId) === b) this.#byJetty.delete(b.jettyId);
    if (this.#byToken[b.token] === b) {
      this.#byToken[b.token] = undefined;
      this.#freeTokens.push(b.token);
    }
  }

  /** Live bindings (tests). */
  get bindings(): number {
    return this.#byJetty.size;
  }

  /**
   * Marks `token` as having work (the engine polls its endpoint next). A wait parked meanwhile
   * (the engine keeps one across turns) is woken, once per sleep. Allocates nothing.
   */
  announce(token: number): void {
    if (token >>> 0 >= MAX_TOKENS || this.#isReady[token] === 1) return;
    this.#isReady[token] = 1;
    this.#ready[this.#readyCount++] = token;
    this.counters.announced++;
    this.#bell = (this.#bell + 1) | 0;
    this.#ringSleepers();
  }

  /** Wakes the parked waits (one self-send per sleep: it wakes every waiter of the fd). */
  #ringSleepers(): void {
    if (this.#sleepers > 0 && !this.#rung) {
      this.#rung = true;
      this.#wake?.ring();
    }
  }

  /**
   * Polls every JFC, hands each record to its jetty's sink and announces the jetties that
   * received; then runs `afterReap()` of each sink that got records. Returns the records reaped.
   * A call made while records are being handed out returns 0 (the running one goes on polling).
   */
  reap(): number {
    if (this.#reaping || this.#closed) return 0;
    const total = this.reapRecords();
    const touched = this.#touched;
    while (touched.length > 0) {
      const b = touched.pop()!;
      b.touched = false;
      if (!b.released) b.sink.afterReap();
    }
    return total;
  }

  /**
   * The record half of {@link reap}: polls every JFC and hands each record to its sink, but
   * leaves the sinks' `afterReap()` to the next `reap()` — for a poster that needs room on the
   * JFC in the middle of its post (send_side.ts), where an `afterReap()` posting on the same
   * jetty would interleave with the post. Returns the records reaped (0 while a reap runs).
   */
  reapRecords(): number {
    if (this.#reaping || this.#closed) return 0;
    this.#reaping = true;
    let total = 0;
    try {
      const records = this.#records, jfcs = this.jfcs;
      for (let j = 0; j < jfcs.length; j++) {
        const home = jfcs[j];
        if (home.broken !== null) continue;
        for (;;) {
          let n: number;
          this.counters.polls++;
          try {
            n = home.jfc.poll(records);
          } catch (e) {
            this.#breakJfc(home, (e as Error).message);
            break;
          }
          for (let i = 0; i < n; i++) this.#deliver(records, i);
          total += n;
          if (n < records.max) break;
        }
      }
    } finally {
      this.#reaping = false;
    }
    this.counters.records += total;
    return total;
  }

  #deliver(records: CrReader, i: number): void {
    const b = this.#byJetty.get(records.localId(i));
    if (b === undefined) {
      this.counters.strays++;
      return;
    }
    b.sink.onCompletion(records, i);
    if (records.isRecv(i)) {
      if (records.opcode(i) === URMA_CR_OPC.WRITE_WITH_IMM && records.imm(i) !== b.token) {
        this.counters.misnamed++;
      }
      this.announce(b.token);
    }
    if (!b.touched) {
      b.touched = true;
      this.#touched.push(b);
    }
  }

  #breakJfc(home: HubJfc, why: string): void {
    const reason = `the shared JFC failed (${why}): its completions cannot be trusted`;
    home.broken = reason;
    for (const b of this.#byJetty.values()) {
      if (b.home !== home) continue;
      b.sink.onJfcFailure(reason);
      this.announce(b.token);
    }
    if (this.#wake?.home === home) { // its rings would land on the broken JFC: a new one
      this.#wake.close();
      try {
        this.#wake = new WakeJetty(this);
      } catch {
        this.#wake = null;
      }
    }
  }

  // ---- ReadinessSource ----

  collect(out: Uint32Array): number {
    this.reap();
    const n = this.#readyCount, ready = this.#ready, flags = this.#isReady;
    for (let k = 0; k < n; k++) {
      const t = ready[k];
      out[k] = t;
      flags[t] = 0;
    }
    this.#readyCount = 0;
    return n;
  }

  doorbell(): number {
    return this.#bell;
  }

  async wait(seen: number, timeoutMs: number): Promise<boolean> {
    // (tokens still queued moved the bell after `seen` was read: this check covers them)
    if (this.#bell !== seen || this.#closed) return true;
    try {
      for (const j of this.jfcs) if (j.broken === null) j.jfc.rearm();
      this.reap(); // a completion that came before the arming
      if (this.#bell !== seen) return true;
      this.counters.sleeps++;
      this.#rung = false;
      this.#sleepers++;
      try {
        const events = await this.jfce.wait(timeoutMs);
        return events > 0 || this.#bell !== seen;
      } finally {
        this.#sleepers--;
      }
    } catch {
      return false;
    }
  }

  wake(): void {
    this.#bell = (this.#bell + 1) | 0;
    this.#ringSleepers();
  }

  /** Waits sleeping on the JFCE now (tests: one wait serves every session). */
  get parkedWaits(): number {
    return this.#sleepers;
  }

  /** Closes everything (tests; every endpoint must be closed first). Safe twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (UrmaHub.#hubs.get(this.#key) === this) UrmaHub.#hubs.delete(this.#key);
    try {
      this.pool.close();
      this.#wake?.close();
    } finally {
      this.ctx.close();
    }
  }
}
