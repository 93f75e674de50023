/**
 * The verbs fabric's {@link FabricEndpoint}: one RC QP (resources in verbs_resources.ts, the
 * connection in cm.ts, send-side accounting in send_queue.ts). Data path: nothing allocates.
 *
 * - `write(src)` copies `src` into the registered bounce ring (sent INLINE when it fits the QP's
 *   `max_inline_data`); `writeSg` is one multi-SGE RDMA WRITE straight from `local`; `writeU32` a
 *   separate small inline WRITE (state-last publication); `read` an RDMA READ into `local`.
 * - `flush()` and `kick()` ring one doorbell at the end of the current job (a microtask), so the
 *   calls submitted in one job — a window of pipelined calls resolved together — share one
 *   `ibv_post_send` and one kick. `poll()`, `waitInbound()` and `close()` ring it at once.
 * - `kick()` writes the next value of a counter into the peer's doorbell word; when the peer
 *   waits in event mode it is an RDMA_WRITE_WITH_IMM, so the peer's completion channel fires.
 * - `waitInbound`: poll mode resolves on the next macrotask (the progress loop busy-polls);
 *   event mode arms both CQs and waits on the completion channel off the JS thread.
 * - A failed post or an error completion fails the endpoint, naming `ibv_wc_status_str`, the
 *   opcode and the peer.
 * @module
 */
import { FABRIC_HEADER } from "../control_page.ts";
import { IBV_WC_WR_FLUSH_ERR } from "../../ffi/symbols/libibverbs.ts";
import { setImmediate } from "node:timers";
import { errnoName, VerbusError } from "../../errors.ts";
import { VB_RECV_DESC } from "../../ffi/layouts/helper.ts";
import { IBV_SEND, IBV_WR } from "../../ffi/symbols/libibverbs.ts";
import {
  type Completions,
  type FabricEndpoint,
  FAILED,
  FULL,
  OK,
  SIGNALED,
} from "../fabric.ts";
import type { CmConnection } from "./cm.ts";
import { wcStatusStr } from "./cq.ts";
import { INTERNAL, SendQueue } from "./send_queue.ts";
import type { VerbsLib } from "./verbs_lib.ts";
import type { EndpointResources } from "./verbs_resources.ts";
import { WcReader } from "./wc_reader.ts";

/** `user` of the handshake probe read (not reported to the caller). */
const PROBE = -2;
const DB = FABRIC_HEADER.doorbell >> 2, SLEEPING = FABRIC_HEADER.sleeping >> 2;

/** Where the peer's region is, learned at connection time. */
export interface RemoteRegion {
  /** Address of the peer's region (user-space addresses fit in 53 bits). */
  addr: number;
  rkey: number;
  /** The peer waits in event mode: kicks carry an immediate. */
  peerEvents: boolean;
}

