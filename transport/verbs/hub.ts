/**
 * The verbs fabric's per-process hub, one per RDMA device: the device context, ONE completion
 * channel and ONE completion queue shared by every QP of this process on that device (send and
 * receive completions alike), and the readiness source (`transport/readiness.ts`) that tells the
 * process's progress engine which endpoints have work (eRPC: one CQ per dispatch thread, so
 * finding work is one CQ poll, never a scan over sessions).
 * ```
 *  ibv_context (opened once) ── comp channel (one fd) ── CQ (one, max_cqe deep)
 *                                                         ▲   ▲        ▲
 *       session PD ─ QP ─────────────────────────────────┘   │        │   (send + recv)
 *       session PD ─ QP ──────────────────────────────────────┘        │
 *       …  500 sessions, one CQ, one parked wait per process  ─────────┘
 * ```
 * How a completion names its endpoint: every completion carries its local QP number; the hub
 * maps it to the endpoint (a {@link HubMember}). Peers announce work with RDMA WRITE_WITH_IMM
 * whose immediate is the endpoint's token here; a receive completion whose immediate disagrees
 * with its QP's token is counted (`counters.wrongImm`) and the QP's own endpoint is the one
 * announced — a lying peer can only make its own session look busy.
 *
 * brpc's RDMA connections are members too (`brpc_qp.ts`): their receives carry data and their
 * immediates are brpc's credits (`ownImm`: not checked against the token).
 *
 * Each session keeps its own PD (an rkey reaches only its own session's memory); the CQ and
 * the channel belong to the context, not to a PD, so they are shared safely.
 *
 * CQ budget: each member reserves the completions it may have outstanding (its receive queue
 * plus its signaled-send budget); a member that would overflow the CQ is refused (FABRIC), so
 * the CQ can never overrun.
 *
 * Waiting: in poll mode `wait()` yields one macrotask and looks again; in event mode it arms the
 * CQ, looks once more (what completed before arming raises no event) and sleeps on the one
 * channel off the JS thread (and on an eventfd, so `wake()` ends the sleep at once). The engine only parks it after its own spin found nothing, so a
 * busy process never pays the thread hop.
 *
 * The hub lives for the life of the process (like the shm notify page): no wait can outlive it.
 * Threading: one JS thread; `wait` blocks off-thread (helper `vb_get_cq_event`, nonblocking FFI).
 * @module
 */
import { setImmediate } from "node:timers";
import { NativeError, VerbusError } from "../../errors.ts";
import { IBV_WC_OPCODE } from "../../ffi/symbols/libibverbs.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { ReadinessSource } from "../readiness.ts";
import type { Context } from "./context.ts";
import type { CompletionChannel, CompletionQueue } from "./cq.ts";
import { openDevice } from "./device.ts";
import type { VerbsLib } from "./verbs_lib.ts";
import { WcReader } from "./wc_reader.ts";

/** Tokens one hub can name. */
export const HUB_CAPACITY = 65536;
/** Largest CQ the hub asks for (the device may allow less: rxe allows 32,767). */
const MAX_CQ_DEPTH = 65536;
/** Completions polled per `vb_poll_cq` call; a drain makes at most {@link DRAIN_ROUNDS} calls. */
const POLL_BATCH = 128;
const DRAIN_ROUNDS = 8;

/** An endpoint as the hub sees it. Called on the hub's JS thread, during a drain. */
export interface HubMember {
  /** Its QP's number (completions carry it). */
  readonly qpNum: number;
  /** A send completion of its QP: record `k` of `wc`. */
  onSend(wc: WcReader, k: number): void;
  /**
   * A receive completion of its QP (a peer's WRITE_WITH_IMM, or a flushed receive); record `k`
   * of `wc` (members that receive data read its wr_id, length and immediate).
   */
  onReceive(status: number, wc: WcReader, k: number): void;
  /** True when its immediates are its own (brpc's credits), not this hub's token: not checked. */
  readonly ownImm?: boolean;
  /** False: its completions are handled in the dispatch and its token is not announced. */
  readonly announce?: boolean;
}

/** Counters (tests and stats). */
export interface HubCounters {
  /** `vb_poll_cq` calls. */
  polls: number;
  /** Completions dispatched to members. */
  completions: number;
  /** Completions of QPs no longer registered (destroyed sessions). */
  strays: number;
  /** Receives whose immediate named another token than their QP's. */
  wrongImm: number;
  /** Sleeps on the completion channel. */
  sleeps: number;
  /** Waits of members that run their own loop ({@link VerbsHub.waitOwn}). */
  ownWaits: number;
  /**
   * Of those, the ones that ended with nothing dispatched and the doorbell where it was: at their
   * timeout (or after one poll round while an endpoint polls). While data moves, each is a stall.
   */
  ownWaitTimeouts: number;
  /** CQs this hub created (always 1: tests count it). */
  cqs: number;
}

