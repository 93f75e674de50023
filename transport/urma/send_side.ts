/**
 * The send side of a URMA endpoint: how its one-sided writes and reads become `urma_jfs_wr_t`s
 * in a preallocated {@link UrmaSendBatch}, posted with one `urma_post_jetty_send_wr` per post,
 * and how its send completions come back. The accounting (credits, bounce ring, which request
 * is signaled, caller completions) is the fabric-neutral {@link RdmaSendRing}; this file is what
 * is URMA about it:
 *
 * - Bounce ring: `writeCopy` and the word writes copy their bytes into the ring's bytes, which
 *   start at {@link AUX_BOUNCE} in the aux segment (so any bytes may be passed); gathers and
 *   reads use views of the region directly.
 * - A signaled request carries URMA_WR_FLAG.COMPLETE and, when the caller asked for it, the
 *   caller's wr id as user context. URMA completes a jetty's requests in order but a completion
 *   names no sequence: each one retires the oldest signaled request (`retireOldest`); an error
 *   completion fails the endpoint, and reports to the caller when it is the caller's request.
 * - Faults: the faults port may swap the peer's segment for one imported with a wrong token, or
 *   shift every remote address (see endpoint_faults.ts).
 *
 * Each request method reserves room, encodes ONE work request per chunk and batches it; nothing
 * here allocates per request. Callers check bounds and views first (endpoint.ts). One JS thread.
 * @module
 */
import { type Completions, FULL, OK, RESERVED_WR_ID, SIGNALED } from "../fabric.ts";
import { type RdmaSendPort, RdmaSendRing, RING_FULL } from "../rdma_send_ring.ts";
import {
  AUX_BOUNCE,
  CQE_ERROR_MARGIN,
  SGE_PER_WR,
  SIGNAL_EVERY,
  SIGNALED_PER_JETTY,
  SQ_DEPTH,
} from "./endpoint_config.ts";
import type { UrmaEndpointParts } from "./endpoint_parts.ts";
import { URMA_EAGAIN } from "../../ffi/symbols/liburma.ts";
import { URMA_WR_FLAG, UrmaSendBatch } from "./data_path.ts";
import { crStatusName, statusName } from "./errors.ts";
import type { EndpointHealth } from "./health.ts";
import type { UrmaHub } from "./hub.ts";
import type { Jetty, TargetJetty } from "./jetty.ts";
import type { ImportedSegment, Segment } from "./segment.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** Work requests collected before a post (a failed batch's errors fit the jetty's JFC share). */
const BATCH_WR = CQE_ERROR_MARGIN;
/** Completion records the caller may have waiting (reaped, not yet polled). */
const CALLER_COMPLETIONS = 4096;
/** Signaled requests in flight at most (this jetty's share of the process's JFC). */
const SIGNALED_BUDGET = SIGNALED_PER_JETTY;
/**
 * How long a request waits for room while posted requests are still completing (never in the
 * simulator, which completes every request before its post returns).
 */
const FULL_WAIT_MS = 20;
const COMPLETE = URMA_WR_FLAG.COMPLETE;

/** Encoding, posting and completions of one endpoint's send requests. */
export class UrmaSendSide implements RdmaSendPort {
  /** The send accounting (credits, bounce ring, signaling, caller completions). */
  readonly ring: RdmaSendRing;
  readonly #lib: UrmaLib;
  readonly #jetty: Jetty;
  readonly #health: EndpointHealth;
  /** Reaps the JFC (completion_reaper.ts); returns how many records it reaped. */
  readonly #reap: () => number;
  /** The process's hub: its records are reaped in the middle of a post that found no room. */
  readonly #hub: UrmaHub;
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
  /** `writeCopy` sends at most this many bytes per request (a quarter of the bounce ring). */
  readonly #copyChunk: number;

