/**
 * Data path of the verbs fabric, send side: how one RC QP's work requests are encoded, posted
 * and reaped. The accounting (credits, bounce ring, which WR is signaled, caller completions)
 * is the fabric-neutral {@link RdmaSendRing}; this file is what is verbs about it:
 *
 * - WRs accumulate in a {@link SendBatch} (the helper's flat format) and go out with one
 *   `vb_post_send` (one doorbell) when the ring posts.
 * - The verbs wr_id of every WR is its ring sequence number; RC completes in order, so a
 *   completion retires every WR up to its sequence (`retireThrough`).
 * - An error completion fails the endpoint naming `ibv_wc_status_str`, the opcode (kept per
 *   WR) and the peer; a flushed WR is marked as a consequence (a later real cause replaces it).
 *
 * Each `…(…)` method below encodes ONE work request; callers reserved room first
 * (`ring.reserve`). Nothing allocates per WR. One JS thread (the endpoint's).
 * @module
 */
import { errnoName } from "../../errors.ts";
import { IBV_SEND, IBV_WC_WR_FLUSH_ERR, IBV_WR } from "../../ffi/symbols/libibverbs.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import { type RdmaSendPort, RdmaSendRing } from "../rdma_send_ring.ts";
import { wcStatusStr } from "./cq.ts";
import { SendBatch } from "./send_batch.ts";
import type { VerbsLib } from "./verbs_lib.ts";
import type { EndpointResources } from "./verbs_resources.ts";
import type { WcReader } from "./wc_reader.ts";
import type { VerbsHub } from "./hub.ts";

const OP_NAME: Record<number, string> = {
  [IBV_WR.RDMA_WRITE]: "RDMA WRITE",
  [IBV_WR.RDMA_WRITE_WITH_IMM]: "RDMA WRITE_WITH_IMM",
  [IBV_WR.SEND]: "SEND",
  [IBV_WR.SEND_WITH_IMM]: "SEND_WITH_IMM",
  [IBV_WR.RDMA_READ]: "RDMA READ",
};
/** Most WRs per post. */
const MAX_BATCH = 256;
/** A byte in the remote key changed by the `bad-remote-key` fault. */
const BAD_KEY_MASK = 0x00ff00ff;

/** Where the peer's region is (learned during the handshake). */
export interface PeerRegion {
  /** Address of the peer's region (user-space addresses fit in 53 bits). */
  readonly addr: number;
  readonly rkey: number;
  /** Bytes of the peer's region. */
  readonly size: number;
}

/**
 * The send side of one verbs endpoint, and its failure state (a failed post or completion fails
 * the endpoint; see {@link VerbsSendPath.fail}).
 */
export class VerbsSendPath implements RdmaSendPort {
  /** The send accounting (credits, bounce ring, signaling, caller completions). */
  readonly ring: RdmaSendRing;
  /** The bounce ring's bytes and u32 view (registered, local access only). */
  readonly bounce: Uint8Array;
  readonly bounce32: Uint32Array;
  #failure: string | null = null;
  #failureIsFlush = false;
  /** Set once the native resources are gone: nothing may touch the CQ. */
  released = false;
  readonly #lib: VerbsLib;
  readonly #qp: NonNullPtr;
  readonly #hub: VerbsHub;
  readonly #postSend: VerbsLib["helper"]["lib"]["symbols"]["vb_post_send"];
  readonly #batch: SendBatch;
  /** Send completions of this QP handled so far (the hub hands them over). */
  #reaped = 0;
  readonly #opOfSeq: Uint8Array;
  readonly #depth: number;
  readonly #bounceAddr: number;
  readonly #bounceLkey: number;
  readonly #regionAddr: number;
  readonly #regionLkey: number;
  readonly #outboxAddr: number;
  readonly #outboxLkey: number;
  readonly #maxInline: number;
  #remoteAddr: number;
  #remoteKey: number;