/** One device's shared completion resources and readiness source. See the module doc. */
export class VerbsHub implements ReadinessSource {
  static readonly #hubs = new Map<string, VerbsHub>();
  readonly kind = "verbs" as const;
  readonly capacity = HUB_CAPACITY;
  /** Completions the CQ holds. */
  readonly cqDepth: number;
  readonly counters: HubCounters = {
    polls: 0,
    completions: 0,
    strays: 0,
    wrongImm: 0,
    sleeps: 0,
    ownWaits: 0,
    ownWaitTimeouts: 0,
    cqs: 1,
  };
  readonly #lib: VerbsLib;
  readonly #cqHandle: NonNullPtr;
  readonly #wc = new WcReader(POLL_BATCH);
  readonly #byQp = new Map<number, { member: HubMember; token: number }>();
  readonly #free: number[] = [];
  #highWater = 0;
  /** Tokens announced and not collected yet (deduplicated by #isPending). */
  readonly #pending = new Uint32Array(HUB_CAPACITY);
  readonly #isPending = new Uint8Array(HUB_CAPACITY);
  #pendingCount = 0;
  /** Moves whenever a drain queued a token (the engine's wait sleeps on it). */
  #doorbell = 0;
  #reserved = 0;
  #pollers = 0;
  #draining = false;
  #sleeping: Promise<boolean> | null = null;
  /** An eventfd the channel wait also watches: `wake()` ends a sleep at once. */
  readonly #wakeFd: number;

  private constructor(
    lib: VerbsLib,
    /** The device context (PDs of sessions are its children). */
    readonly ctx: Context,
    /** The one completion channel. */
    readonly channel: CompletionChannel,
    /** The one completion queue. */
    readonly cq: CompletionQueue,
    depth: number,
  ) {
    this.#lib = lib;
    this.cqDepth = depth;
    this.#cqHandle = cq.handle;
    const fd = lib.helper.lib.symbols.vb_eventfd();
    if (fd < 0) throw new NativeError("eventfd", -fd, `wake-up fd of the ${ctx.deviceName} hub`);
    this.#wakeFd = fd;
  }

  /** This process's hub for `device`, created on first use (throws NATIVE_CALL / NO_DEVICE). */
  static forDevice(lib: VerbsLib, device: string): VerbsHub {
    const have = VerbsHub.#hubs.get(device);
    if (have) return have;
    const ctx = openDevice(lib, device);
    try {
      const depth = Math.min(MAX_CQ_DEPTH, ctx.query().maxCqe);
      const channel = ctx.createCompChannel();
      const cq = ctx.createCq(depth, channel);
      const hub = new VerbsHub(lib, ctx, channel, cq, depth);
      VerbsHub.#hubs.set(ctx.deviceName, hub);
      if (ctx.deviceName !== device) VerbsHub.#hubs.set(device, hub);
      return hub;
    } catch (e) {
      ctx.close();
      throw e;
    }
  }