/** The verbs endpoint of one session side. Single JS thread. */
export class VerbsEndpoint implements FabricEndpoint {
  readonly kind = "verbs" as const;
  readonly simulated = false;
  readonly local: Uint8Array;
  readonly remoteSize: number;
  /** Send-side accounting (counters for tests and stats). */
  readonly sq: SendQueue;
  /** Called once from close() (the provider forgets the session). */
  onClose: (() => void) | null = null;
  readonly #lib: VerbsLib;
  readonly #res: EndpointResources;
  readonly #words: Int32Array;
  readonly #regionAddr: number;
  readonly #regionLkey: number;
  readonly #maxInline: number;
  readonly #maxSge: number;
  readonly #events: boolean;
  readonly #rwc = new WcReader(64);
  readonly #recvDescs: Uint8Array;
  readonly #recvSge = new Uint8Array(16);
  readonly #recvBad = new Uint32Array(1);
  readonly #flushTask = () => {
    this.#flushQueued = false;
    this.#flushNow();
  };
  #flushQueued = false;
  #kickWanted = false;
  #peerEvents = false;
  #kicks = 0;
  #dbReaped = 0;
  #rqPosted = 0;
  #closed = false;
  #failed: string | null = null;
  #failedByFlush = false;
  #conn: CmConnection | null = null;
  #waitP: Promise<boolean> | null = null;
  #teardown: Promise<void> | null = null;

  /**
   * @param res this endpoint's resources (owned: released by close())
   * @param remoteSize the peer region's size (every remote offset is checked against it)
   * @param peer printable peer name for errors ("10.77.0.2:7001")
   * @param signalEvery signal one send WR in this many
   */
  constructor(
    lib: VerbsLib,
    res: EndpointResources,
    remoteSize: number,
    readonly peer: string,
    signalEvery = 32,
  ) {
    this.#lib = lib;
    this.#res = res;
    this.local = res.local;
    this.remoteSize = remoteSize;
    this.sq = new SendQueue(lib, res, peer, signalEvery, (why, flush) => this.fail(why, flush));
    this.#words = new Int32Array(this.local.buffer, this.local.byteOffset, 8);
    this.#regionAddr = res.region.address;
    this.#regionLkey = res.region.lkey;
    this.#maxInline = res.qp.cap.maxInlineData;
    this.#maxSge = res.shape.maxSge;
    this.#events = res.shape.events;
    // Zero-length receives (num_sge 0): they only catch the immediates of kicks.
    this.#recvDescs = new Uint8Array(Math.min(res.shape.rqDepth, 256) * VB_RECV_DESC.$size);
  }

  /** Connects the data path to the peer's region (the QP is RTS) and posts the receives. */
  attach(remote: RemoteRegion, conn: CmConnection): void {
    this.sq.raddr = remote.addr;
    this.sq.rkey = remote.rkey >>> 0;
    this.#peerEvents = remote.peerEvents;
    this.#conn = conn;
    conn.onDown = (why) => this.fail(`RDMA connection to ${this.peer} went down: ${why}`);
    if (this.#closed || this.#failed !== null) return;
    this.sq.usable = true;
    if (this.#events) this.#repost();
  }

  get failed(): boolean {
    return this.#failed !== null;
  }

  /** Why the endpoint failed, or null. */
  get failureReason(): string | null {
    return this.#failed;
  }

  /** The native resources (owned by this endpoint). */
  get resources(): EndpointResources {
    return this.#res;
  }

  /** The QP's granted capabilities (max inline data, ...). */
  get qpCap(): EndpointResources["qp"]["cap"] {
    return this.#res.qp.cap;
  }

  /** The CM connection (null before attach). */
  get connection(): CmConnection | null {
    return this.#conn;
  }

  /** Resolves once close() released every native resource. */
  get closed(): Promise<void> {
    return this.#teardown ?? Promise.resolve();
  }

  #inRemote(off: number, len: number): boolean {
    return off >= 0 && len >= 0 && off + len <= this.remoteSize;
  }

  /** Offset of `v` in `local`, or -1 when it is not a view of it. */
  #localOffset(v: Uint8Array): number {
    if (v.buffer !== this.local.buffer) return -1;
    const off = v.byteOffset - this.local.byteOffset;
    return off >= 0 && off + v.length <= this.local.length ? off : -1;
  }

  write(wrId: number, remoteOff: number, src: Uint8Array, flags: number): number {
    const q = this.sq;
    if (!q.usable) return FAILED;
    const len = src.length;
    if (!this.#inRemote(remoteOff, len) || len > q.maxBounce) return FAILED;
    const at = q.reserve(len);
    if (at < 0) return q.usable ? FULL : FAILED;
    q.bounce.set(src, at);
    q.one(
      IBV_WR.RDMA_WRITE,
      len <= this.#maxInline ? IBV_SEND.INLINE : 0,
      q.bAddr + at,
      len,
      q.bLkey,
      remoteOff,
      0,
      wrId,
      (flags & SIGNALED) !== 0,
    );
    return OK;
  }

  writeSg(
    wrId: number,
    remoteOff: number,
    sg: readonly Uint8Array[],
    count: number,
    flags: number,
  ): number {
    const q = this.sq;
    if (!q.usable) return FAILED;
    let total = 0, direct = count <= this.#maxSge;
    for (let i = 0; i < count; i++) {
      total += sg[i].length;
      if (direct && sg[i].length > 0 && this.#localOffset(sg[i]) < 0) direct = false;
    }
    if (!this.#inRemote(remoteOff, total)) return FAILED;
    const report = (flags & SIGNALED) !== 0,
      inline = total <= this.#maxInline ? IBV_SEND.INLINE : 0;
    if (direct) { // straight from the registered region: one WR, one SGE per view
      if (q.reserve(0) < 0) return q.usable ? FULL : FAILED;
      q.room();
      for (let i = 0; i < count; i++) {
        if (sg[i].length > 0) {
          q.sge(this.#regionAddr + this.#localOffset(sg[i]), sg[i].length, this.#regionLkey);
        }
      }
      q.finish(IBV_WR.RDMA_WRITE, inline, remoteOff, 0, wrId, report);
      return OK;
    }
    if (total > q.maxBounce) return FAILED;
    const at = q.reserve(total); // views from elsewhere: gathered through the bounce ring
    if (at < 0) return q.usable ? FULL : FAILED;
    for (let i = 0, o = at; i < count; o += sg[i].length, i++) q.bounce.set(sg[i], o);
    q.one(IBV_WR.RDMA_WRITE, inline, q.bAddr + at, total, q.bLkey, remoteOff, 0, wrId, report);
    return OK;
  }

  writeU32(wrId: number, remoteOff: number, value: number, flags: number): number {
    const q = this.sq;
    if (!q.usable) return FAILED;
    if (!this.#inRemote(remoteOff, 4) || (remoteOff & 3) !== 0) return FAILED;
    const at = q.reserve(4);
    if (at < 0) return q.usable ? FULL : FAILED;
    q.bounce32[at >> 2] = value;
    q.one(
      IBV_WR.RDMA_WRITE,
      IBV_SEND.INLINE,
      q.bAddr + at,
      4,
      q.bLkey,
      remoteOff,
      0,
      wrId,
      (flags & SIGNALED) !== 0,
    );
    return OK;
  }

  read(wrId: number, dst: Uint8Array, remoteOff: number, flags: number): number {
    const q = this.sq;
    if (!q.usable) return FAILED;
    const off = this.#localOffset(dst);
    if (off < 0 || !this.#inRemote(remoteOff, dst.length)) return FAILED;
    if (q.reserve(0) < 0) return q.usable ? FULL : FAILED;
    q.one(
      IBV_WR.RDMA_READ,
      0,
      this.#regionAddr + off,
      dst.length,
      this.#regionLkey,
      remoteOff,
      0,
      wrId,
      (flags & SIGNALED) !== 0,
    );
    return OK;
  }

  flush(): void {
    if (this.#flushQueued || (this.sq.batched === 0 && !this.#kickWanted)) return;
    this.#flushQueued = true;
    queueMicrotask(this.#flushTask);
  }

  kick(): void {
    if (!this.sq.usable) return;
    this.#kickWanted = true;
    this.flush();
  }

  /** Appends the pending kick (with an immediate for an event-mode peer) and posts the batch. */
  #flushNow(): void {
    const q = this.sq;
    if (!q.usable) return;
    if (this.#kickWanted) {
      this.#kickWanted = false;
      const at = q.reserve(4);
      if (at >= 0) { // no room: the peer still finds the work on its next poll
        this.#kicks = (this.#kicks + 1) >>> 0;
        q.bounce32[at >> 2] = this.#kicks;
        const op = this.#peerEvents ? IBV_WR.RDMA_WRITE_WITH_IMM : IBV_WR.RDMA_WRITE;
        q.one(
          op,
          IBV_SEND.INLINE,
          q.bAddr + at,
          4,
          q.bLkey,
          FABRIC_HEADER.doorbell,
          this.#kicks,
          INTERNAL,
          false,
        );
      }
    }
    q.post();
  }

  poll(out: Completions): number {
    if (this.#closed) return 0;
    this.#flushNow();
    this.sq.maybeReap();
    return this.sq.take(out);
  }

  statusText(status: number): string {
    return status === 0 ? "success" : wcStatusStr(this.#lib, status);
  }

  doorbell(): number {
    if (this.#closed) return 0;
    const db = Atomics.load(this.#words, DB);
    this.sq.maybeReap();
    if (this.#events && db !== this.#dbReaped) {
      this.#dbReaped = db;
      this.#reapRecv();
    }
    return db;
  }

  /** Reaps receive completions (immediates of kicks) and reposts receives in batches. */
  #reapRecv(): void {
    if (this.sq.released) return;
    const wc = this.#rwc;
    const n = this.#lib.helper.lib.symbols.vb_poll_cq(this.#res.recvCq.handle, wc.max, wc.buffer);
    if (n <= 0) return;
    for (let k = 0; k < n; k++) {
      const st = wc.status(k);
      if (st !== 0 && !this.#closed) {
        this.fail(
          `receive from ${this.peer} completed with "${wcStatusStr(this.#lib, st)}" (status ${st})`,
          st === IBV_WC_WR_FLUSH_ERR,
        );
      }
    }
    this.#rqPosted -= n;
    if (this.sq.usable && this.#recvDescs.length / VB_RECV_DESC.$size - this.#rqPosted >= 16) {
      this.#repost();
    }
  }

  #repost(): void {
    const k = this.#recvDescs.length / VB_RECV_DESC.$size - this.#rqPosted;
    if (k <= 0) return;
    const rc = this.#lib.helper.lib.symbols.vb_post_recv(
      this.#res.qp.handle,
      this.#recvDescs,
      this.#recvSge,
      k,
      this.#recvBad,
    );
    if (rc !== 0) {
      return this.fail(`ibv_post_recv failed with ${errnoName(rc)} (QP to ${this.peer})`);
    }
    this.#rqPosted += k;
  }

  waitInbound(seen: number, timeoutMs: number): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    if (!this.sq.usable) {
      return new Promise((r) => setTimeout(() => r(false), Math.min(timeoutMs, 50)));
    }
    if (!this.#events) {
      return new Promise((r) => setImmediate(() => r(!this.#closed && this.doorbell() !== seen)));
    }
    return this.#waitWithEvents(seen, timeoutMs);
  }

  async #waitWithEvents(seen: number, timeoutMs: number): Promise<boolean> {
    if (this.#waitP) return await this.#waitP;
    this.#flushNow();
    try {
      this.#res.sendCq.reqNotify();
      this.#res.recvCq.reqNotify();
    } catch (e) {
      this.fail((e as Error).message);
      return false;
    }
    // What arrived before the CQs were armed raises no event: look once more.
    this.#reapRecv();
    this.sq.reap();
    if (Atomics.load(this.#words, DB) !== seen || this.sq.pending > 0) return true;
    Atomics.store(this.#words, SLEEPING, 1);
    let woke = false;
    try {
      this.#waitP = this.#res.channel!.waitEvent(timeoutMs);
      woke = await this.#waitP;
    } catch (e) {
      if (!this.#closed) {
        this.fail(`waiting for a completion event failed: ${(e as Error).message}`);
      }
    } finally {
      this.#waitP = null;
      if (!this.#closed) Atomics.store(this.#words, SLEEPING, 0);
    }
    if (this.#closed) return false;
    this.#reapRecv();
    return woke || Atomics.load(this.#words, DB) !== seen;
  }

  /**
   * Handshake check: RDMA READs `len` (≤ 256) bytes of the peer's region at `remoteOff` into the
   * bounce ring and returns a copy — proof that the connection and the peer's rkey work. Throws
   * HANDSHAKE naming the completion status when they do not.
   */
  async probe(remoteOff: number, len: number, timeoutMs = 5000): Promise<Uint8Array> {
    const q = this.sq;
    if (!q.usable || !this.#inRemote(remoteOff, len) || len > 256) {
      throw new VerbusError(
        "HANDSHAKE",
        `probe of the peer region at ${remoteOff}+${len}: ${
          this.#failed ?? "not connected / out of bounds"
        }`,
      );
    }
    const at = q.reserve(len);
    if (at < 0) throw new VerbusError("HANDSHAKE", "probe: no send-queue room");
    const seq = q.nextSeq;
    q.one(IBV_WR.RDMA_READ, 0, q.bAddr + at, len, q.bLkey, remoteOff, 0, PROBE, true);
    q.post();
    const end = performance.now() + timeoutMs;
    while (!q.completed(seq) && this.#failed === null && performance.now() < end) {
      if (q.reap() === 0) await new Promise((r) => setTimeout(r, 1));
    }
    if (this.#failed !== null) {
      throw new VerbusError(
        "HANDSHAKE",
        `probe read of ${this.peer}'s region failed: ${this.#failed}`,
      );
    }
    if (!q.completed(seq)) {
      throw new VerbusError(
        "HANDSHAKE",
        `probe read of ${this.peer}'s region did not complete within ${timeoutMs} ms`,
      );
    }
    return q.bounce.slice(at, at + len);
  }

  /** Test hook: corrupts the peer's rkey for every later post (the next one fails remotely). */
  corruptRkeyForTest(): void {
    this.sq.rkey = (this.sq.rkey ^ 0x00ff00ff) >>> 0;
  }

  /**
   * Fails the endpoint. `flushed`: the reason is a flushed work request — a consequence of a QP
   * that already went to error — so a later completion with the real cause replaces it.
   */
  fail(reason: string, flushed = false): void {
    if (this.#failed !== null && !this.#failedByFlush) return;
    if (this.#failed !== null && flushed) return;
    this.#failed = reason;
    this.#failedByFlush = flushed;
    this.sq.usable = false;
  }

  close(): void {
    if (this.#closed) return;
    this.#flushNow(); // what was published and kicked in this job still goes (a SESSION_CLOSED word)
    this.#closed = true;
    const healthy = this.sq.usable;
    this.sq.usable = false;
    this.#failed ??= "closed";
    this.#teardown = this.#release(healthy);
    this.onClose?.();
  }

  async #release(healthy: boolean): Promise<void> {
    const q = this.sq;
    // Linger (≤ 300 ms) so work already posted reaches the peer before the QP is flushed:
    // end with a signaled zero-length marker and wait for its completion.
    if (healthy && q.outstanding && q.reserve(0) >= 0) {
      const last = q.nextSeq;
      q.one(IBV_WR.RDMA_WRITE, 0, 0, 0, 0, 0, 0, INTERNAL, true);
      q.post();
      const end = performance.now() + 300;
      while (!q.completed(last) && this.#failed === "closed" && performance.now() < end) {
        if (q.reap() === 0) await new Promise((r) => setTimeout(r, 1));
      }
    }
    this.#conn?.disconnect();
    try {
      this.#res.qp.toError(); // flushes the receives: wakes an event-mode waiter at once
    } catch { /* already in error */ }
    if (this.#waitP) await this.#waitP.catch(() => false);
    q.released = true;
    try {
      this.#res.close();
    } finally {
      this.#conn?.close();
    }
  }
}
