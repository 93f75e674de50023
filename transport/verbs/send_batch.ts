/**
 * Data path: a preallocated batch of send work requests in the helper's flat format, posted
 * with one `vb_post_send` call (one doorbell). Nothing is allocated per request; addresses and
 * wr_ids are numbers (user-space addresses fit in 53 bits) written as two u32 halves.
 *
 * Use: `sge()` one or more times, then `wr()` to close the request over those SGEs; repeat;
 * `post(qp)`; `reset()`. `wr()`/`sge()` return FULL (-1) instead of throwing when out of room.
 * @module
 */
import { VB_SEND_DESC, VB_SGE } from "../../ffi/layouts/helper.ts";
import { VB_MAX_BATCH } from "../../ffi/symbols/helper.ts";
import type { QueuePair } from "./qp.ts";

/** Returned by `wr()` / `sge()` when the batch has no room. */
export const FULL = -1;
const TWO32 = 0x1_0000_0000;
// u32 indices of the fields (x86_64 is little-endian: the low half of a u64 comes first).
const A_LO = VB_SGE.addr >> 2,
  A_HI = A_LO + 1,
  S_LEN = VB_SGE.length >> 2,
  S_LKEY = VB_SGE.lkey >> 2;
const W_ID = VB_SEND_DESC.wr_id >> 2,
  W_RADDR = VB_SEND_DESC.remote_addr >> 2,
  W_RKEY = VB_SEND_DESC.rkey >> 2;
const W_IMM = VB_SEND_DESC.imm >> 2,
  W_OP = VB_SEND_DESC.opcode >> 2,
  W_FLAGS = VB_SEND_DESC.send_flags >> 2;
const W_SGE = VB_SEND_DESC.sge_index >> 2, W_NSGE = VB_SEND_DESC.num_sge >> 2;

/** A reusable batch of send WRs. Owned by one thread; buffers stay alive as long as the batch. */
export class SendBatch {
  /** n × vb_send_desc. */
  readonly descs: Uint8Array;
  /** vb_sge array shared by the batch's WRs. */
  readonly sges: Uint8Array;
  /** After a failed post: index of the first WR not posted. */
  readonly badIndex = new Uint32Array(1);
  // u32 views: every field is 4-byte aligned, and indexed stores are far cheaper than DataView.
  #descWords: Uint32Array;
  #sgeWords: Uint32Array;
  #count = 0;
  #nSge = 0;
  #firstSge = 0;

  constructor(readonly maxWr: number, readonly maxSge: number) {
    if (maxWr < 1 || maxWr > VB_MAX_BATCH) throw new RangeError(`maxWr must be 1..${VB_MAX_BATCH}`);
    this.descs = new Uint8Array(maxWr * VB_SEND_DESC.$size);
    this.sges = new Uint8Array(Math.max(1, maxSge) * VB_SGE.$size);
    this.#descWords = new Uint32Array(this.descs.buffer);
    this.#sgeWords = new Uint32Array(this.sges.buffer);
  }

  /** Work requests in the batch. */
  get length(): number {
    return this.#count;
  }

  /** Empties the batch. */
  reset(): void {
    this.#count = 0;
    this.#nSge = 0;
    this.#firstSge = 0;
  }

  /** Adds an SGE to the WR being built. Returns its index or FULL. */
  sge(addr: number, length: number, lkey: number): number {
    if (this.#nSge >= this.maxSge) return FULL;
    const o = (this.#nSge * VB_SGE.$size) >> 2, s = this.#sgeWords;
    const hi = (addr / TWO32) >>> 0; // `%` on doubles is an fmod call in V8: split by subtraction
    s[o + A_LO] = addr - hi * TWO32;
    s[o + A_HI] = hi;
    s[o + S_LEN] = length;
    s[o + S_LKEY] = lkey;
    return this.#nSge++;
  }

  /**
   * Closes a WR over the SGEs added since the previous one. `opcode` is IBV_WR_*, `flags`
   * IBV_SEND_*; `remoteAddr`/`rkey` for RDMA ops; `imm` in host order. Returns its index or FULL.
   */
  wr(
    opcode: number,
    flags: number,
    wrId: number,
    remoteAddr: number,
    rkey: number,
    imm: number,
  ): number {
    if (this.#count >= this.maxWr) return FULL;
    const o = (this.#count * VB_SEND_DESC.$size) >> 2, d = this.#descWords;
    const idHi = (wrId / TWO32) >>> 0, raHi = (remoteAddr / TWO32) >>> 0;
    d[o + W_ID] = wrId - idHi * TWO32;
    d[o + W_ID + 1] = idHi;
    d[o + W_RADDR] = remoteAddr - raHi * TWO32;
    d[o + W_RADDR + 1] = raHi;
    d[o + W_RKEY] = rkey;
    d[o + W_IMM] = imm;
    d[o + W_OP] = opcode;
    d[o + W_FLAGS] = flags;
    d[o + W_SGE] = this.#firstSge;
    d[o + W_NSGE] = this.#nSge - this.#firstSge;
    this.#firstSge = this.#nSge;
    return this.#count++;
  }

  /** Posts every WR with one doorbell. Returns 0 or the errno (`badIndex[0]` = first not posted). */
  post(qp: QueuePair): number {
    return this.#count === 0 ? 0 : qp.postSend(this.descs, this.sges, this.#count, this.badIndex);
  }
}
