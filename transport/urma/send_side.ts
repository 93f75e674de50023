/**
 * The send side of a URMA endpoint: one-sided writes and reads become `urma_jfs_wr_t`s in a
 * preallocated {@link UrmaSendBatch}, posted with one `urma_post_jetty_send_wr` per `post()`.
 *
 * - Bounce ring: `writeCopy` and the word writes copy their bytes into a ring in the aux
 *   segment (so any bytes may be passed); gathers and reads use views of the region directly.
 * - Signaling: every {@link SIGNAL_EVERY}th request (or a quarter ring of bounce bytes) is
 *   signaled internally, so the send queue and the ring always drain. Signaled requests wait in
 *   a FIFO in posting order; a completion releases the send queue and the bounce ring up to its
 *   request, and the caller's own signaled requests become completion records for `poll()`.
 * - Faults: the faults port may swap the peer's segment for one imported with a wrong token, or
 *   shift every remote address (see endpoint_faults.ts).
 *
 * Buffers: the ring, the batch and the FIFO are preallocated; nothing here allocates per
 * request. Callers check bounds and views first (endpoint.ts). One JS thread.
 * @module
 */
import { CompletionRing } from "../completion_ring.ts";
import { type Completions, FULL, OK, RESERVED_WR_ID, SIGNALED } from "../fabric.ts";
import {
  AUX_BOUNCE,
  JFC_DEPTH,
  RECV_DEPTH,
  SGE_PER_WR,
  SIGNAL_EVERY,
  SQ_DEPTH,
  type UrmaEndpointParts,
} from "./endpoint_config.ts";
import { URMA_WR_FLAG, UrmaSendBatch } from "./data_path.ts";
import { crStatusName, statusName } from "./errors.ts";
import type { EndpointHealth } from "./health.ts";
import type { Jetty, TargetJetty } from "./jetty.ts";
import type { ImportedSegment, Segment } from "./segment.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** Work requests collected before a post. */
const BATCH_WR = 64;
/** Completion records the caller may have waiting (reaped, not yet polled). */
const CALLER_COMPLETIONS = 4096;
/** Signaled requests in flight at most (the JFC also holds receives and a batch's errors). */
const SIGNALED_BUDGET = JFC_DEPTH - RECV_DEPTH - 2 * BATCH_WR;
const COMPLETE = URMA_WR_FLAG.COMPLETE;

/** Posting, bounce ring and signaled-request FIFO of one endpoint. */
export class UrmaSendSide {
  readonly #lib: UrmaLib;
  readonly #jetty: Jetty;
  readonly #health: EndpointHealth;
  /** Reaps the JFC (completion_reaper.ts); called when the queue must drain. */
  readonly #reap: () => void;
  readonly #batch: UrmaSendBatch;
  readonly #regionSeg: Segment;
  readonly #regionAddress: number;
  readonly #auxSeg: Segment;
  readonly #auxAddress: number;
  readonly #aux: Uint8Array;
  readonly #auxWords: Uint32Array;
  #peerSegment: ImportedSegment;
  readonly #peerJetty: TargetJetty;
  /** Added to every remote address: 0 unless the out-of-bounds fault was injected. */
  #faultAddressShift = 0;
  // bounce ring, in absolute byte positions (offset in the ring = position % size)
  readonly #bounceSize: number;
  #bounceHead = 0;
  #bounceTail = 0;
  // signaled requests in flight, in posting order (a ring of SQ_DEPTH entries)
  /** Requests posted up to and including this one: its completion completes them all. */
  readonly #signaledPostCount = new Float64Array(SQ_DEPTH);
  /** The bounce head after this request: its completion frees the ring up to here. */
  readonly #signaledBounceHead = new Float64Array(SQ_DEPTH);
  /** The wr id the caller gave it (or the internal id). */
  readonly #signaledWrId = new Float64Array(SQ_DEPTH);
  /** 1 when the caller asked for its completion. */
  readonly #signaledForCaller = new Uint8Array(SQ_DEPTH);
  #signaledHead = 0;
  #signaledCount = 0;
  #callerSignaledInFlight = 0;
  #postedCount = 0;
  #completedCount = 0;
  /** Unsignaled requests since the last signaled one. */
  #unsignaledRun = 0;
  /** Bounce bytes taken since the last signaled request. */
  #unsignaledBounceBytes = 0;
  readonly #callerCompletions = new CompletionRing(CALLER_COMPLETIONS);

