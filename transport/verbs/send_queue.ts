/**
 * Data path of the verbs fabric, send side: the accounting behind one RC QP's send queue.
 * Everything is preallocated; nothing here allocates per work request.
 *
 * - Work requests accumulate in a {@link SendBatch} and are posted with one `vb_post_send`
 *   (one doorbell) by `post()`.
 * - Every `signalEvery`-th WR is signaled (and any WR whose caller asked for a completion, and
 *   one whenever an eighth of the bounce ring was used since the last signal); the rest are not.
 *   The verbs wr_id of each WR is its sequence number. RC completes in order, so a signaled
 *   completion returns the credits and bounce bytes of every WR up to it.
 * - The bounce ring (a registered buffer) holds copies of sources that are not in the session
 *   region; a copy lives until its WR completes.
 * - Completions the caller asked for are queued for `take()`; an error status calls `onError`
 *   with `ibv_wc_status_str`, the opcode and the peer.
 * @module
 */
import { IBV_WC_WR_FLUSH_ERR } from "../../ffi/symbols/libibverbs.ts";
import { errnoName } from "../../errors.ts";
import { VB_WC } from "../../ffi/layouts/helper.ts";
import { IBV_SEND } from "../../ffi/symbols/libibverbs.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { Completions } from "../fabric.ts";
import { wcStatusStr } from "./cq.ts";
import { SendBatch } from "./send_batch.ts";
import type { VerbsLib } from "./verbs_lib.ts";
import type { EndpointResources } from "./verbs_resources.ts";
import { WcReader } from "./wc_reader.ts";

const OP_NAME: Record<number, string> = {
  0: "RDMA WRITE",
  1: "RDMA WRITE_WITH_IMM",
  2: "SEND",
  3: "SEND_WITH_IMM",
  4: "RDMA READ",
};
/** `user` of a WR whose completion is not reported to the caller. */
export const INTERNAL = -1;
/** Most WRs per post. */
const MAX_BATCH = 256;

/** The send queue of one endpoint. Single JS thread. */
export class SendQueue {
  /** The bounce ring's bytes, its u32 view, address and lkey. */
  readonly bounce: Uint8Array;
  readonly bounce32: Uint32Array;
  readonly bAddr: number;
  readonly bLkey: number;
  /** Remote region address and rkey WRs target (set at attach). */
  raddr = 0;
  rkey = 0;
  /** False once the queue may not be used (endpoint failed or closed). */
  usable = false;
  /** Set once the native resources are gone: nothing may touch the CQ. */
  released = false;
  /** Counters (tests, stats). */
  readonly counters = { posts: 0, wrs: 0, signaled: 0, reaped: 0, fullSpins: 0 };
  readonly #lib: VerbsLib;
  readonly #qp: NonNullPtr;
  readonly #cq: NonNullPtr;
  readonly #postSend: VerbsLib["helper"]["lib"]["symbols"]["vb_post_send"];
  readonly #pollCq: VerbsLib["helper"]["lib"]["symbols"]["vb_poll_cq"];
  readonly #bSize: number;
  readonly #depth: number;
  readonly #signalEvery: number;
  readonly #batch: SendBatch;
  readonly #wc = new WcReader(64);
  readonly #sqUser: Float64Array;
  readonly #sqOp: Uint8Array;
  readonly #sqBEnd: Float64Array;
  readonly #cqWr: Float64Array;
  readonly #cqSt: Int32Array;
  #cqHead = 0;
  #cqCount = 0;
  #seq = 0;
  #posted = 0;
  #done = 0;
  #lastSig = -1e9;
  #bHead = 0;
  #bTail = 0;
  #bAtSig = 0;
  #tick = 0;

  /**
   * @param onError called with a reason when a post or a completion fails (the endpoint fails);
   *   `flushed` when the completion is a flushed WR (a consequence, not the cause)
   */
  constructor(
    lib: VerbsLib,
    res: EndpointResources,
    readonly peer: string,
    signalEvery: number,
    private readonly onError: (reason: string, flushed?: boolean) => void,
  ) {
    this.#lib = lib;
    this.#qp = res.qp.handle;
    this.#cq = res.sendCq.handle;
    this.#postSend = lib.helper.lib.symbols.vb_post_send;
    this.#pollCq = lib.helper.lib.symbols.vb_poll_cq;
    this.bounce = res.bounce.buffer;
    this.bounce32 = new Uint32Array(
      this.bounce.buffer,
      this.bounce.byteOffset,
      this.bounce.length >> 2,
    );
    this.bAddr = res.bounce.address;
    this.bLkey = res.bounce.lkey;
    this.#bSize = this.bounce.length;
    this.#depth = res.shape.sqDepth;
    this.#signalEvery = Math.max(1, Math.min(signalEvery, this.#depth >> 2));
    this.#batch = new SendBatch(MAX_BATCH, MAX_BATCH * res.shape.maxSge);
    this.#sqUser = new Float64Array(this.#depth);
    this.#sqOp = new Uint8Array(this.#depth);
    this.#sqBEnd = new Float64Array(this.#depth);
    this.#cqWr = new Float64Array(this.#depth);
    this.#cqSt = new Int32Array(this.#depth);
  }

  /** Largest single bounce copy. */
  get maxBounce(): number {
    return this.#bSize >> 1;
  }

  /** WRs batched and not yet posted. */
  get batched(): number {
    return this.#batch.length;
  }

  /** Caller completions waiting for take(). */
  get pending(): number {
    return this.#cqCount;
  }

  /** Sequence number the next WR gets. */
  get nextSeq(): number {
    return this.#seq;
  }

  /** True once every WR up to `seq` completed. */
  completed(seq: number): boolean {
    return this.#done > seq;
  }

