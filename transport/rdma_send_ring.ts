/**
 * The one send-side engine of the RDMA fabrics (verbs, URMA): the accounting behind a send
 * queue whose work requests complete in posting order. It knows nothing of any fabric: the
 * fabric encodes its own work requests and plugs in how to post them and how to reap their
 * completions ({@link RdmaSendPort}); the engine decides which requests are signaled, when
 * there is room, and which caller completions come out of `drainInto()`.
 *
 * - Credits: at most `depth` requests are outstanding (posted or batched, not yet retired).
 * - Bounce ring: a fabric copies sources that are not in its registered region into a ring of
 *   `bounceBytes` bytes ({@link RdmaSendRing.reserve}); a copy lives until a signaled request at
 *   or after it completes.
 * - Signaling: a request is signaled when its caller asked for a completion, every
 *   `signalEvery`-th request, and whenever `signalBounceBytes` of the bounce ring were used since
 *   the last signal — so credits and bounce space always come back. Signaled requests wait in a
 *   FIFO (sequence, bounce end, caller wr_id, reported-or-internal).
 * - In-order retirement: a completed signaled request retires every request up to it (its
 *   credits and bounce bytes return). Fabrics whose completions name the request's sequence
 *   call {@link RdmaSendRing.retireThrough}; those that only know "the oldest signaled one
 *   completed" call {@link RdmaSendRing.retireOldest}.
 * - Caller completions (and synthesized ones, e.g. of zero-length work) queue in a
 *   {@link CompletionRing}; a request that wants one is refused (FULL) while that ring could
 *   overflow.
 *
 * Use, per work request: `reserve(bytes, report)` (room: credit, bounce bytes, caller ring) →
 * the fabric encodes the request with sequence `nextSeq`, signaling it when
 * `record(wrId, report, signal)` says so → `post()` rings the doorbell for the batch. Nothing here
 * allocates after construction. Owned by one endpoint; one JS thread.
 * @module
 */
import { CompletionRing } from "./completion_ring.ts";
import type { Completions } from "./fabric.ts";

/** `reserve()` found no room (no credit, no bounce space, or a full caller ring): poll and retry. */
export const RING_FULL = -1;

/** What a fabric plugs into the engine. Called from the engine's JS thread only. */
export interface RdmaSendPort {
  /** Posts every work request encoded since the last call, with one doorbell. */
  postBatch(): void;
  /**
   * Reaps send completions, calling `retireThrough` / `retireOldest` of the ring for each;
   * returns how many completions were reaped.
   */
  reapCompletions(): number;
  /** False once the endpoint failed or closed: waiting for room is pointless then. */
  readonly usable: boolean;
}

/** The shape of one send ring. */
export interface RdmaSendRingShape {
  /** Most requests outstanding at once (send queue credits). */
  readonly depth: number;
  /** Bytes of the bounce ring (0: the fabric never bounces). */
  readonly bounceBytes: number;
  /** Bounce reservations are rounded up to this (a power of two). */
  readonly bounceAlign: number;
  /** Signal one request in this many (at least). */
  readonly signalEvery: number;
  /** Signal once this many bounce bytes were used since the last signal. */
  readonly signalBounceBytes: number;
  /** Capacity of the caller completion ring. */
  readonly callerCompletions: number;
  /** Most signaled requests in flight (a completion queue budget); default `depth`. */
  readonly signaledBudget?: number;
  /** How long `reserve()` keeps reaping when there is no room before it says FULL. */
  readonly fullWaitMs: number;
}

/** Counters of one ring (tests, stats). */
export interface RdmaSendCounters {
  posts: number;
  requests: number;
  signaled: number;
  fullSpins: number;
}

