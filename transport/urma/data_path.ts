/**
 * URMA data path: preallocated work requests in liburma's own layout, posted with one call, and
 * a completion reader. Nothing here allocates per request: the `urma_jfs_wr_t` / `urma_jfr_wr_t`
 * chains and their `urma_sge_t` arrays live in typed arrays created once, pointers are written
 * as numbers (user-space addresses fit in 53 bits) split into two u32 halves.
 *
 * Send use: `sge()` one or more times (local buffers), then one of `write` / `writeImm` /
 * `read` / `send` / `sendImm` closes the request over those SGEs; repeat; `post(jetty)`;
 * `reset()`. Builders return {@link FULL} (-1) instead of throwing when out of room.
 * @module
 */
import {
  URMA_CR,
  URMA_JFR_WR,
  URMA_JFS_WR,
  URMA_JFS_WR_FLAG_BITS,
  URMA_SG,
  URMA_SGE,
} from "../../ffi/layouts/urma.ts";
import { URMA_OPC } from "../../ffi/symbols/liburma.ts";
import type { UrmaLib } from "./urma_lib.ts";
import type { Jetty, TargetJetty } from "./jetty.ts";
import type { ImportedSegment, Segment } from "./segment.ts";

/** Returned by builders when the batch has no room. */
export const FULL = -1;

/** urma_jfs_wr_flag_t bits verbus sets. */
export const URMA_WR_FLAG = {
  /** Produce a completion record on success (errors always complete). */
  COMPLETE: 1 << URMA_JFS_WR_FLAG_BITS.complete_enable,
  /** Wake a target armed with solicited-only. */
  SOLICITED: 1 << URMA_JFS_WR_FLAG_BITS.solicited_enable,
  /** Order after earlier reads / atomics. */
  FENCE: 1 << URMA_JFS_WR_FLAG_BITS.fence,
  /** Data carried in the request (no segment needed for the source). */
  INLINE: 1 << URMA_JFS_WR_FLAG_BITS.inline_flag,
} as const;

const TWO32 = 0x1_0000_0000;
const W = URMA_JFS_WR.$size >> 2, SG = URMA_SGE.$size >> 2;

function put64(a: Uint32Array, i: number, v: number): void {
  const hi = (v / TWO32) >>> 0; // `%` on doubles is slow in V8: split by subtraction
  a[i] = v - hi * TWO32;
  a[i + 1] = hi;
}

/** A reusable batch of send WRs for one jetty. Owned by one thread. */
export class UrmaSendBatch {
  /** maxWr × urma_jfs_wr_t. */
  readonly wrs: Uint8Array;
  /** Local SGEs shared by the batch's WRs. */
  readonly sges: Uint8Array;
  /** One remote SGE per WR. */
  readonly remote: Uint8Array;
  /** After a failed post: the address of the first WR not posted (two u32 halves). */
  readonly badWr = new Uint32Array(2);
  #w: Uint32Array;
  #s: Uint32Array;
  #r: Uint32Array;
  #wBase: number;
  #sBase: number;
  #rBase: number;
  #n = 0;
  #nSge = 0;
  #first = 0;
  #len = 0;

  constructor(private readonly u: UrmaLib, readonly maxWr: number, readonly maxSge: number) {
    if (maxWr < 1 || maxWr > 1024) throw new RangeError("maxWr must be 1..1024");
    this.wrs = new Uint8Array(maxWr * URMA_JFS_WR.$size);
    this.sges = new Uint8Array(Math.max(1, maxSge) * URMA_SGE.$size);
    this.remote = new Uint8Array(maxWr * URMA_SGE.$size);
    this.#w = new Uint32Array(this.wrs.buffer);
    this.#s = new Uint32Array(this.sges.buffer);
    this.#r = new Uint32Array(this.remote.buffer);
    const addr = (b: Uint8Array) => Number(u.ffi.address(u.ffi.ptrOf(b)));
    this.#wBase = addr(this.wrs);
    this.#sBase = addr(this.sges);
    this.#rBase = addr(this.remote);
  }

  /** Work requests in the batch. */
  get length(): number {
    return this.#n;
  }

  /** Empties the batch. */
  reset(): void {
    this.#n =
      this.#nSge =
      this.#first =
      this.#len =
        0;
  }