  /** Built by the endpoint over its parts; `reap` polls its JFC. */
  constructor(parts: UrmaEndpointParts, reap: () => number) {
    this.#lib = parts.lib;
    this.#jetty = parts.prepared.jetty;
    this.#health = parts.health;
    this.#reap = reap;
    this.#hub = parts.hub;
    this.#batch = new UrmaSendBatch(parts.lib, BATCH_WR, BATCH_WR * SGE_PER_WR);
    this.#regionSeg = parts.regionSeg;
    this.#regionAddress = parts.regionSeg.address;
    this.#auxSeg = parts.auxSeg;
    this.#auxAddress = parts.auxSeg.address;
    this.#aux = parts.aux;
    this.#auxWords = new Uint32Array(parts.aux.buffer, parts.aux.byteOffset, parts.aux.length >> 2);
    this.#peerSegment = parts.peerSegment;
    this.#peerJetty = parts.peerJetty;
    const bounceBytes = parts.aux.byteLength - AUX_BOUNCE;
    this.#copyChunk = bounceBytes >> 2;
    this.ring = new RdmaSendRing(this, {
      depth: SQ_DEPTH - 2,
      bounceBytes,
      bounceAlign: 8,
      signalEvery: SIGNAL_EVERY,
      signalBounceBytes: bounceBytes >> 2,
      callerCompletions: CALLER_COMPLETIONS,
      signaledBudget: SIGNALED_BUDGET,
      fullWaitMs: FULL_WAIT_MS,
    });
  }

  /** True until the endpoint failed or closed: then nothing is posted any more. */
  get usable(): boolean {
    return this.#health.failure === null;
  }

  // ---- room ----

  /**
   * Room for one request with `bytes` of bounce ring (batch, send queue, JFC, caller records):
   * the bytes' offset in aux (0 when `bytes` is 0), or {@link RING_FULL} (also once failed).
   */
  #reserve(bytes: number, report: boolean): number {
    if (this.#batch.length >= BATCH_WR) this.ring.post();
    if (this.#health.failure !== null) return RING_FULL;
    const at = this.ring.reserve(bytes, report);
    if (at === RING_FULL || this.#health.failure !== null) return RING_FULL;
    return bytes === 0 ? 0 : AUX_BOUNCE + at;
  }

  /** The status of a request `#reserve` found no room for: FAILED once failed, else FULL. */
  #noRoom(): number {
    return this.#health.status() || FULL;
  }

  /** The flags of the request being encoded: +COMPLETE when the ring signals it. */
  #flags(userCtx: number, report: boolean, flags: number, signal = false): number {
    return this.ring.record(userCtx, report, signal) ? flags | COMPLETE : flags;
  }

  /** The sequence of the last request encoded (see `RdmaSendRing.completed`). */
  get lastSeq(): number {
    return this.ring.nextSeq - 1;
  }

  // ---- requests: each reserves room, then encodes one work request per chunk ----