/** The send-side accounting of one endpoint. */
export class RdmaSendRing {
  /** Counters (tests, stats). */
  readonly counters: RdmaSendCounters = { posts: 0, requests: 0, signaled: 0, fullSpins: 0 };
  readonly #port: RdmaSendPort;
  readonly #depth: number;
  readonly #bounceBytes: number;
  readonly #alignMask: number;
  readonly #signalEvery: number;
  readonly #signalBounceBytes: number;
  readonly #signaledBudget: number;
  readonly #fullWaitMs: number;
  readonly #completions: CompletionRing;
  // signaled requests in flight, in posting order
  readonly #signaledSeq: Float64Array;
  readonly #signaledBounceEnd: Float64Array;
  readonly #signaledWrId: Float64Array;
  readonly #signaledReported: Uint8Array;
  #signaledHead = 0;
  #signaledCount = 0;
  #reportedInFlight = 0;
  // request sequence numbers: next to encode, first not yet posted, first not yet retired
  #nextSeq = 0;
  #postedSeq = 0;
  #retiredSeq = 0;
  #sinceSignal = 0;
  // bounce ring (absolute positions; offsets are positions modulo its size)
  #bounceHead = 0;
  #bounceTail = 0;
  #bounceAtSignal = 0;

  constructor(port: RdmaSendPort, shape: RdmaSendRingShape) {
    this.#port = port;
    this.#depth = shape.depth;
    this.#bounceBytes = shape.bounceBytes;
    this.#alignMask = shape.bounceAlign - 1;
    this.#signalEvery = Math.max(1, Math.min(shape.signalEvery, shape.depth));
    this.#signalBounceBytes = Math.max(1, shape.signalBounceBytes);
    this.#signaledBudget = Math.min(shape.signaledBudget ?? shape.depth, shape.depth);
    this.#fullWaitMs = shape.fullWaitMs;
    this.#completions = new CompletionRing(shape.callerCompletions);
    this.#signaledSeq = new Float64Array(shape.depth);
    this.#signaledBounceEnd = new Float64Array(shape.depth);
    this.#signaledWrId = new Float64Array(shape.depth);
    this.#signaledReported = new Uint8Array(shape.depth);
  }

  /** Largest single bounce copy. */
  get maxBounce(): number {
    return this.#bounceBytes >> 1;
  }

  /** Sequence number the next request gets. */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  /** Requests encoded and not yet posted. */
  get unposted(): number {
    return this.#nextSeq - this.#postedSeq;
  }

  /** True when requests are encoded or posted and not all retired. */
  get outstanding(): boolean {
    return this.#nextSeq > this.#retiredSeq;
  }

  /** True once every request up to `seq` retired. */
  completed(seq: number): boolean {
    return this.#retiredSeq > seq;
  }

  /** True when a posted signaled request has not completed yet (worth reaping for). */
  get awaitingSignal(): boolean {
    return this.#signaledCount > 0 && this.#signaledSeq[this.#signaledHead] < this.#postedSeq;
  }

  /** True when posted requests have not all retired (reaping may find completions). */
  get awaitingCompletions(): boolean {
    return this.#retiredSeq < this.#postedSeq;
  }

  /** Caller completions waiting for `drainInto()`. */
  get pendingCompletions(): number {
    return this.#completions.length;
  }