  /** True when WRs are posted and not all completed. */
  get outstanding(): boolean {
    return this.#seq > this.#done;
  }

  /**
   * Ensures one SQ credit and `len` bounce bytes; returns the bounce offset (0 for `len` 0),
   * or -1 when there is no room even after reaping and a short spin (FULL).
   */
  reserve(len: number): number {
    const need = (len + 15) & ~15;
    let deadline = 0;
    for (;;) {
      if (this.#seq - this.#done < this.#depth) {
        if (need === 0) return 0;
        let pos = this.#bHead;
        const at = pos % this.#bSize;
        if (at + need > this.#bSize) pos += this.#bSize - at;
        if (pos + need - this.#bTail <= this.#bSize) {
          this.#bHead = pos + need;
          return pos % this.#bSize;
        }
      }
      // No room: ring the doorbell for what is batched, reap, spin briefly (the NIC completes
      // within microseconds unless the connection is broken).
      if (deadline === 0) {
        this.post();
        this.reap();
        deadline = performance.now() + 2;
        this.counters.fullSpins++;
      } else if (performance.now() > deadline || !this.usable) return -1;
      else this.reap();
    }
  }

  /** Adds an SGE to the WR being built (call `room()` before the first). */
  sge(addr: number, len: number, lkey: number): void {
    this.#batch.sge(addr, len, lkey);
  }

  /** Makes room in the batch for one more WR. */
  room(): void {
    if (this.#batch.length >= MAX_BATCH) this.post();
  }

  /** Closes a WR over the SGEs just added. `user` ≥ 0 with `report` queues its completion. */
  finish(
    op: number,
    flags: number,
    remoteOff: number,
    imm: number,
    user: number,
    report: boolean,
  ): void {
    const seq = this.#seq;
    if (
      report || seq - this.#lastSig >= this.#signalEvery ||
      this.#bHead - this.#bAtSig >= this.#bSize >> 3
    ) {
      flags |= IBV_SEND.SIGNALED;
      this.#lastSig = seq;
      this.#bAtSig = this.#bHead;
      this.counters.signaled++;
    }
    this.#batch.wr(op, flags, seq, this.raddr + remoteOff, this.rkey, imm);
    const i = seq % this.#depth;
    this.#sqUser[i] = report ? user : INTERNAL;
    this.#sqOp[i] = op;
    this.#sqBEnd[i] = this.#bHead;
    this.#seq = seq + 1;
  }

  /** One WR with a single SGE (none when `len` is 0). */
  one(
    op: number,
    flags: number,
    addr: number,
    len: number,
    lkey: number,
    remoteOff: number,
    imm: number,
    user: number,
    report: boolean,
  ): void {
    this.room();
    if (len > 0) this.#batch.sge(addr, len, lkey);
    this.finish(op, flags, remoteOff, imm, user, report);
  }

  /** Posts the batch (one doorbell). */
  post(): void {
    const b = this.#batch, n = b.length;
    if (n === 0) return;
    const rc = this.#postSend(this.#qp, b.descs, b.sges, n, b.badIndex);
    b.reset();
    this.#posted = this.#seq;
    this.counters.posts++;
    this.counters.wrs += n;
    if (rc !== 0) {
      this.onError(
        `ibv_post_send failed with ${errnoName(rc)}: work request ${
          b.badIndex[0]
        } of ${n} not posted (to ${this.peer})`,
      );
    }
  }

  /** Reaps send completions; returns how many. */
  reap(): number {
    if (this.#done >= this.#posted || this.released) return 0;
    const wc = this.#wc;
    const n = this.#pollCq(this.#cq, wc.max, wc.buffer);
    if (n < 0) {
      this.onError(`ibv_poll_cq failed (${n}) on the send CQ to ${this.peer}`);
      return 0;
    }
    for (let k = 0; k < n; k++) {
      const seq = wc.wrId(k), st = wc.status(k), i = seq % this.#depth;
      if (st !== 0) {
        const vendor = new DataView(wc.buffer.buffer).getUint32(
          k * VB_WC.$size + VB_WC.vendor_err,
          true,
        );
        this.onError(
          `${OP_NAME[this.#sqOp[i]] ?? `opcode ${this.#sqOp[i]}`} to ${this.peer} completed with "${
            wcStatusStr(this.#lib, st)
          }" (status ${st}, vendor error 0x${vendor.toString(16)})`,
          st === IBV_WC_WR_FLUSH_ERR,
        );
      }
      const u = this.#sqUser[i];
      if (u >= 0 && this.#cqCount < this.#depth) {
        const j = (this.#cqHead + this.#cqCount++) % this.#depth;
        this.#cqWr[j] = u;
        this.#cqSt[j] = st;
      }
      if (seq + 1 > this.#done) {
        this.#done = seq + 1;
        this.#bTail = this.#sqBEnd[i];
      }
    }
    this.counters.reaped += n;
    return n;
  }

  /**
   * Reaps when a signaled WR is outstanding, and every 64th call anyway: an unsignaled WR that
   * fails still completes (with its error) and must fail the endpoint promptly.
   */
  maybeReap(): void {
    if (
      (this.#lastSig >= this.#done && this.#lastSig < this.#posted) || ((++this.#tick & 63) === 0)
    ) this.reap();
  }

  /** Moves queued caller completions into `out`; returns how many. */
  take(out: Completions): number {
    let n = 0;
    while (n < out.capacity && this.#cqCount > 0) {
      out.wrId[n] = this.#cqWr[this.#cqHead];
      out.status[n] = this.#cqSt[this.#cqHead];
      this.#cqHead = (this.#cqHead + 1) % this.#depth;
      this.#cqCount--;
      n++;
    }
    return n;
  }
}