  /** Adds a local SGE (inside `seg`) to the request being built. Returns its index or FULL. */
  sge(seg: Segment, addr: number, len: number): number {
    if (this.#nSge >= this.maxSge) return FULL;
    const o = this.#nSge * SG, s = this.#s;
    put64(s, o + (URMA_SGE.addr >> 2), addr);
    s[o + (URMA_SGE.len >> 2)] = len;
    put64(s, o + (URMA_SGE.tseg >> 2), seg.ptrValue);
    put64(s, o + (URMA_SGE.user_tseg >> 2), 0);
    this.#len += len;
    return this.#nSge++;
  }

  #close(opcode: number, flags: number, t: TargetJetty, userCtx: number): number {
    if (this.#n >= this.maxWr) return FULL;
    const i = this.#n, o = i * W, w = this.#w;
    w.fill(0, o, o + W);
    w[o + (URMA_JFS_WR.opcode >> 2)] = opcode;
    w[o + (URMA_JFS_WR.flag >> 2)] = flags;
    put64(w, o + (URMA_JFS_WR.tjetty >> 2), t.ptrValue);
    put64(w, o + (URMA_JFS_WR.user_ctx >> 2), userCtx);
    if (i > 0) put64(w, (i - 1) * W + (URMA_JFS_WR.next >> 2), this.#wBase + i * URMA_JFS_WR.$size);
    return o;
  }

  #localSg(o: number, field: number): void {
    put64(this.#w, o + (field >> 2), this.#sBase + this.#first * URMA_SGE.$size);
    this.#w[o + ((field + URMA_SG.num_sge) >> 2)] = this.#nSge - this.#first;
  }

  #remoteSg(o: number, field: number, seg: ImportedSegment, addr: number): void {
    const i = this.#n, r = this.#r, ro = i * SG;
    put64(r, ro + (URMA_SGE.addr >> 2), addr);
    r[ro + (URMA_SGE.len >> 2)] = this.#len;
    put64(r, ro + (URMA_SGE.tseg >> 2), seg.ptrValue);
    put64(r, ro + (URMA_SGE.user_tseg >> 2), 0);
    put64(this.#w, o + (field >> 2), this.#rBase + i * URMA_SGE.$size);
    this.#w[o + ((field + URMA_SG.num_sge) >> 2)] = 1;
  }

  #done(): number {
    this.#first = this.#nSge;
    this.#len = 0;
    return this.#n++;
  }

  /** One-sided WRITE of the SGEs since the last request to `dst` at `remoteAddr`. */
  write(
    t: TargetJetty,
    dst: ImportedSegment,
    remoteAddr: number,
    userCtx: number,
    flags: number,
  ): number {
    const o = this.#close(URMA_OPC.WRITE, flags, t, userCtx);
    if (o < 0) return FULL;
    this.#localSg(o, URMA_JFS_WR["rw.src"]);
    this.#remoteSg(o, URMA_JFS_WR["rw.dst"], dst, remoteAddr);
    return this.#done();
  }

  /** WRITE_IMM: a WRITE that also consumes a receive at the target, completing with `imm` (< 2^53). */
  writeImm(
    t: TargetJetty,
    dst: ImportedSegment,
    remoteAddr: number,
    imm: number,
    userCtx: number,
    flags: number,
  ): number {
    const o = this.#close(URMA_OPC.WRITE_IMM, flags, t, userCtx);
    if (o < 0) return FULL;
    this.#localSg(o, URMA_JFS_WR["rw.src"]);
    this.#remoteSg(o, URMA_JFS_WR["rw.dst"], dst, remoteAddr);
    put64(this.#w, o + (URMA_JFS_WR["rw.notify_data"] >> 2), imm);
    return this.#done();
  }

  /** One-sided READ from `src` at `remoteAddr` into the SGEs since the last request. */
  read(
    t: TargetJetty,
    src: ImportedSegment,
    remoteAddr: number,
    userCtx: number,
    flags: number,
  ): number {
    const o = this.#close(URMA_OPC.READ, flags, t, userCtx);
    if (o < 0) return FULL;
    this.#remoteSg(o, URMA_JFS_WR["rw.src"], src, remoteAddr);
    this.#localSg(o, URMA_JFS_WR["rw.dst"]);
    return this.#done();
  }

  /** SEND (imm === null) or SEND_IMM of the SGEs since the last request. */
  send(t: TargetJetty, imm: number | null, userCtx: number, flags: number): number {
    const o = this.#close(imm === null ? URMA_OPC.SEND : URMA_OPC.SEND_IMM, flags, t, userCtx);
    if (o < 0) return FULL;
    this.#localSg(o, URMA_JFS_WR["send.src"]);
    if (imm !== null) put64(this.#w, o + (URMA_JFS_WR["send.imm_data"] >> 2), imm);
    return this.#done();
  }

  /** Posts every WR with one `urma_post_jetty_send_wr`. Returns the urma_status_t (0 = posted). */
  post(jetty: Jetty): number {
    if (this.#n === 0) return 0;
    return this.u.lib.symbols.urma_post_jetty_send_wr(jetty.handle, this.wrs, this.badWr);
  }

  /** After a failed post: index of the first WR not posted. */
  get badIndex(): number {
    const a = this.badWr[0] + this.badWr[1] * TWO32;
    return a === 0 ? 0 : (a - this.#wBase) / URMA_JFS_WR.$size;
  }
}

/** A reusable batch of receive WRs (one SGE each). Owned by one thread. */
export class UrmaRecvBatch {
  /** maxWr × urma_jfr_wr_t. */
  readonly wrs: Uint8Array;
  /** maxWr × urma_sge_t. */
  readonly sges: Uint8Array;
  /** After a failed post: the address of the first WR not posted. */
  readonly badWr = new Uint32Array(2);
  #w: Uint32Array;
  #s: Uint32Array;
  #wBase: number;
  #sBase: number;
  #n = 0;

  constructor(private readonly u: UrmaLib, readonly maxWr: number) {
    if (maxWr < 1 || maxWr > 1024) throw new RangeError("maxWr must be 1..1024");
    this.wrs = new Uint8Array(maxWr * URMA_JFR_WR.$size);
    this.sges = new Uint8Array(maxWr * URMA_SGE.$size);
    this.#w = new Uint32Array(this.wrs.buffer);
    this.#s = new Uint32Array(this.sges.buffer);
    this.#wBase = Number(u.ffi.address(u.ffi.ptrOf(this.wrs)));
    this.#sBase = Number(u.ffi.address(u.ffi.ptrOf(this.sges)));
  }

  /** Receive WRs in the batch. */
  get length(): number {
    return this.#n;
  }

  /** Empties the batch. */
  reset(): void {
    this.#n = 0;
  }

  /** Adds a receive into `seg` at `addr`, `len` bytes. Returns its index or FULL. */
  recv(seg: Segment, addr: number, len: number, userCtx: number): number {
    if (this.#n >= this.maxWr) return FULL;
    const i = this.#n, s = this.#s, so = i * SG, w = this.#w, o = i * (URMA_JFR_WR.$size >> 2);
    put64(s, so + (URMA_SGE.addr >> 2), addr);
    s[so + (URMA_SGE.len >> 2)] = len;
    put64(s, so + (URMA_SGE.tseg >> 2), seg.ptrValue);
    put64(s, so + (URMA_SGE.user_tseg >> 2), 0);
    put64(w, o + ((URMA_JFR_WR.src + URMA_SG.sge) >> 2), this.#sBase + i * URMA_SGE.$size);
    w[o + ((URMA_JFR_WR.src + URMA_SG.num_sge) >> 2)] = 1;
    put64(w, o + (URMA_JFR_WR.user_ctx >> 2), userCtx);
    put64(w, o + (URMA_JFR_WR.next >> 2), 0);
    if (i > 0) {
      put64(
        w,
        (i - 1) * (URMA_JFR_WR.$size >> 2) + (URMA_JFR_WR.next >> 2),
        this.#wBase + i * URMA_JFR_WR.$size,
      );
    }
    return this.#n++;
  }

  /** Posts every receive with one `urma_post_jetty_recv_wr`. Returns the urma_status_t. */
  post(jetty: Jetty): number {
    if (this.#n === 0) return 0;
    return this.u.lib.symbols.urma_post_jetty_recv_wr(jetty.handle, this.wrs, this.badWr);
  }
}

/** Reusable completion records (`urma_cr_t`) and allocation-free accessors. Owned by one thread. */
export class CrReader {
  /** max × urma_cr_t, written by urma_poll_jfc. */
  readonly buffer: Uint8Array;
  #u: Uint32Array;

  constructor(readonly max: number) {
    if (max < 1 || max > 1024) throw new RangeError("max must be 1..1024");
    this.buffer = new Uint8Array(max * URMA_CR.$size);
    this.#u = new Uint32Array(this.buffer.buffer);
  }

  #at(i: number, field: number): number {
    return this.#u[(i * URMA_CR.$size + field) >> 2];
  }

  /** urma_cr_status_t (0 = success; see errors.ts URMA_CR). */
  status(i: number): number {
    return this.#at(i, URMA_CR.status);
  }
  /** The request's user_ctx (wr id, < 2^53). */
  userCtx(i: number): number {
    return this.#at(i, URMA_CR.user_ctx) + this.#at(i, URMA_CR.user_ctx + 4) * TWO32;
  }
  /** urma_cr_opcode_t of a receive completion (URMA_CR_OPC). */
  opcode(i: number): number {
    return this.#at(i, URMA_CR.opcode);
  }
  /** True for a receive completion (flag.s_r). */
  isRecv(i: number): boolean {
    return (this.buffer[i * URMA_CR.$size + URMA_CR.flag] & 1) === 1;
  }
  /** Bytes transferred. */
  completionLen(i: number): number {
    return this.#at(i, URMA_CR.completion_len);
  }
  /** Local jetty / JFS / JFR id. */
  localId(i: number): number {
    return this.#at(i, URMA_CR.local_id);
  }
  /** The sender's uasid (receive completions). */
  remoteUasid(i: number): number {
    return this.#at(i, URMA_CR.remote_id + 16);
  }
  /** The sender's jetty id (receive completions). */
  remoteId(i: number): number {
    return this.#at(i, URMA_CR.remote_id + 20);
  }
  /** Immediate data (host order), exact below 2^53. */
  imm(i: number): number {
    return this.#at(i, URMA_CR.imm_data) + this.#at(i, URMA_CR.imm_data + 4) * TWO32;
  }
  /** Immediate data as a full 64-bit value (allocates a bigint). */
  immBig(i: number): bigint {
    return BigInt(this.#at(i, URMA_CR.imm_data)) |
      (BigInt(this.#at(i, URMA_CR.imm_data + 4)) << 32n);
  }
}