  /** Built by the endpoint over its parts; `reap` polls its JFC. */
  constructor(parts: UrmaEndpointParts, reap: () => void) {
    this.#lib = parts.lib;
    this.#jetty = parts.jetty;
    this.#health = parts.health;
    this.#reap = reap;
    this.#batch = new UrmaSendBatch(parts.lib, BATCH_WR, BATCH_WR * SGE_PER_WR);
    this.#regionSeg = parts.regionSeg;
    this.#regionAddress = parts.regionSeg.address;
    this.#auxSeg = parts.auxSeg;
    this.#auxAddress = parts.auxSeg.address;
    this.#aux = parts.aux;
    this.#auxWords = new Uint32Array(parts.aux.buffer, parts.aux.byteOffset, parts.aux.length >> 2);
    this.#peerSegment = parts.peerSegment;
    this.#peerJetty = parts.peerJetty;
    this.#bounceSize = parts.aux.byteLength - AUX_BOUNCE;
  }

  // ---- room ----

  #inFlightFull(): boolean {
    return this.#postedCount - this.#completedCount >= SQ_DEPTH - 2 ||
      this.#signaledCount >= SIGNALED_BUDGET;
  }

  /** Makes room for one request (batch, send queue, JFC, caller records): OK, FULL or FAILED. */
  room(callerSignaled: boolean): number {
    if (this.#batch.length >= BATCH_WR) this.post();
    if (this.#inFlightFull()) this.#drain(false);
    if (this.#inFlightFull()) return this.#health.status() || FULL;
    if (
      callerSignaled &&
      this.#callerCompletions.length + this.#callerSignaledInFlight >= CALLER_COMPLETIONS
    ) return this.#health.status() || FULL;
    return this.#health.status();
  }

  /** Posts the batch and reaps until half the queue is free (or, `untilEmpty`, all of it). */
  #drain(untilEmpty: boolean): void {
    this.post();
    for (
      let spin = 0;
      spin < 200_000 && this.#signaledCount > 0 && this.#health.failure === null;
      spin++
    ) {
      this.#reap();
      if (
        !untilEmpty && this.#postedCount - this.#completedCount < SQ_DEPTH / 2 &&
        this.#signaledCount < SIGNALED_BUDGET / 2
      ) return;
    }
  }

  /** Bounce offset (inside aux) for `bytes` (8-aligned), or -1 when the ring stays full. */
  #allocBounce(bytes: number): number {
    const size = this.#bounceSize;
    bytes = (bytes + 7) & ~7;
    for (let attempt = 0; attempt < 2; attempt++) {
      let position = this.#bounceHead, offset = position % size;
      if (offset + bytes > size) position += size - offset, offset = 0; // skip the ring's tail end
      if (position + bytes - this.#bounceTail <= size) {
        this.#unsignaledBounceBytes += position + bytes - this.#bounceHead;
        this.#bounceHead = position + bytes;
        return AUX_BOUNCE + offset;
      }
      this.#drain(true);
    }
    return -1;
  }

  /** Counts the next request; returns its flags (+COMPLETE when signaled, then queued in the FIFO). */
  #account(callerSignaled: boolean, wrId: number, flags: number): number {
    this.#postedCount++;
    if (
      !callerSignaled && ++this.#unsignaledRun < SIGNAL_EVERY &&
      this.#unsignaledBounceBytes < this.#bounceSize / 4
    ) return flags;
    const slot = (this.#signaledHead + this.#signaledCount) % SQ_DEPTH;
    this.#signaledPostCount[slot] = this.#postedCount;
    this.#signaledBounceHead[slot] = this.#bounceHead;
    this.#signaledWrId[slot] = wrId;
    this.#signaledForCaller[slot] = callerSignaled ? 1 : 0;
    this.#signaledCount++;
    if (callerSignaled) this.#callerSignaledInFlight++;
    this.#unsignaledRun = 0;
    this.#unsignaledBounceBytes = 0;
    return flags | COMPLETE;
  }

  // ---- requests ----

  /** One WRITE (WRITE_IMM when `imm` ≥ 0) of aux[at, +bytes) to the peer at `remoteOff`. */
  #writeBounced(
    wrId: number,
    remoteOff: number,
    at: number,
    bytes: number,
    callerSignaled: boolean,
    flags: number,
    imm: number,
  ): void {
    const requestFlags = this.#account(callerSignaled, wrId, flags);
    const batch = this.#batch, seg = this.#peerSegment;
    batch.sge(this.#auxSeg, this.#auxAddress + at, bytes);
    const dst = seg.address + remoteOff + this.#faultAddressShift;
    const userCtx = callerSignaled ? wrId : RESERVED_WR_ID.internal;
    if (imm < 0) batch.write(this.#peerJetty, seg, dst, userCtx, requestFlags);
    else batch.writeImm(this.#peerJetty, seg, dst, imm, userCtx, requestFlags);
  }

  /** Copies `src` through the bounce ring to the peer at `remoteOff` (in quarter-ring chunks). */
  writeCopy(wrId: number, remoteOff: number, src: Uint8Array, signaled: boolean): number {
    const total = src.length, chunk = this.#bounceSize >> 2;
    for (let done = 0; done < total; done += chunk) {
      const bytes = Math.min(chunk, total - done), last = done + bytes >= total;
      const status = this.room(signaled && last);
      if (status !== OK) return status;
      const at = this.#allocBounce(bytes);
      if (at < 0) return this.#health.status() || FULL;
      this.#aux.set(done === 0 && last ? src : src.subarray(done, done + bytes), at);
      this.#writeBounced(wrId, remoteOff + done, at, bytes, signaled && last, 0, -1);
    }
    return OK;
  }

  /**
   * Gathers the first `count` views in `sg` (views of the region, whose first byte is at
   * `localStart` in their buffer) into the peer at `remoteOff`, {@link SGE_PER_WR} views a
   * request.
   */
  writeGather(
    wrId: number,
    remoteOff: number,
    sg: readonly Uint8Array[],
    localStart: number,
    count: number,
    signaled: boolean,
  ): number {
    const batch = this.#batch;
    let index = 0, at = remoteOff;
    while (index < count) {
      const end = Math.min(count, index + SGE_PER_WR), last = end >= count;
      const status = this.room(signaled && last);
      if (status !== OK) return status;
      const flags = this.#account(signaled && last, wrId, 0);
      let bytes = 0;
      for (; index < end; index++) {
        const view = sg[index];
        if (view.length === 0) continue;
        const address = this.#regionAddress + view.byteOffset - localStart;
        batch.sge(this.#regionSeg, address, view.length);
        bytes += view.length;
      }
      const seg = this.#peerSegment;
      const dst = seg.address + at + this.#faultAddressShift;
      batch.write(
        this.#peerJetty,
        seg,
        dst,
        signaled && last ? wrId : RESERVED_WR_ID.internal,
        flags,
      );
      at += bytes;
    }
    return OK;
  }

  /** One u32 through the bounce ring to the peer at `remoteOff` (`flags`: e.g. FENCE). */
  postWord(
    wrId: number,
    remoteOff: number,
    value: number,
    signaled: boolean,
    flags: number,
    imm: number,
  ): number {
    const status = this.room(signaled);
    if (status !== OK) return status;
    const at = this.#allocBounce(4);
    if (at < 0) return this.#health.status() || FULL;
    this.#auxWords[at >> 2] = value >>> 0;
    this.#writeBounced(wrId, remoteOff, at, 4, signaled, flags, imm);
    return OK;
  }

  /** An internal word write (credit total, kick; WRITE_IMM with `imm` ≥ 0). */
  postInternalWord(remoteOff: number, value: number, flags: number, imm: number): number {
    return this.postWord(RESERVED_WR_ID.internal, remoteOff, value, false, flags, imm);
  }

  /** READ of `bytes` from the peer at `remoteOff` into the region at `localOffset`. */
  readInto(
    wrId: number,
    localOffset: number,
    bytes: number,
    remoteOff: number,
    signaled: boolean,
  ): number {
    const status = this.room(signaled);
    if (status !== OK) return status;
    const flags = this.#account(signaled, wrId, 0);
    const batch = this.#batch, seg = this.#peerSegment;
    batch.sge(this.#regionSeg, this.#regionAddress + localOffset, bytes);
    const src = seg.address + remoteOff + this.#faultAddressShift;
    batch.read(this.#peerJetty, seg, src, signaled ? wrId : RESERVED_WR_ID.internal, flags);
    return OK;
  }

  /** A zero-byte request: completes at once (a record for `poll()` when SIGNALED). */
  completeAtOnce(wrId: number, flags: number): number {
    if ((flags & SIGNALED) !== 0) this.#callerCompletions.push(wrId, 0);
    return OK;
  }

  /** Posts the batch (one `urma_post_jetty_send_wr`); a failed post fails the endpoint. */
  post(): void {
    const batch = this.#batch;
    if (batch.length === 0) return;
    const rc = this.#health.failure === null ? batch.post(this.#jetty) : 0;
    batch.reset();
    if (rc !== 0) {
      this.#health.fail(`urma_post_jetty_send_wr: ${statusName(rc)} (${this.#lib.lastError()})`);
    }
  }

  // ---- completions ----

  /** One send completion (in posting order): releases the queue and ring up to its request. */
  onCompletion(status: number, userCtx: number): void {
    const head = this.#signaledHead;
    if (status !== 0) {
      if (
        this.#signaledCount > 0 && this.#signaledForCaller[head] === 1 &&
        this.#signaledWrId[head] === userCtx
      ) {
        this.#callerCompletions.push(userCtx, status);
        this.#popSignaled();
      }
      if (!this.#health.closed) {
        this.#health.fail(
          `${crStatusName(status)}${
            userCtx === RESERVED_WR_ID.internal ? "" : ` (request ${userCtx})`
          }`,
        );
      }
      return;
    }
    if (this.#signaledCount === 0) return;
    this.#completedCount = this.#signaledPostCount[head];
    this.#bounceTail = this.#signaledBounceHead[head];
    if (this.#signaledForCaller[head] === 1) {
      this.#callerCompletions.push(this.#signaledWrId[head], 0);
    }
    this.#popSignaled();
  }

  #popSignaled(): void {
    if (this.#signaledForCaller[this.#signaledHead] === 1) this.#callerSignaledInFlight--;
    this.#signaledHead = (this.#signaledHead + 1) % SQ_DEPTH;
    this.#signaledCount--;
  }

  /** Moves the caller's completion records into `out`; returns the count. */
  drainCallerCompletions(out: Completions): number {
    return this.#callerCompletions.drainInto(out);
  }

  // ---- faults (endpoint_faults.ts) ----

  /** The peer's segment later requests address. */
  get peerSegment(): ImportedSegment {
    return this.#peerSegment;
  }

  /** Later requests address `seg` instead (the bad-remote-key fault). */
  retargetPeerSegment(seg: ImportedSegment): void {
    this.#peerSegment = seg;
  }

  /** Later requests aim `bytes` past the addresses they were given (the out-of-bounds fault). */
  shiftRemoteAddresses(bytes: number): void {
    this.#faultAddressShift = bytes;
  }
}
