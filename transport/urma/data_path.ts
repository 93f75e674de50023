/**
 * URMA work-request encoding: preallocated work requests in liburma's own layout, posted with
 * one call, and a completion reader. Nothing here allocates per request: the `urma_jfs_wr_t` /
 * `urma_jfr_wr_t` chains and their `urma_sge_t` arrays live in typed arrays created once;
 * pointers are written as numbers (user-space addresses fit in 53 bits) split into two u32
 * halves.
 *
 * Send use: `sge()` one or more times (local buffers), then one of `write` / `writeImm` /
 * `read` / `send` closes the request over those SGEs; repeat; `post(jetty)`; `reset()`.
 * Builders return {@link BATCH_FULL} instead of throwing when out of room.
 * Buffers: each batch owns its typed arrays; the caller owns the segments they point into.
 * Threading: a batch or reader belongs to one JS thread.
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

/** Returned by the builders when the batch has no room for another SGE or request. */
export const BATCH_FULL = -1;

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
/** u32 words of one `urma_jfs_wr_t`. */
const SEND_WR_WORDS = URMA_JFS_WR.$size >> 2;
/** u32 words of one `urma_jfr_wr_t`. */
const RECV_WR_WORDS = URMA_JFR_WR.$size >> 2;
/** u32 words of one `urma_sge_t`. */
const SGE_WORDS = URMA_SGE.$size >> 2;

/** Writes `value` (< 2^53) as two u32 halves at `words[index]`, low half first. */
function put64(words: Uint32Array, index: number, value: number): void {
  const high = (value / TWO32) >>> 0; // `%` on doubles is slow in V8: split by subtraction
  words[index] = value - high * TWO32;
  words[index + 1] = high;
}

/** Fills the `urma_sge_t` at word `at` of `words`. */
function putSge(words: Uint32Array, at: number, addr: number, len: number, seg: number): void {
  put64(words, at + (URMA_SGE.addr >> 2), addr);
  words[at + (URMA_SGE.len >> 2)] = len;
  put64(words, at + (URMA_SGE.tseg >> 2), seg);
  put64(words, at + (URMA_SGE.user_tseg >> 2), 0);
}

/** A reusable batch of send WRs for one jetty. Owns its arrays; one JS thread. */
export class UrmaSendBatch {
  /** maxWr × urma_jfs_wr_t. */
  readonly wrs: Uint8Array;
  /** Local SGEs shared by the batch's WRs. */
  readonly sges: Uint8Array;
  /** One remote SGE per WR. */
  readonly remote: Uint8Array;
  /** After a failed post: the address of the first WR not posted (two u32 halves). */
  readonly badWr = new Uint32Array(2);
  readonly #wrWords: Uint32Array;
  readonly #sgeWords: Uint32Array;
  readonly #remoteSgeWords: Uint32Array;
  readonly #wrsAddress: number;
  readonly #sgesAddress: number;
  readonly #remoteSgesAddress: number;
  #wrCount = 0;
  #sgeCount = 0;
  /** Index of the first SGE of the request being built. */
  #firstSgeOfRequest = 0;
  /** Bytes of the SGEs of the request being built. */
  #bytesOfRequest = 0;

  constructor(private readonly lib: UrmaLib, readonly maxWr: number, readonly maxSge: number) {
    if (maxWr < 1 || maxWr > 1024) throw new RangeError("maxWr must be 1..1024");
    this.wrs = new Uint8Array(maxWr * URMA_JFS_WR.$size);
    this.sges = new Uint8Array(Math.max(1, maxSge) * URMA_SGE.$size);
    this.remote = new Uint8Array(maxWr * URMA_SGE.$size);
    this.#wrWords = new Uint32Array(this.wrs.buffer);
    this.#sgeWords = new Uint32Array(this.sges.buffer);
    this.#remoteSgeWords = new Uint32Array(this.remote.buffer);
    const addressOf = (b: Uint8Array) => Number(lib.ffi.address(lib.ffi.ptrOf(b)));
    this.#wrsAddress = addressOf(this.wrs);
    this.#sgesAddress = addressOf(this.sges);
    this.#remoteSgesAddress = addressOf(this.remote);
  }

