/**
 * Data path of the URMA fabric: a {@link FabricEndpoint} over one jetty. One-sided writes and
 * reads become `urma_jfs_wr_t`s collected in a preallocated {@link UrmaSendBatch} and posted with
 * one `urma_post_jetty_send_wr` per `flush()` / `kick()`; completions are reaped with
 * `urma_poll_jfc` into a preallocated {@link CrReader}. Nothing here allocates per message.
 *
 * Memory of one side (both registered; built by setup.ts):
 * ```
 *  region segment (peer: READ | WRITE)            aux segment (local only)
 *  ├── local: the session region ──┤ fabric page ┤  ├ recv buf ┤ proof src ┤ bounce ring ┤
 *  fabric page @0 u32: receives the PEER has posted in total (its credit counter, peer-written)
 * ```
 * - `write(src)` copies `src` into the bounce ring (any bytes may be passed); `writeSg` and
 *   `read` use views of `local` directly. Bounce space is released when a signaled request at
 *   or after it completes: every {@link SIGNAL_EVERY}th request (or a quarter ring) is signaled
 *   internally, so the send queue and the ring always drain.
 * - `kick()` writes my kick counter into the peer's doorbell word with WRITE_IMM: one request
 *   that both moves the word and, by consuming one of the peer's receives, makes the peer's JFCE
 *   fd readable when its JFC is armed (it is armed only while the peer sleeps). Receives are
 *   credits: the peer reposts consumed ones in batches and publishes its total into my fabric
 *   page; with no credit left the kick is a plain WRITE (the peer then has ≥ RECV_DEPTH unreaped
 *   notifications, so it is not asleep: it reaps and republishes before it ever sleeps).
 * - Publication words (`writeU32`) and the doorbell carry the FENCE flag: they execute after
 *   every earlier request of this jetty.
 * Threading: one JS thread; `waitInbound` blocks off-thread (helper `vb_wait_fd`).
 * @module
 */
import { FABRIC_HEADER } from "../control_page.ts";
import { CompletionRing } from "../completion_ring.ts";
import {
  type Completions,
  type FabricEndpoint,
  FAILED,
  FULL,
  OK,
  SIGNALED,
} from "../fabric.ts";
import { URMA_CR_OPC } from "../../ffi/symbols/liburma.ts";
import {
  AUX_BOUNCE,
  AUX_PROOF,
  AUX_RECV,
  AUX_RECV_LEN,
  FABRIC_PAGE,
  JFC_DEPTH,
  PROOF_BYTES,
  PROOF_IMM,
  type ReceivedProof,
  RECV_DEPTH,
  SGE_PER_WR,
  SIGNAL_EVERY,
  SQ_DEPTH,
  type UrmaEndpointParts,
} from "./endpoint_defs.ts";
import { CrReader, URMA_WR_FLAG, UrmaRecvBatch, UrmaSendBatch } from "./data_path.ts";
import { crStatusName, statusName } from "./errors.ts";
import type { Jfc } from "./jfc.ts";
import type { Jetty, TargetJetty } from "./jetty.ts";
import type { ImportedSegment, Segment } from "./segment.ts";
import type { UrmaLib } from "./urma_lib.ts";

export * from "./endpoint_defs.ts";

const BATCH_WR = 64;
const USER_CQ = 4096;
const SIGNALED_BUDGET = JFC_DEPTH - RECV_DEPTH - 2 * BATCH_WR;
const REAP_AFTER_KICKS = RECV_DEPTH / 4;
const REPOST_BATCH = RECV_DEPTH / 8;
const PROOF_WR = 2 ** 53 - 2;
const INTERNAL_WR = 2 ** 53 - 3;
const C = URMA_WR_FLAG.COMPLETE, FENCE = URMA_WR_FLAG.FENCE;