  /** One WRITE (WRITE_IMM when `imm` ≥ 0) of aux[at, +bytes) to the peer at `remoteOff`. */
  #writeBounced(
    wrId: number,
    remoteOff: number,
    at: number,
    bytes: number,
    report: boolean,
    flags: number,
    imm: number,
    signal = false,
  ): void {
    const userCtx = report ? wrId : RESERVED_WR_ID.internal;
    const requestFlags = this.#flags(userCtx, report, flags, signal);
    const batch = this.#batch, seg = this.#peerSegment;
    batch.sge(this.#auxSeg, this.#auxAddress + at, bytes);
    const dst = seg.address + remoteOff + this.#faultAddressShift;
    if (imm < 0) batch.write(this.#peerJetty, seg, dst, userCtx, requestFlags);
    else batch.writeImm(this.#peerJetty, seg, dst, imm, userCtx, requestFlags);
  }

  /** Copies `src` through the bounce ring to the peer at `remoteOff` (in quarter-ring chunks). */
  writeCopy(wrId: number, remoteOff: number, src: Uint8Array, signaled: boolean): number {
    const total = src.length, chunk = this.#copyChunk;
    for (let done = 0; done < total; done += chunk) {
      const bytes = Math.min(chunk, total - done), last = done + bytes >= total;
      const at = this.#reserve(bytes, signaled && last);
      if (at === RING_FULL) return this.#noRoom();
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
      const end = Math.min(count, index + SGE_PER_WR), report = signaled && end >= count;
      if (this.#reserve(0, report) === RING_FULL) return this.#noRoom();
      const userCtx = report ? wrId : RESERVED_WR_ID.internal;
      const flags = this.#flags(userCtx, report, 0);
      let bytes = 0;
      for (; index < end; index++) {
        const view = sg[index];
        if (view.length === 0) continue;
        const address = this.#regionAddress + view.byteOffset - localStart;
        batch.sge(this.#regionSeg, address, view.length);
        bytes += view.length;
      }
      const seg = this.#peerSegment;
      batch.write(this.#peerJetty, seg, seg.address + at + this.#faultAddressShift, userCtx, flags);
      at += bytes;
    }
    return OK;
  }

  /**
   * One u32 through the bounce ring to the peer at `remoteOff` (`flags`: e.g. FENCE; WRITE_IMM
   * with `imm` ≥ 0; `signal`: complete it even if nobody reports it — see {@link lastSeq}).
   */
  postWord(
    wrId: number,
    remoteOff: number,
    value: number,
    signaled: boolean,
    flags: number,
    imm: number,
    signal = false,
  ): number {
    const at = this.#reserve(4, signaled);
    if (at === RING_FULL) return this.#noRoom();
    this.#auxWords[at >> 2] = value >>> 0;
    this.#writeBounced(wrId, remoteOff, at, 4, signaled, flags, imm, signal);
    return OK;
  }

  /** An internal word write (credit total, kick; WRITE_IMM with `imm` ≥ 0). */
  postInternalWord(
    remoteOff: number,
    value: number,
    flags: number,
    imm: number,
    signal = false,
  ): number {
    return this.postWord(RESERVED_WR_ID.internal, remoteOff, value, false, flags, imm, signal);
  }

  /** True once every request up to `seq` completed. */
  completed(seq: number): boolean {
    return this.ring.completed(seq);
  }

  /** READ of `bytes` from the peer at `remoteOff` into the region at `localOffset`. */
  readInto(
    wrId: number,
    localOffset: number,
    bytes: number,
    remoteOff: number,
    signaled: boolean,
  ): number {
    if (this.#reserve(0, signaled) === RING_FULL) return this.#noRoom();
    const userCtx = signaled ? wrId : RESERVED_WR_ID.internal;
    const flags = this.#flags(userCtx, signaled, 0);
    const batch = this.#batch, seg = this.#peerSegment;
    batch.sge(this.#regionSeg, this.#regionAddress + localOffset, bytes);
    const src = seg.address + remoteOff + this.#faultAddressShift;
    batch.read(this.#peerJetty, seg, src, userCtx, flags);
    return OK;
  }

  /** A zero-byte request: completes at once (a record for `poll()` when SIGNALED). */
  completeAtOnce(wrId: number, flags: number): number {
    if ((flags & SIGNALED) !== 0) this.ring.pushCompletion(wrId, 0);
    return OK;
  }

  /** Posts the batch (the ring then calls {@link postBatch}). */
  post(): void {
    this.ring.post();
  }

  /** Moves the caller's completion records into `out`; returns the count. */
  drainCallerCompletions(out: Completions): number {
    return this.ring.drainInto(out);
  }

  // ---- the port the ring drives, and the completions the reaper hands over ----

  /**
   * Posts the batch (one `urma_post_jetty_send_wr`); a failed post fails the endpoint. A post
   * refused because the process's JFC has no room left for a completion (URMA_EAGAIN: the
   * requests before the refused one were posted) is back-pressure, not a fault of this endpoint:
   * the JFC is reaped (room comes back) and the rest posted, once. Failing the endpoint there
   * would close its session without a word to the peer (its close cannot post either), whose
   * calls would then wait for their deadlines.
   */
  postBatch(): void {
    const batch = this.#batch;
    if (batch.length === 0) return;
    let rc = 0;
    if (this.#health.failure === null) {
      rc = batch.post(this.#jetty);
      if (rc === URMA_EAGAIN) {
        const rest = batch.badIndex;
        this.#hub.counters.fullPosts++;
        if (this.#hub.reapRecords() > 0 && this.#health.failure === null) {
          rc = batch.post(this.#jetty, rest);
        }
      }
    }
    batch.reset();
    if (rc !== 0) {
      this.#health.fail(`urma_post_jetty_send_wr: ${statusName(rc)} (${this.#lib.lastError()})`);
    }
  }

  /** Reaps the JFC (send completions come back through {@link onCompletion}). */
  reapCompletions(): number {
    return this.#reap();
  }

  /**
   * One send completion (in posting order): a success retires the oldest signaled request (and
   * every request before it); an error reports to the caller when it is the caller's oldest
   * signaled request, then fails the endpoint.
   */
  onCompletion(status: number, userCtx: number): void {
    const ring = this.ring;
    if (status === 0) {
      ring.retireOldest(0);
      return;
    }
    if (ring.oldestReported && ring.oldestWrId === userCtx) ring.retireOldest(status, false);
    if (!this.#health.closed) {
      this.#health.fail(
        `${crStatusName(status)}${
          userCtx === RESERVED_WR_ID.internal ? "" : ` (request ${userCtx})`
        }`,
      );
    }
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