  /** Work requests in the batch. */
  get length(): number {
    return this.#wrCount;
  }

  /** Empties the batch. */
  reset(): void {
    this.#wrCount = 0;
    this.#sgeCount = 0;
    this.#firstSgeOfRequest = 0;
    this.#bytesOfRequest = 0;
  }

  /** Adds a local SGE (inside `seg`) to the request being built. Returns its index or BATCH_FULL. */
  sge(seg: Segment, addr: number, len: number): number {
    if (this.#sgeCount >= this.maxSge) return BATCH_FULL;
    putSge(this.#sgeWords, this.#sgeCount * SGE_WORDS, addr, len, seg.ptrValue);
    this.#bytesOfRequest += len;
    return this.#sgeCount++;
  }

  /** Starts WR `#wrCount` (chained after the previous one); its first word, or BATCH_FULL. */
  #open(opcode: number, flags: number, target: TargetJetty, userCtx: number): number {
    if (this.#wrCount >= this.maxWr) return BATCH_FULL;
    const index = this.#wrCount, at = index * SEND_WR_WORDS, words = this.#wrWords;
    words.fill(0, at, at + SEND_WR_WORDS);
    words[at + (URMA_JFS_WR.opcode >> 2)] = opcode;
    words[at + (URMA_JFS_WR.flag >> 2)] = flags;
    put64(words, at + (URMA_JFS_WR.tjetty >> 2), target.ptrValue);
    put64(words, at + (URMA_JFS_WR.user_ctx >> 2), userCtx);
    if (index > 0) {
      const previousNext = (index - 1) * SEND_WR_WORDS + (URMA_JFS_WR.next >> 2);
      put64(words, previousNext, this.#wrsAddress + index * URMA_JFS_WR.$size);
    }
    return at;
  }

  /** Points the `urma_sg_t` at `field` of the WR at word `at` to this request's local SGEs. */
  #localSg(at: number, field: number): void {
    const first = this.#firstSgeOfRequest;
    put64(this.#wrWords, at + (field >> 2), this.#sgesAddress + first * URMA_SGE.$size);
    this.#wrWords[at + ((field + URMA_SG.num_sge) >> 2)] = this.#sgeCount - first;
  }

  /** Points the `urma_sg_t` at `field` to one remote SGE of this request's length. */
  #remoteSg(at: number, field: number, seg: ImportedSegment, addr: number): void {
    const index = this.#wrCount;
    putSge(this.#remoteSgeWords, index * SGE_WORDS, addr, this.#bytesOfRequest, seg.ptrValue);
    put64(this.#wrWords, at + (field >> 2), this.#remoteSgesAddress + index * URMA_SGE.$size);
    this.#wrWords[at + ((field + URMA_SG.num_sge) >> 2)] = 1;
  }

  /** Closes the request being built; returns its index. */
  #close(): number {
    this.#firstSgeOfRequest = this.#sgeCount;
    this.#bytesOfRequest = 0;
    return this.#wrCount++;
  }

  /** One-sided WRITE of the SGEs since the last request to `dst` at `remoteAddr`. */
  write(
    target: TargetJetty,
    dst: ImportedSegment,
    remoteAddr: number,
    userCtx: number,
    flags: number,
  ): number {
    const at = this.#open(URMA_OPC.WRITE, flags, target, userCtx);
    if (at < 0) return BATCH_FULL;
    this.#localSg(at, URMA_JFS_WR["rw.src"]);
    this.#remoteSg(at, URMA_JFS_WR["rw.dst"], dst, remoteAddr);
    return this.#close();
  }

  /** WRITE_IMM: a WRITE that also consumes a receive at the target, completing with `imm` (< 2^53). */
  writeImm(
    target: TargetJetty,
    dst: ImportedSegment,
    remoteAddr: number,
    imm: number,
    userCtx: number,
    flags: number,
  ): number {
    const at = this.#open(URMA_OPC.WRITE_IMM, flags, target, userCtx);
    if (at < 0) return BATCH_FULL;
    this.#localSg(at, URMA_JFS_WR["rw.src"]);
    this.#remoteSg(at, URMA_JFS_WR["rw.dst"], dst, remoteAddr);
    put64(this.#wrWords, at + (URMA_JFS_WR["rw.notify_data"] >> 2), imm);
    return this.#close();
  }

  /** One-sided READ from `src` at `remoteAddr` into the SGEs since the last request. */
  read(
    target: TargetJetty,
    src: ImportedSegment,
    remoteAddr: number,
    userCtx: number,
    flags: number,
  ): number {
    const at = this.#open(URMA_OPC.READ, flags, target, userCtx);
    if (at < 0) return BATCH_FULL;
    this.#remoteSg(at, URMA_JFS_WR["rw.src"], src, remoteAddr);
    this.#localSg(at, URMA_JFS_WR["rw.dst"]);
    return this.#close();
  }

  /** SEND (imm === null) or SEND_IMM of the SGEs since the last request. */
  send(target: TargetJetty, imm: number | null, userCtx: number, flags: number): number {
    const opcode = imm === null ? URMA_OPC.SEND : URMA_OPC.SEND_IMM;
    const at = this.#open(opcode, flags, target, userCtx);
    if (at < 0) return BATCH_FULL;
    this.#localSg(at, URMA_JFS_WR["send.src"]);
    if (imm !== null) put64(this.#wrWords, at + (URMA_JFS_WR["send.imm_data"] >> 2), imm);
    return this.#close();
  }

  /**
   * Posts the WRs from index `from` on (every WR by default) with one `urma_post_jetty_send_wr`.
   * Returns the urma_status_t (0 = posted); on failure the WRs before {@link badIndex} were posted.
   * A `from` > 0 (the rest of a refused post, a rare path) costs one view of `wrs`.
   */
  post(jetty: Jetty, from = 0): number {
    if (from >= this.#wrCount) return 0;
    const wrs = from === 0 ? this.wrs : this.wrs.subarray(from * URMA_JFS_WR.$size);
    return this.lib.lib.symbols.urma_post_jetty_send_wr(jetty.handle, wrs, this.badWr);
  }

  /** After a failed post: index of the first WR not posted. */
  get badIndex(): number {
    const addr = this.badWr[0] + this.badWr[1] * TWO32;
    return addr === 0 ? 0 : (addr - this.#wrsAddress) / URMA_JFS_WR.$size;
  }
}

/** A reusable batch of receive WRs (one SGE each). Owns its arrays; one JS thread. */
export class UrmaRecvBatch {
  /** maxWr × urma_jfr_wr_t. */
  readonly wrs: Uint8Array;
  /** maxWr × urma_sge_t. */
  readonly sges: Uint8Array;
  /** After a failed post: the address of the first WR not posted. */
  readonly badWr = new Uint32Array(2);
  readonly #wrWords: Uint32Array;
  readonly #sgeWords: Uint32Array;
  readonly #wrsAddress: number;
  readonly #sgesAddress: number;
  #wrCount = 0;

  constructor(private readonly lib: UrmaLib, readonly maxWr: number) {
    if (maxWr < 1 || maxWr > 1024) throw new RangeError("maxWr must be 1..1024");
    this.wrs = new Uint8Array(maxWr * URMA_JFR_WR.$size);
    this.sges = new Uint8Array(maxWr * URMA_SGE.$size);
    this.#wrWords = new Uint32Array(this.wrs.buffer);
    this.#sgeWords = new Uint32Array(this.sges.buffer);
    this.#wrsAddress = Number(lib.ffi.address(lib.ffi.ptrOf(this.wrs)));
    this.#sgesAddress = Number(lib.ffi.address(lib.ffi.ptrOf(this.sges)));
  }

  /** Receive WRs in the batch. */
  get length(): number {
    return this.#wrCount;
  }

  /** Empties the batch. */
  reset(): void {
    this.#wrCount = 0;
  }

  /** Adds a receive into `seg` at `addr`, `len` bytes. Returns its index or BATCH_FULL. */
  recv(seg: Segment, addr: number, len: number, userCtx: number): number {
    if (this.#wrCount >= this.maxWr) return BATCH_FULL;
    const index = this.#wrCount, words = this.#wrWords, at = index * RECV_WR_WORDS;
    putSge(this.#sgeWords, index * SGE_WORDS, addr, len, seg.ptrValue);
    const sgeAddress = this.#sgesAddress + index * URMA_SGE.$size;
    put64(words, at + ((URMA_JFR_WR.src + URMA_SG.sge) >> 2), sgeAddress);
    words[at + ((URMA_JFR_WR.src + URMA_SG.num_sge) >> 2)] = 1;
    put64(words, at + (URMA_JFR_WR.user_ctx >> 2), userCtx);
    put64(words, at + (URMA_JFR_WR.next >> 2), 0);
    if (index > 0) {
      const previousNext = (index - 1) * RECV_WR_WORDS + (URMA_JFR_WR.next >> 2);
      put64(words, previousNext, this.#wrsAddress + index * URMA_JFR_WR.$size);
    }
    return this.#wrCount++;
  }

  /** Posts every receive with one `urma_post_jetty_recv_wr`. Returns the urma_status_t. */
  post(jetty: Jetty): number {
    if (this.#wrCount === 0) return 0;
    return this.lib.lib.symbols.urma_post_jetty_recv_wr(jetty.handle, this.wrs, this.badWr);
  }
}

/** Reusable completion records (`urma_cr_t`) and allocation-free accessors. One JS thread. */
export class CrReader {
  /** max × urma_cr_t, written by urma_poll_jfc. */
  readonly buffer: Uint8Array;
  readonly #words: Uint32Array;

  constructor(readonly max: number) {
    if (max < 1 || max > 1024) throw new RangeError("max must be 1..1024");
    this.buffer = new Uint8Array(max * URMA_CR.$size);
    this.#words = new Uint32Array(this.buffer.buffer);
  }

  #word(index: number, field: number): number {
    return this.#words[(index * URMA_CR.$size + field) >> 2];
  }

  /** urma_cr_status_t (0 = success; see errors.ts URMA_CR). */
  status(index: number): number {
    return this.#word(index, URMA_CR.status);
  }
  /** The request's user_ctx (wr id, < 2^53). */
  userCtx(index: number): number {
    return this.#word(index, URMA_CR.user_ctx) + this.#word(index, URMA_CR.user_ctx + 4) * TWO32;
  }
  /** urma_cr_opcode_t of a receive completion (URMA_CR_OPC). */
  opcode(index: number): number {
    return this.#word(index, URMA_CR.opcode);
  }
  /** True for a receive completion (flag.s_r). */
  isRecv(index: number): boolean {
    return (this.buffer[index * URMA_CR.$size + URMA_CR.flag] & 1) === 1;
  }
  /** Bytes transferred. */
  completionLen(index: number): number {
    return this.#word(index, URMA_CR.completion_len);
  }
  /** Local jetty / JFS / JFR id. */
  localId(index: number): number {
    return this.#word(index, URMA_CR.local_id);
  }
  /** The sender's uasid (receive completions). */
  remoteUasid(index: number): number {
    return this.#word(index, URMA_CR.remote_id + 16);
  }
  /** The sender's jetty id (receive completions). */
  remoteId(index: number): number {
    return this.#word(index, URMA_CR.remote_id + 20);
  }
  /** Immediate data (host order), exact below 2^53. */
  imm(index: number): number {
    return this.#word(index, URMA_CR.imm_data) + this.#word(index, URMA_CR.imm_data + 4) * TWO32;
  }
  /** Immediate data as a full 64-bit value (allocates a bigint). */
  immBig(index: number): bigint {
    return BigInt(this.#word(index, URMA_CR.imm_data)) |
      (BigInt(this.#word(index, URMA_CR.imm_data + 4)) << 32n);
  }
}