/** A URMA fabric endpoint. Construct through setup.ts; connected once `attachPeer` ran. */
export class UrmaEndpoint implements FabricEndpoint {
  readonly kind = "urma" as const;
  readonly simulated: boolean;
  readonly local: Uint8Array;
  readonly remoteSize: number;
  readonly #p: UrmaEndpointParts;
  readonly #u: UrmaLib;
  readonly #jfc: Jfc;
  readonly #jetty: Jetty;
  readonly #regionSeg: Segment;
  readonly #auxSeg: Segment;
  readonly #regionAddr: number;
  readonly #auxAddr: number;
  readonly #aux: Uint8Array;
  readonly #auxU32: Uint32Array;
  readonly #localI32: Int32Array;
  readonly #fabricI32: Int32Array;
  readonly #memBuffer: ArrayBufferLike;
  readonly #sb: UrmaSendBatch;
  readonly #rb: UrmaRecvBatch;
  readonly #cr = new CrReader(64);
  #peerSeg: ImportedSegment | null = null;
  #peerJetty: TargetJetty | null = null;
  #skew = 0;
  // bounce ring (absolute positions)
  readonly #bSize: number;
  #bHead = 0;
  #bTail = 0;
  // signaled requests in flight, in posting order
  readonly #fSeq = new Float64Array(SQ_DEPTH);
  readonly #fBounce = new Float64Array(SQ_DEPTH);
  readonly #fWr = new Float64Array(SQ_DEPTH);
  readonly #fUser = new Uint8Array(SQ_DEPTH);
  #fHead = 0;
  #fCount = 0;
  #fUserCount = 0;
  #posted = 0;
  #done = 0;
  #sinceSig = 0;
  #bytesSinceSig = 0;
  // completions for the caller
  readonly #uc = new CompletionRing(USER_CQ);
  // notifications and receives
  #kicks = 0;
  #notified = 0;
  #recvPosted = 0;
  #recvPending = 0;
  #recvMark = 0;
  #creditsDirty = false;
  #proof: ReceivedProof | null = null;
  #failed: string | null = null;
  #closed = false;
  #released = false;
  #waiting: Promise<boolean> | null = null;