  constructor(
    lib: VerbsLib,
    res: EndpointResources,
    peer: PeerRegion,
    readonly peerName: string,
    signalEvery: number,
  ) {
    this.#lib = lib;
    this.#qp = res.qp.handle;
    this.#hub = res.hub;
    this.#postSend = lib.helper.lib.symbols.vb_post_send;
    this.#depth = res.shape.sqDepth;
    this.#batch = new SendBatch(MAX_BATCH, MAX_BATCH * res.shape.maxSge);
    this.#opOfSeq = new Uint8Array(this.#depth);
    this.bounce = res.bounce.buffer;
    this.bounce32 = new Uint32Array(
      this.bounce.buffer,
      this.bounce.byteOffset,
      this.bounce.length >> 2,
    );
    this.#bounceAddr = res.bounce.address;
    this.#bounceLkey = res.bounce.lkey;
    this.#regionAddr = res.region.address;
    this.#regionLkey = res.region.lkey;
    this.#outboxAddr = res.outbox?.address ?? 0;
    this.#outboxLkey = res.outbox?.lkey ?? 0;
    this.#maxInline = res.qp.cap.maxInlineData;
    this.#remoteAddr = peer.addr;
    this.#remoteKey = peer.rkey >>> 0;
    this.ring = new RdmaSendRing(this, {
      depth: this.#depth,
      bounceBytes: this.bounce.length,
      bounceAlign: 16,
      signalEvery: Math.min(signalEvery, this.#depth >> 2),
      signalBounceBytes: this.bounce.length >> 3,
      callerCompletions: 2 * this.#depth,
      signaledBudget: res.shape.signaledBudget,
      fullWaitMs: 2,
    });
  }

  /** True until the endpoint failed or closed: then nothing is posted any more. */
  get usable(): boolean {
    return this.#failure === null;
  }

  /** Why the endpoint failed ("closed" once closed), or null. */
  get failure(): string | null {
    return this.#failure;
  }

  /**
   * Fails the endpoint: nothing is posted any more. `flushed`: the reason is a flushed work
   * request — a consequence of a QP that already went to error — so a later completion with
   * the real cause replaces it.
   */
  fail(reason: string, flushed = false): void {
    if (this.#failure !== null && (!this.#failureIsFlush || flushed)) return;
    this.#failure = reason;
    this.#failureIsFlush = flushed;
  }

  /** The endpoint closes: nothing is posted any more; a healthy endpoint's reason is "closed". */
  markClosed(): void {
    this.#failure ??= "closed";
  }

  /** WRs batched and not yet posted. */
  get batched(): number {
    return this.#batch.length;
  }

  // ---- faults (tests and demos, through the endpoint's faults port) ----

  /** Later WRs carry a wrong remote key: the peer's NIC answers with a remote access error. */
  corruptRemoteKey(): void {
    this.#remoteKey = (this.#remoteKey ^ BAD_KEY_MASK) >>> 0;
  }

  /** Later WRs target addresses `bytes` past where they should: outside the peer's region. */
  skewRemoteAddress(bytes: number): void {
    this.#remoteAddr += bytes;
  }

  // ---- encoding: one work request each ----

  #beginRequest(): void {
    if (this.#batch.length >= MAX_BATCH) this.ring.post();
  }

  #endRequest(
    op: number,
    flags: number,
    remoteOff: number,
    imm: number,
    wrId: number,
    report: boolean,
    signal = false,
  ): void {
    const seq = this.ring.nextSeq;
    if (this.ring.record(wrId, report, signal)) flags |= IBV_SEND.SIGNALED;
    this.#opOfSeq[seq % this.#depth] = op;
    this.#batch.wr(op, flags, seq, this.#remoteAddr + remoteOff, this.#remoteKey, imm);
  }

  /** RDMA WRITE of bounce[at, +len) to the peer at `remoteOff` (inline when it fits). */
  writeBounced(at: number, len: number, remoteOff: number, wrId: number, report: boolean): void {
    this.#beginRequest();
    if (len > 0) this.#batch.sge(this.#bounceAddr + at, len, this.#bounceLkey);
    const inline = len <= this.#maxInline ? IBV_SEND.INLINE : 0;
    this.#endRequest(IBV_WR.RDMA_WRITE, inline, remoteOff, 0, wrId, report);
  }

  /** Starts a gathered RDMA WRITE straight from the session region (then `gather…`, `endGather`). */
  beginGather(): void {
    this.#beginRequest();
  }

  /** Adds region[off, +len) to the gathered WRITE being built. */
  gather(regionOff: number, len: number): void {
    this.#batch.sge(this.#regionAddr + regionOff, len, this.#regionLkey);
  }

  /** Closes the gathered WRITE of `total` bytes to the peer at `remoteOff`. */
  endGather(total: number, remoteOff: number, wrId: number, report: boolean): void {
    const inline = total <= this.#maxInline ? IBV_SEND.INLINE : 0;
    this.#endRequest(IBV_WR.RDMA_WRITE, inline, remoteOff, 0, wrId, report);
  }

  /** RDMA READ of `len` bytes of the peer at `remoteOff` into region[regionOff, +len). */
  readIntoRegion(
    regionOff: number,
    len: number,
    remoteOff: number,
    wrId: number,
    report: boolean,
  ): void {
    this.#beginRequest();
    this.#batch.sge(this.#regionAddr + regionOff, len, this.#regionLkey);
    this.#endRequest(IBV_WR.RDMA_READ, 0, remoteOff, 0, wrId, report);
  }

  /** Signaled RDMA READ of `len` bytes of the peer at `remoteOff` into bounce[at, +len) (handshake proof). */
  readIntoBounce(at: number, len: number, remoteOff: number, wrId: number): void {
    this.#beginRequest();
    this.#batch.sge(this.#bounceAddr + at, len, this.#bounceLkey);
    this.#endRequest(IBV_WR.RDMA_READ, 0, remoteOff, 0, wrId, false, true);
  }

  /**
   * The doorbell write: bounce[at, +4) to the peer's doorbell word at `remoteOff`; with an
   * immediate (`imm` ≥ 0) for a peer that waits on its completion channel. Unsignaled.
   */
  writeDoorbell(at: number, remoteOff: number, imm: number, wrId: number): void {
    this.#beginRequest();
    this.#batch.sge(this.#bounceAddr + at, 4, this.#bounceLkey);
    const op = imm >= 0 ? IBV_WR.RDMA_WRITE_WITH_IMM : IBV_WR.RDMA_WRITE;
    this.#endRequest(op, IBV_SEND.INLINE, remoteOff, imm >= 0 ? imm : 0, wrId, false);
  }

  /**
   * One write-log batch: outbox[at, +len) to the peer's log at `remoteOff`, as an RDMA
   * WRITE_WITH_IMM whose immediate `imm` is the peer endpoint's token (inline when it fits).
   * Unsignaled; the outbox bytes are reused only once the peer acknowledged applying them.
   */
  writeLogBatch(at: number, len: number, remoteOff: number, imm: number, wrId: number): void {
    this.#beginRequest();
    this.#batch.sge(this.#outboxAddr + at, len, this.#outboxLkey);
    const inline = len <= this.#maxInline ? IBV_SEND.INLINE : 0;
    this.#endRequest(IBV_WR.RDMA_WRITE_WITH_IMM, inline, remoteOff, imm, wrId, false);
  }

  /** A signaled zero-length WRITE: its completion says every earlier WR reached the peer. */
  writeMarker(wrId: number): void {
    this.#beginRequest();
    this.#endRequest(IBV_WR.RDMA_WRITE, 0, 0, 0, wrId, false, true);
  }

  // ---- the port the ring drives ----

  /** Posts the batch (one doorbell). */
  postBatch(): void {
    const b = this.#batch, n = b.length;
    if (n === 0) return;
    const rc = this.#postSend(this.#qp, b.descs, b.sges, n, b.badIndex);
    b.reset();
    if (rc !== 0) {
      this.fail(
        `ibv_post_send failed with ${errnoName(rc)}: work request ${
          b.badIndex[0]
        } of ${n} not posted (to ${this.peerName})`,
        false,
      );
    }
  }

  /**
   * Reaps send completions into the ring; returns how many were this QP's. The CQ is the
   * process's: the hub drains it and hands each completion to its QP's endpoint.
   */
  reapCompletions(): number {
    if (this.released) return 0;
    const before = this.#reaped;
    this.#hub.drain();
    return this.#reaped - before;
  }

  /** One send completion of this QP (record `k` of `wc`), from the hub's drain. */
  onSend(wc: WcReader, k: number): void {
    if (this.released) return;
    this.#reaped++;
    const seq = wc.wrId(k), status = wc.status(k);
    if (status !== 0) this.#failedCompletion(wc, k, seq, status);
    this.ring.retireThrough(seq, status);
  }

  #failedCompletion(wc: WcReader, k: number, seq: number, status: number): void {
    const op = this.#opOfSeq[seq % this.#depth];
    const vendor = wc.vendorErr(k);
    this.fail(
      `${OP_NAME[op] ?? `opcode ${op}`} to ${this.peerName} completed with "${
        wcStatusStr(this.#lib, status)
      }" (status ${status}, vendor error 0x${vendor.toString(16)})`,
      status === IBV_WC_WR_FLUSH_ERR,
    );
  }
}