  #hasRoom(bytes: number, report: boolean): number {
    if (
      this.#nextSeq - this.#retiredSeq >= this.#depth ||
      this.#signaledCount >= this.#signaledBudget ||
      (report && this.#completions.length + this.#reportedInFlight >= this.#completions.capacity)
    ) return RING_FULL;
    if (bytes === 0) return 0;
    let pos = this.#bounceHead;
    const at = pos % this.#bounceBytes;
    if (at + bytes > this.#bounceBytes) pos += this.#bounceBytes - at;
    if (pos + bytes - this.#bounceTail > this.#bounceBytes) return RING_FULL;
    this.#bounceHead = pos + bytes;
    return pos % this.#bounceBytes;
  }

  /**
   * Room for one request: a credit, `bytes` of bounce ring (returns their offset; 0 when `bytes`
   * is 0) and, when `report`, a place in the caller ring. With no room it posts the batch and
   * reaps until there is room, for up to `fullWaitMs`, then says {@link RING_FULL}; it says so
   * at once when no signaled request is in flight (no completion can come to make room: only
   * the caller's `drainInto()` can then). `bytes` ≤ {@link maxBounce}.
   */
  reserve(bytes: number, report: boolean): number {
    const need = (bytes + this.#alignMask) & ~this.#alignMask;
    let at = this.#hasRoom(need, report);
    if (at !== RING_FULL) return at;
    this.counters.fullSpins++;
    this.post();
    this.reap();
    const deadline = performance.now() + this.#fullWaitMs;
    for (;;) {
      at = this.#hasRoom(need, report);
      if (
        at !== RING_FULL || !this.#port.usable || !this.awaitingSignal ||
        performance.now() > deadline
      ) return at;
      this.reap();
    }
  }

  /**
   * Accounts the request being encoded (sequence `nextSeq`); returns true when it must be
   * signaled. `report`: the caller wants its completion, under `wrId`; `signal`: signal it
   * anyway (the fabric waits for it, e.g. a handshake read or a closing marker).
   */
  record(wrId: number, report: boolean, signal = false): boolean {
    const seq = this.#nextSeq++;
    signal ||= report || ++this.#sinceSignal >= this.#signalEvery ||
      this.#bounceHead - this.#bounceAtSignal >= this.#signalBounceBytes;
    if (!signal) return false;
    const i = (this.#signaledHead + this.#signaledCount) % this.#depth;
    this.#signaledSeq[i] = seq;
    this.#signaledBounceEnd[i] = this.#bounceHead;
    this.#signaledWrId[i] = wrId;
    this.#signaledReported[i] = report ? 1 : 0;
    this.#signaledCount++;
    if (report) this.#reportedInFlight++;
    this.#sinceSignal = 0;
    this.#bounceAtSignal = this.#bounceHead;
    this.counters.signaled++;
    return true;
  }

  /** Posts the encoded batch (one doorbell). */
  post(): void {
    const n = this.#nextSeq - this.#postedSeq;
    if (n === 0) return;
    this.#postedSeq = this.#nextSeq;
    this.counters.posts++;
    this.counters.requests += n;
    this.#port.postBatch();
  }

  /** Reaps completions when posted requests are outstanding; returns how many were reaped. */
  reap(): number {
    return this.#retiredSeq < this.#postedSeq ? this.#port.reapCompletions() : 0;
  }

  #retireHead(status: number): void {
    const h = this.#signaledHead;
    const seq = this.#signaledSeq[h];
    if (seq + 1 > this.#retiredSeq) {
      this.#retiredSeq = seq + 1;
      this.#bounceTail = this.#signaledBounceEnd[h];
    }
    if (this.#signaledReported[h] === 1) {
      this.#reportedInFlight--;
      this.#completions.push(this.#signaledWrId[h], status);
    }
    this.#signaledHead = (h + 1) % this.#depth;
    this.#signaledCount--;
  }

  /**
   * The request `seq` completed with `status`: retires it and every request before it (signaled
   * ones still waiting report `status` too). An unsignaled request's completion (an error, or a
   * flushed request) retires the requests before it.
   */
  retireThrough(seq: number, status: number): void {
    while (this.#signaledCount > 0 && this.#signaledSeq[this.#signaledHead] <= seq) {
      this.#retireHead(status);
    }
    if (seq + 1 > this.#retiredSeq && seq < this.#nextSeq) this.#retiredSeq = seq + 1;
  }

  /**
   * The oldest signaled request completed with `status` (fabrics whose completions carry no
   * sequence). Returns its wr_id (the caller's, or the one given to `record`), or -1 when none
   * was waiting. `retire` false: only report it (an error completion), keep credits and bounce.
   */
  retireOldest(status: number, retire = true): number {
    if (this.#signaledCount === 0) return -1;
    const h = this.#signaledHead, wrId = this.#signaledWrId[h];
    if (retire) this.#retireHead(status);
    else {
      if (this.#signaledReported[h] === 1) {
        this.#reportedInFlight--;
        this.#completions.push(wrId, status);
      }
      this.#signaledHead = (h + 1) % this.#depth;
      this.#signaledCount--;
    }
    return wrId;
  }

  /** wr_id of the oldest signaled request (check `awaitingSignal` / `outstanding` first). */
  get oldestWrId(): number {
    return this.#signaledCount > 0 ? this.#signaledWrId[this.#signaledHead] : -1;
  }

  /** True when the oldest signaled request reports to the caller. */
  get oldestReported(): boolean {
    return this.#signaledCount > 0 && this.#signaledReported[this.#signaledHead] === 1;
  }

  /** Queues a caller completion that needs no request (zero-length work); false when full. */
  pushCompletion(wrId: number, status: number): boolean {
    return this.#completions.push(wrId, status);
  }

  /** Moves queued caller completions into `out`, oldest first; returns how many. */
  drainInto(out: Completions): number {
    return this.#completions.drainInto(out);
  }
}