  /** @internal built by setup.ts (posts the receives). */
  constructor(parts: UrmaEndpointParts) {
    this.#p = parts;
    const u = this.#u = parts.lib;
    this.simulated = u.simulated;
    this.#jfc = parts.jfc;
    this.#jetty = parts.jetty;
    this.#regionSeg = parts.regionSeg;
    this.#auxSeg = parts.auxSeg;
    this.#regionAddr = parts.regionSeg.address;
    this.#auxAddr = parts.auxSeg.address;
    const mem = parts.mem;
    this.#memBuffer = mem.buffer;
    this.local = mem.subarray(0, parts.regionSize);
    this.remoteSize = parts.remoteSize;
    this.#aux = parts.aux;
    this.#auxU32 = new Uint32Array(
      parts.aux.buffer,
      parts.aux.byteOffset,
      parts.aux.byteLength >> 2,
    );
    this.#localI32 = new Int32Array(mem.buffer, mem.byteOffset, 8);
    this.#fabricI32 = new Int32Array(mem.buffer, mem.byteOffset + parts.regionSize, 4);
    this.#bSize = parts.aux.byteLength - AUX_BOUNCE;
    this.#sb = new UrmaSendBatch(u, BATCH_WR, BATCH_WR * SGE_PER_WR);
    this.#rb = new UrmaRecvBatch(u, RECV_DEPTH);
    this.#recvPending = RECV_DEPTH;
    this.#repost();
  }

  get failed(): boolean {
    return this.#failed !== null;
  }

  /** Why the endpoint failed (a completion status name, a post error, "closed"...), or null. */
  get failureReason(): string | null {
    return this.#failed;
  }

  /** True once the peer's segment and jetty are imported. */
  get connected(): boolean {
    return this.#peerJetty !== null;
  }

  /** The objects this endpoint owns (tests, doctor). */
  get parts(): Readonly<UrmaEndpointParts> {
    return this.#p;
  }

  /** @internal control path: the peer's segment and jetty, imported in that order. */
  attachPeer(seg: ImportedSegment, jetty: TargetJetty): void {
    this.#peerSeg = seg;
    this.#peerJetty = jetty;
    this.#creditsDirty = true;
  }

  /** @internal the handshake proof the peer sent (server side), once reaped. */
  takeProof(): ReceivedProof | null {
    if (this.#proof === null && !this.#closed) this.#reap();
    return this.#proof;
  }

  // ---- posting ----

  #usable(): number {
    return this.#failed !== null || this.#peerJetty === null ? FAILED : OK;
  }

  /** Makes room for one request (batch, send queue, JFC, caller CQ); posts and reaps as needed. */
  #room(userSig: boolean): number {
    if (this.#sb.length >= BATCH_WR) this.#post();
    if (this.#posted - this.#done >= SQ_DEPTH - 2 || this.#fCount >= SIGNALED_BUDGET) {
      this.#drain(false);
    }
    if (this.#posted - this.#done >= SQ_DEPTH - 2 || this.#fCount >= SIGNALED_BUDGET) {
      return this.#usable() || FULL;
    }
    if (userSig && this.#uc.length + this.#fUserCount >= USER_CQ) return this.#usable() || FULL;
    return this.#usable();
  }

  /** Posts the batch and reaps until `bytes` of bounce fit (or the queue drained). */
  #drain(untilEmpty: boolean): void {
    this.#post();
    for (let spin = 0; spin < 200_000 && this.#fCount > 0 && this.#failed === null; spin++) {
      this.#reap();
      if (
        !untilEmpty && this.#posted - this.#done < SQ_DEPTH / 2 &&
        this.#fCount < SIGNALED_BUDGET / 2
      ) return;
    }
  }

  /** Bounce offset (inside aux) for `n` bytes (8-aligned), or -1. */
  #alloc(n: number): number {
    const S = this.#bSize;
    n = (n + 7) & ~7;
    for (let attempt = 0; attempt < 2; attempt++) {
      let pos = this.#bHead, off = pos % S;
      if (off + n > S) pos += S - off, off = 0;
      if (pos + n - this.#bTail <= S) {
        this.#bytesSinceSig += pos + n - this.#bHead;
        this.#bHead = pos + n;
        return AUX_BOUNCE + off;
      }
      this.#drain(true);
    }
    return -1;
  }

  /** Flags of the next request; records it (signaled ones in the FIFO). */
  #account(userSig: boolean, wrId: number, flags: number): number {
    this.#posted++;
    if (!userSig && ++this.#sinceSig < SIGNAL_EVERY && this.#bytesSinceSig < this.#bSize / 4) {
      return flags;
    }
    const i = (this.#fHead + this.#fCount) % SQ_DEPTH;
    this.#fSeq[i] = this.#posted;
    this.#fBounce[i] = this.#bHead;
    this.#fWr[i] = wrId;
    this.#fUser[i] = userSig ? 1 : 0;
    this.#fCount++;
    if (userSig) this.#fUserCount++;
    this.#sinceSig = 0;
    this.#bytesSinceSig = 0;
    return flags | C;
  }

  #synthetic(wrId: number, flags: number): number {
    if ((flags & SIGNALED) !== 0) this.#pushUser(wrId, 0);
    return OK;
  }

  #pushUser(wrId: number, status: number): void {
    this.#uc.push(wrId, status);
  }

  /** One WRITE of aux[at, +n) to the peer at `remoteOff` (bounds already checked). */
  #writeBounced(
    wrId: number,
    remoteOff: number,
    at: number,
    n: number,
    userSig: boolean,
    flags: number,
    imm: number,
  ): void {
    const f = this.#account(userSig, wrId, flags);
    const sb = this.#sb, seg = this.#peerSeg!;
    sb.sge(this.#auxSeg, this.#auxAddr + at, n);
    const dst = seg.address + remoteOff + this.#skew, ctx = userSig ? wrId : INTERNAL_WR;
    if (imm < 0) sb.write(this.#peerJetty!, seg, dst, ctx, f);
    else sb.writeImm(this.#peerJetty!, seg, dst, imm, ctx, f);
  }

  write(wrId: number, remoteOff: number, src: Uint8Array, flags: number): number {
    const n = src.length, sig = (flags & SIGNALED) !== 0;
    if (remoteOff < 0 || remoteOff + n > this.remoteSize) return FAILED;
    if (n === 0) return this.#usable() || this.#synthetic(wrId, flags);
    const chunk = this.#bSize >> 2;
    for (let done = 0; done < n; done += chunk) {
      const len = Math.min(chunk, n - done), last = done + len >= n;
      const st = this.#room(sig && last);
      if (st !== OK) return st;
      const at = this.#alloc(len);
      if (at < 0) return this.#usable() || FULL;
      this.#aux.set(done === 0 && last ? src : src.subarray(done, done + len), at);
      this.#writeBounced(wrId, remoteOff + done, at, len, sig && last, 0, -1);
    }
    return OK;
  }

  writeSg(
    wrId: number,
    remoteOff: number,
    sg: readonly Uint8Array[],
    count: number,
    flags: number,
  ): number {
    let total = 0;
    for (let i = 0; i < count; i++) {
      const v = sg[i], off = v.byteOffset - this.local.byteOffset;
      if (v.buffer !== this.#memBuffer || off < 0 || off + v.length > this.local.length) {
        return FAILED;
      }
      total += v.length;
    }
    if (remoteOff < 0 || remoteOff + total > this.remoteSize) return FAILED;
    if (total === 0) return this.#usable() || this.#synthetic(wrId, flags);
    const sig = (flags & SIGNALED) !== 0, sb = this.#sb;
    let i = 0, at = remoteOff;
    while (i < count) {
      const end = Math.min(count, i + SGE_PER_WR), last = end >= count;
      const st = this.#room(sig && last);
      if (st !== OK) return st;
      const f = this.#account(sig && last, wrId, 0);
      let len = 0;
      for (; i < end; i++) {
        const v = sg[i];
        if (v.length === 0) continue;
        sb.sge(this.#regionSeg, this.#regionAddr + v.byteOffset - this.local.byteOffset, v.length);
        len += v.length;
      }
      const seg = this.#peerSeg!;
      sb.write(
        this.#peerJetty!,
        seg,
        seg.address + at + this.#skew,
        sig && last ? wrId : INTERNAL_WR,
        f,
      );
      at += len;
    }
    return OK;
  }

  writeU32(wrId: number, remoteOff: number, value: number, flags: number): number {
    if (remoteOff < 0 || remoteOff + 4 > this.remoteSize || (remoteOff & 3) !== 0) return FAILED;
    const sig = (flags & SIGNALED) !== 0;
    const st = this.#room(sig);
    if (st !== OK) return st;
    const at = this.#alloc(4);
    if (at < 0) return this.#usable() || FULL;
    this.#auxU32[at >> 2] = value >>> 0;
    this.#writeBounced(wrId, remoteOff, at, 4, sig, FENCE, -1);
    return OK;
  }

  read(wrId: number, dst: Uint8Array, remoteOff: number, flags: number): number {
    const off = dst.byteOffset - this.local.byteOffset;
    if (dst.buffer !== this.#memBuffer || off < 0 || off + dst.length > this.local.length) {
      return FAILED;
    }
    if (remoteOff < 0 || remoteOff + dst.length > this.remoteSize) return FAILED;
    if (dst.length === 0) return this.#usable() || this.#synthetic(wrId, flags);
    const sig = (flags & SIGNALED) !== 0;
    const st = this.#room(sig);
    if (st !== OK) return st;
    const f = this.#account(sig, wrId, 0);
    const sb = this.#sb, seg = this.#peerSeg!;
    sb.sge(this.#regionSeg, this.#regionAddr + off, dst.length);
    sb.read(
      this.#peerJetty!,
      seg,
      seg.address + remoteOff + this.#skew,
      sig ? wrId : INTERNAL_WR,
      f,
    );
    return OK;
  }

  flush(): void {
    this.#post();
  }

  #post(): void {
    const sb = this.#sb;
    if (sb.length === 0) return;
    const rc = this.#failed === null ? sb.post(this.#jetty) : 0;
    sb.reset();
    if (rc !== 0) this.fail(`urma_post_jetty_send_wr: ${statusName(rc)} (${this.#u.lastError()})`);
  }

  // ---- completions ----

  #reap(): void {
    const cr = this.#cr;
    for (;;) {
      let n: number;
      try {
        n = this.#jfc.poll(cr);
      } catch (e) {
        this.fail((e as Error).message);
        return;
      }
      for (let i = 0; i < n; i++) {
        if (cr.isRecv(i)) this.#onRecv(i);
        else this.#onSend(i);
      }
      if (n < cr.max) break;
    }
    if (this.#recvPending >= REPOST_BATCH) this.#repost();
  }

  #onSend(i: number): void {
    const cr = this.#cr, st = cr.status(i);
    if (st !== 0) {
      const h = this.#fHead, ctx = cr.userCtx(i);
      if (this.#fCount > 0 && this.#fUser[h] === 1 && this.#fWr[h] === ctx) {
        this.#pushUser(ctx, st);
        this.#popFifo();
      }
      if (!this.#closed) {
        this.fail(`${crStatusName(st)}${ctx === INTERNAL_WR ? "" : ` (request ${ctx})`}`);
      }
      return;
    }
    if (this.#fCount === 0) return;
    const h = this.#fHead;
    this.#done = this.#fSeq[h];
    this.#bTail = this.#fBounce[h];
    if (this.#fUser[h] === 1) this.#pushUser(this.#fWr[h], 0);
    this.#popFifo();
  }

  #popFifo(): void {
    if (this.#fUser[this.#fHead] === 1) this.#fUserCount--;
    this.#fHead = (this.#fHead + 1) % SQ_DEPTH;
    this.#fCount--;
  }

  #onRecv(i: number): void {
    const cr = this.#cr, st = cr.status(i);
    this.#recvPending++;
    if (st !== 0) {
      if (!this.#closed) this.fail(`receive completed with ${crStatusName(st)}`);
      return;
    }
    if (
      this.#proof === null && cr.opcode(i) === URMA_CR_OPC.SEND_WITH_IMM && cr.imm(i) === PROOF_IMM
    ) {
      const len = Math.min(cr.completionLen(i), AUX_RECV_LEN);
      this.#proof = {
        bytes: this.#aux.slice(AUX_RECV, AUX_RECV + len),
        length: cr.completionLen(i),
        uasid: cr.remoteUasid(i),
        id: cr.remoteId(i),
      };
    }
  }

  /** Reposts every consumed receive (all share the receive buffer). */
  #repost(): void {
    const m = this.#recvPending;
    if (m === 0 || this.#closed) return;
    const rb = this.#rb;
    rb.reset();
    for (let k = 0; k < m; k++) rb.recv(this.#auxSeg, this.#auxAddr + AUX_RECV, AUX_RECV_LEN, 0);
    const rc = rb.post(this.#jetty);
    this.#recvPending = 0;
    if (rc !== 0) {
      return this.fail(`urma_post_jetty_recv_wr: ${statusName(rc)} (${this.#u.lastError()})`);
    }
    this.#recvPosted = (this.#recvPosted + m) >>> 0;
    this.#creditsDirty = true;
  }

  /** Publishes my receive total into the peer's fabric page (its credits to notify me). */
  #publishCredits(): void {
    if (!this.#creditsDirty || this.#usable() !== OK) return;
    if (this.#room(false) !== OK) return;
    const at = this.#alloc(4);
    if (at < 0) return;
    this.#creditsDirty = false;
    this.#auxU32[at >> 2] = this.#recvPosted;
    this.#writeBounced(INTERNAL_WR, this.remoteSize, at, 4, false, 0, -1);
    this.#post();
  }

  poll(out: Completions): number {
    if (!this.#closed) {
      this.#reap();
      this.#publishCredits();
    }
    return this.#uc.drainInto(out);
  }

  statusText(status: number): string {
    return status === 0 ? "success" : crStatusName(status);
  }

  // ---- doorbell ----

  doorbell(): number {
    if (this.#closed) return 0;
    const v = Atomics.load(this.#localI32, FABRIC_HEADER.doorbell >> 2);
    if (((v - this.#recvMark) >>> 0) >= REAP_AFTER_KICKS) {
      this.#recvMark = v;
      this.#reap();
      this.#publishCredits();
    }
    return v;
  }

  kick(): void {
    if (this.#closed || this.#usable() !== OK || this.#room(false) !== OK) return;
    const at = this.#alloc(4);
    if (at < 0) return;
    this.#kicks = (this.#kicks + 1) >>> 0;
    this.#auxU32[at >> 2] = this.#kicks;
    const granted = Atomics.load(this.#fabricI32, 0) >>> 0 || RECV_DEPTH;
    const credit = ((granted - this.#notified) | 0) > 0;
    if (credit) this.#notified = (this.#notified + 1) >>> 0;
    this.#writeBounced(
      INTERNAL_WR,
      FABRIC_HEADER.doorbell,
      at,
      4,
      false,
      FENCE,
      credit ? this.#kicks : -1,
    );
    this.#post();
    this.#reap();
  }

  /** @internal the handshake proof: SEND_IMM of `payload` (≤ 64 B); resolves its completion status. */
  sendProof(payload: Uint8Array): number {
    if (this.#usable() !== OK) return -1;
    this.#aux.set(payload.subarray(0, PROOF_BYTES), AUX_PROOF);
    const f = this.#account(true, PROOF_WR, 0);
    this.#sb.sge(this.#auxSeg, this.#auxAddr + AUX_PROOF, Math.min(payload.length, PROOF_BYTES));
    this.#sb.send(this.#peerJetty!, PROOF_IMM, PROOF_WR, f);
    this.#notified = (this.#notified + 1) >>> 0;
    this.#post();
    for (let spin = 0; spin < 1_000_000; spin++) {
      this.#reap();
      if (this.#uc.length > 0 && this.#uc.peekWrId() === PROOF_WR) { // the first signaled request
        const st = this.#uc.peekStatus();
        this.#uc.shift();
        return st;
      }
      if (this.#failed !== null && this.#fUserCount === 0) return -1;
    }
    return -1;
  }

  waitInbound(seen: number, timeoutMs: number): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    if (this.#waiting) return this.#waiting;
    // #wait may finish synchronously: clear the marker (and release after a close) only once
    // `p` settled, so it never outlives its wait.
    const p: Promise<boolean> = this.#wait(seen, timeoutMs).finally(() => {
      if (this.#waiting === p) this.#waiting = null;
      if (this.#closed) this.#release();
    });
    this.#waiting = p;
    return p;
  }

  async #wait(seen: number, timeoutMs: number): Promise<boolean> {
    const words = this.#localI32, S = FABRIC_HEADER.sleeping >> 2, D = FABRIC_HEADER.doorbell >> 2;
    Atomics.store(words, S, 1);
    try {
      if (Atomics.load(words, D) !== seen) return true;
      // Reap, repost every receive and publish the credits BEFORE arming: a peer that sees no
      // credit never needs to wake me, because I only sleep after publishing.
      this.#reap();
      this.#recvMark = Atomics.load(words, D);
      if (this.#recvPending > 0) this.#repost();
      this.#publishCredits();
      this.#jfc.rearm();
      if (Atomics.load(words, D) !== seen) return true;
      const n = await this.#p.jfce.wait(timeoutMs);
      return n > 0 || (!this.#closed && Atomics.load(words, D) !== seen);
    } catch {
      return false;
    } finally {
      if (!this.#closed) Atomics.store(words, S, 0);
    }
  }

  fail(reason: string): void {
    this.#failed ??= reason;
  }

  /** Test / fault injection: "token" re-imports the peer's segment with a wrong token; "bounds" aims past its end. */
  injectFault(kind: "token" | "bounds"): void {
    const seg = this.#peerSeg;
    if (seg === null) return;
    if (kind === "bounds") this.#skew = this.remoteSize + FABRIC_PAGE;
    else {this.#peerSeg = this.#p.ctx.importSegment(
        seg.descriptorBytes,
        (seg.token ^ 0x5a5a5a5a) >>> 0,
      );}
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#failed ??= "closed";
    if (this.#waiting) this.#selfWake(); // the waiter releases everything when it returns
    else this.#release();
  }

  /** Wakes my own pending wait: a zero-length SEND_IMM to my own jetty (RM only; RC waits time out). */
  #selfWake(): void {
    if (this.#p.rc) return;
    try {
      const ctx = this.#p.ctx;
      ctx.importSegment(this.#auxSeg.descriptor, this.#auxSeg.token);
      const me = ctx.importJetty(this.#jetty.address, this.#regionSeg.token);
      const b = new UrmaSendBatch(this.#u, 1, 1);
      b.send(me, 0, INTERNAL_WR, 0);
      b.post(this.#jetty);
    } catch { /* the wait ends at its timeout */ }
  }

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    try {
      this.#p.ctx.close();
    } catch { /* every child is closed first; a failing delete leaves nothing we can do */ }
  }
}
