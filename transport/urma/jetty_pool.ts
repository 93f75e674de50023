/**
 * The hub's pool (brpc keeps prepared QPs the same way): jetties created ahead of need, each with
 * its own JFR, both completing on the hub's JFC, so a new session takes one instead of paying
 * `urma_create_jfr` + `urma_create_jetty` on its critical path; and registered aux areas (receive
 * buffer, handshake scratch, bounce ring — local-only segments a peer can never reach) kept
 * after their session closed and handed to the next session of the same size, so it does not pay
 * `urma_register_seg` either. Region segments are never reused: each session registers its own
 * with a fresh token (a former peer knows the old one).
 *
 * A taken jetty is refilled in the background (a timer, in batches), never on the taker's path.
 * Control path; one JS thread.
 * @module
 */
import { URMA_ACCESS } from "../../ffi/symbols/liburma.ts";
import {
  CQE_ERROR_MARGIN,
  RECV_DEPTH,
  SGE_PER_WR,
  SIGNALED_PER_JETTY,
  SQ_DEPTH,
} from "./endpoint_config.ts";
import type { UrmaHub } from "./hub.ts";
import type { HubJfc } from "./hub_binding.ts";
import { type Jetty, type Jfr, randomToken, transModeOf, type UrmaMode } from "./jetty.ts";
import type { Segment } from "./segment.ts";

/** JFC records one jetty may have outstanding: its receives, signaled sends, a batch of errors. */
export const CQES_PER_JETTY = RECV_DEPTH + SIGNALED_PER_JETTY + CQE_ERROR_MARGIN;
/** Prepared jetties kept per mode by default. */
const PREPARED = 8;
/** Jetties a refill creates per timer turn. */
const REFILL_BATCH = 8;
/** Aux areas kept for reuse, at most. */
const AUX_CACHED = 64;

/** Pool sizing. */
export interface PoolOptions {
  /** Prepared jetties kept per mode (0: none; every jetty is created when taken). */
  prepared?: number;
}

/** A jetty ready for a session: its JFR (token-guarded) and the JFC both complete on. */
export interface PreparedJetty {
  readonly jetty: Jetty;
  readonly jfr: Jfr;
  /** The jetty's token (the session's region segment is registered with it too). */
  readonly token: number;
  readonly mode: UrmaMode;
  /** The hub JFC it completes on. */
  readonly home: HubJfc;
}

/** Pool counters (tests, stats). */
export interface PoolCounters {
  /** Jetties handed out from the pool. */
  hits: number;
  /** Jetties created on the taker's path (the pool was empty). */
  misses: number;
  /** Aux areas reused / registered anew. */
  auxHits: number;
  auxMisses: number;
}

/** See the module documentation. */
export class JettyPool {
  readonly counters: PoolCounters = { hits: 0, misses: 0, auxHits: 0, auxMisses: 0 };
  readonly #hub: UrmaHub;
  readonly #target: number;
  readonly #ready = new Map<UrmaMode, PreparedJetty[]>();
  readonly #aux = new Map<number, Segment[]>();
  #auxCount = 0;
  #refill: ReturnType<typeof setTimeout> | null = null;
  #closed = false;

  constructor(hub: UrmaHub, o: PoolOptions) {
    this.#hub = hub;
    this.#target = o.prepared ?? PREPARED;
  }

  /** Objects the pool holds (a jetty and a JFR per prepared jetty, cached aux segments). */
  get heldObjects(): number {
    let n = this.#auxCount;
    for (const list of this.#ready.values()) n += 2 * list.length;
    return n;
  }

  /** Prepared jetties waiting (tests). */
  waiting(mode: UrmaMode): number {
    return this.#ready.get(mode)?.length ?? 0;
  }

  /** A jetty for a session (from the pool, else created now); the pool refills later. */
  take(mode: UrmaMode): PreparedJetty {
    const list = this.#ready.get(mode);
    const ready = list?.pop();
    this.#scheduleRefill(mode);
    if (ready) {
      this.counters.hits++;
      return ready;
    }
    this.counters.misses++;
    return this.#create(mode);
  }

  /** Deletes a jetty that served its session (jetty first, then its JFR). */
  retire(p: PreparedJetty): void {
    try {
      p.jetty.close();
    } finally {
      try {
        p.jfr.close();
      } finally {
        this.#hub.unplaceJetty(p.home);
      }
    }
  }

  /** Fills the pool to its target now (tests and servers that want it warm). */
  fill(mode: UrmaMode): void {
    let list = this.#ready.get(mode);
    if (!list) this.#ready.set(mode, list = []);
    while (list.length < this.#target) list.push(this.#create(mode));
  }

  #create(mode: UrmaMode): PreparedJetty {
    const hub = this.#hub, ctx = hub.ctx, token = randomToken(), transMode = transModeOf(mode);
    const home = hub.placeJetty();
    let jfr: Jfr | null = null;
    try {
      jfr = ctx.createJfr(home.jfc, { depth: RECV_DEPTH, token, transMode });
      const jetty = ctx.createJetty(home.jfc, jfr, {
        depth: SQ_DEPTH,
        maxSge: SGE_PER_WR,
        transMode,
      });
      return { jetty, jfr, token, mode, home };
    } catch (e) {
      try {
        jfr?.close();
      } finally {
        hub.unplaceJetty(home);
      }
      throw e;
    }
  }

  #scheduleRefill(mode: UrmaMode): void {
    if (this.#refill !== null || this.#closed || this.#target === 0) return;
    if ((this.#ready.get(mode)?.length ?? 0) >= this.#target) return;
    this.#refill = setTimeout(() => {
      this.#refill = null;
      if (this.#closed) return;
      let list = this.#ready.get(mode);
      if (!list) this.#ready.set(mode, list = []);
      try {
        for (let k = 0; k < REFILL_BATCH && list.length < this.#target; k++) {
          list.push(this.#create(mode));
        }
      } catch {
        return; // the device is out of jetties: takers create (and report) on their own
      }
      this.#scheduleRefill(mode);
    }, 0);
    // deno-lint-ignore no-explicit-any
    (this.#refill as any)?.unref?.(); // never keeps a process alive (Deno: Deno.unrefTimer below)
    // deno-lint-ignore no-explicit-any
    const D = (globalThis as any).Deno;
    if (D?.unrefTimer && typeof this.#refill === "number") D.unrefTimer(this.#refill);
  }

  /** A registered local-only aux area of `bytes` (reused when one is cached). */
  takeAux(bytes: number): Segment {
    const cached = this.#aux.get(bytes)?.pop();
    if (cached) {
      this.#auxCount--;
      this.counters.auxHits++;
      return cached;
    }
    this.counters.auxMisses++;
    return this.#hub.ctx.registerSegment(new Uint8Array(bytes), {
      token: randomToken(),
      access: URMA_ACCESS.LOCAL_ONLY,
    });
  }

  /** Gives an aux area back (kept for the next session, or unregistered when enough are kept). */
  returnAux(seg: Segment): void {
    if (seg.closed) return;
    if (this.#closed || this.#auxCount >= AUX_CACHED) {
      seg.close();
      return;
    }
    let list = this.#aux.get(seg.length);
    if (!list) this.#aux.set(seg.length, list = []);
    list.push(seg);
    this.#auxCount++;
  }

  /** Deletes every prepared jetty and cached aux area. Safe twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#refill !== null) clearTimeout(this.#refill);
    for (const list of this.#ready.values()) for (const p of list.splice(0)) this.retire(p);
    for (const list of this.#aux.values()) for (const s of list.splice(0)) s.close();
    this.#auxCount = 0;
  }
}