  /** The hubs this process has (tests: one CQ per device, whatever the number of sessions). */
  static all(): VerbsHub[] {
    return [...new Set(VerbsHub.#hubs.values())];
  }

  /** Members registered now. */
  get members(): number {
    return this.#byQp.size;
  }

  /** CQ entries reserved by members. */
  get reserved(): number {
    return this.#reserved;
  }

  /**
   * Registers `member` (its QP exists, on this hub's CQ) and returns its token. `cqes`: the
   * completions it may have outstanding. Throws FABRIC when the CQ could overflow (the session
   * then falls back to TCP) or every token is in use.
   */
  join(member: HubMember, cqes: number): number {
    if (this.#reserved + cqes > this.cqDepth) {
      throw new VerbusError(
        "FABRIC",
        `the process's completion queue on ${this.ctx.deviceName} is full: ${this.#byQp.size} sessions reserve ${this.#reserved} of ${this.cqDepth} entries`,
      );
    }
    const token = this.#free.length > 0
      ? this.#free.pop()!
      : this.#highWater < HUB_CAPACITY
      ? this.#highWater++
      : -1;
    if (token < 0) throw new VerbusError("FABRIC", `all ${HUB_CAPACITY} verbs tokens are in use`);
    this.#reserved += cqes;
    this.#byQp.set(member.qpNum, { member, token });
    return token;
  }

  /** Unregisters (its QP is about to be destroyed). Later completions of it are strays. */
  leave(member: HubMember, cqes: number): void {
    const e = this.#byQp.get(member.qpNum);
    if (!e || e.member !== member) return;
    this.#byQp.delete(member.qpNum);
    this.#unqueue(e.token);
    this.#free.push(e.token);
    this.#reserved -= cqes;
  }

  /**
   * Drops `token` from the queue for `collect` (its member left before the engine collected it):
   * a stale token would keep {@link wait} returning at once, and would give the token's next
   * owner a turn it did not earn. Setup path: a scan of the queue.
   */
  #unqueue(token: number): void {
    if (this.#isPending[token] === 0) return;
    this.#isPending[token] = 0;
    const q = this.#pending;
    let n = 0;
    for (let i = 0; i < this.#pendingCount; i++) if (q[i] !== token) q[n++] = q[i];
    this.#pendingCount = n;
  }

  /** One more (+1) or one fewer (−1) endpoint in poll mode: while any lives, `wait` busy-polls. */
  polling(delta: 1 | -1): void {
    this.#pollers += delta;
  }

  /**
   * Polls the CQ until it is empty (bounded) and hands every completion to its member; queues
   * the members' tokens for `collect`. Returns the completions dispatched. Re-entrant calls
   * (a member's handler reaping) return 0. Data path: allocates nothing.
   */
  drain(): number {
    if (this.#draining) return 0;
    this.#draining = true;
    const wc = this.#wc, poll = this.#lib.helper.lib.symbols.vb_poll_cq;
    let total = 0;
    try {
      for (let round = 0; round < DRAIN_ROUNDS; round++) {
        this.counters.polls++;
        const n = poll(this.#cqHandle, POLL_BATCH, wc.buffer);
        if (n <= 0) break;
        for (let k = 0; k < n; k++) this.#dispatch(wc, k);
        total += n;
        if (n < POLL_BATCH) break;
      }
    } finally {
      this.#draining = false;
    }
    return total;
  }

  #dispatch(wc: WcReader, k: number): void {
    const e = this.#byQp.get(wc.qpNum(k));
    if (e === undefined) {
      this.counters.strays++;
      return;
    }
    this.counters.completions++;
    if ((wc.opcode(k) & IBV_WC_OPCODE.RECV) !== 0) {
      const status = wc.status(k);
      if (status === 0 && e.member.ownImm !== true && wc.imm(k) !== e.token) {
        this.counters.wrongImm++;
      }
      e.member.onReceive(status, wc, k);
    } else {
      e.member.onSend(wc, k);
    }
    if (e.member.announce === false) return;
    const t = e.token;
    if (this.#isPending[t] === 0) {
      this.#isPending[t] = 1;
      this.#pending[this.#pendingCount++] = t;
      this.#doorbell = (this.#doorbell + 1) | 0;
    }
  }

  collect(out: Uint32Array): number {
    this.drain();
    const n = this.#pendingCount;
    for (let i = 0; i < n; i++) {
      const t = this.#pending[i];
      out[i] = t;
      this.#isPending[t] = 0;
    }
    this.#pendingCount = 0;
    return n;
  }

  doorbell(): number {
    return this.#doorbell;
  }

  wait(seen: number, timeoutMs: number): Promise<boolean> {
    if (this.#doorbell !== seen || this.#pendingCount > 0) return Promise.resolve(true);
    return this.#park(seen, timeoutMs);
  }

  /** One poll round later while an endpoint polls; else the one shared sleep on the channel. */
  #park(seen: number, timeoutMs: number): Promise<boolean> {
    if (this.#pollers > 0) {
      return new Promise((r) => setImmediate(() => r(this.drain() > 0 || this.#doorbell !== seen)));
    }
    this.#sleeping ??= this.#sleep(seen, timeoutMs).finally(() => (this.#sleeping = null));
    return this.#sleeping;
  }

  async #sleep(seen: number, timeoutMs: number): Promise<boolean> {
    this.cq.reqNotify();
    // What completed before the CQ was armed raises no event. Completions handed to members that
    // announce nothing (brpc connections in event mode) end the wait too: their owner must run.
    if (this.drain() > 0 || this.#doorbell !== seen) return true;
    this.counters.sleeps++;
    const woke = await this.channel.waitEventOrWake(this.#wakeFd, timeoutMs);
    return this.drain() > 0 || woke || this.#doorbell !== seen;
  }

  /**
   * The wait of a member that runs its own loop (a brpc connection in event mode): like
   * {@link wait}, but tokens queued for the progress engine do not end it. Those are the engine's
   * to collect on its own turn; a waiter that returned at once for them would loop in microtasks
   * while the engine, which runs on a macrotask, never gets the turn that clears them.
   * Resolves true when completions were dispatched or the doorbell moved, false on timeout.
   */
  async waitOwn(timeoutMs: number): Promise<boolean> {
    this.counters.ownWaits++;
    const woke = await this.#park(this.#doorbell, timeoutMs);
    if (!woke) this.counters.ownWaitTimeouts++;
    return woke;
  }

  /** Local work arrived (or the last session left): the wait returns at once. */
  wake(): void {
    this.#doorbell = (this.#doorbell + 1) | 0;
    if (this.#sleeping) this.#lib.helper.lib.symbols.vb_eventfd_signal(this.#wakeFd);
  }

  /** Waits parked on the channel now (tests: one serves every session). */
  get parkedWaits(): number {
    return this.#sleeping ? 1 : 0;
  }
}
