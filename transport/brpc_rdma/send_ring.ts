/**
 * {@link SendRing}: one brpc RDMA connection's registered send memory as a byte ring. Frames are
 * encoded straight into it (it is the output slab of the connection's `ConnBase`, see
 * {@link OutputRing}) and leave from where they lie, in pieces of at most one peer block; bytes
 * that were queued elsewhere (writes too big for the slab, output while the ring was full) are
 * copied into it piece by piece when they leave. A byte range is reused only once the send that
 * carried it completed: brpc signals every quarter window with `wr_id` = the data sends that
 * completion frees, so {@link SendRing.completed} frees the ring up to the end of the n-th oldest
 * send ({@link SendRing.posted} records each send's end, in posting order).
 * ```
 *   [ free | posted, in flight | queued, not posted | head → free ... ]   (wraps: a gap at the end)
 *          tail                                     head
 * ```
 * Allocation is in posting order (the connection queues nothing in the ring behind a chunk that
 * is not in it), so the tail only moves forward. Sizes: {@link sendRingBytes}.
 *
 * Buffer ownership: the ring's memory is the QP's (registered); bytes between tail and head
 * belong to the sends and the queue, the rest to whoever reserves it next.
 * Threading: one JS thread. Nothing allocated after construction.
 * @module
 */
import type { OutputRing } from "../tcp/conn_output.ts";
import { type BrpcHello, RESERVED_WRS } from "./hello.ts";
import { MAX_SEND_SLOT } from "./options.ts";

/** Largest reservation the connection's output makes in the ring (ConnBase's dedicated limit). */
export const RING_MAX_RESERVE = 64 * 1024;

/**
 * Bytes of the send ring for `slots` data sends in flight of at most `slotSize` bytes each:
 * room for all of them, plus the largest reservation (a wrap can waste up to that at the end),
 * plus two pieces — so a piece to copy always finds room while the send window is open.
 */
export function sendRingBytes(slots: number, slotSize: number): number {
  return slots * slotSize + RING_MAX_RESERVE + 2 * slotSize;
}

/** Bytes of each send for a peer: its block size, capped at {@link MAX_SEND_SLOT}. */
export function slotSizeFor(remote: BrpcHello): number {
  return Math.min(remote.blockSize, MAX_SEND_SLOT);
}

/**
 * Bytes of a QP's send region for a peer: the send ring for its SQ minus the WRs reserved for
 * ACKs, each at most one of the peer's blocks ({@link sendRingBytes}).
 */
export function sendBytesFor(qp: { sqSize: number }, remote: BrpcHello): number {
  return sendRingBytes(qp.sqSize - RESERVED_WRS, slotSizeFor(remote));
}

/** The byte ring over a connection's registered send region. */
export class SendRing implements OutputRing {
  /** The registered region (the QP's). */
  readonly buffer: Uint8Array;
  #head = 0;
  #tail = 0;
  /** Where the head wrapped to 0 (the bytes from here to the end are a gap), or -1. */
  #wrapAt = -1;
  /** End offset of each posted, not completed data send, in posting order (a FIFO). */
  readonly #ends: Int32Array;
  #first = 0;
  #count = 0;

  /** `maxInFlight`: data sends that may be in flight at once (the send window's capacity). */
  constructor(buffer: Uint8Array, maxInFlight: number) {
    this.buffer = buffer;
    this.#ends = new Int32Array(maxInFlight);
  }

  /** Offset of the next byte reserved. */
  get head(): number {
    return this.#head;
  }

  /** Bytes in use: posted and not completed, or queued (and the gap of a wrap). */
  get used(): number {
    return this.#wrapAt < 0
      ? this.#head - this.#tail
      : this.#wrapAt - this.#tail + this.#head + (this.buffer.length - this.#wrapAt);
  }

  /** Data sends posted and not completed. */
  get inFlight(): number {
    return this.#count;
  }

  /**
   * Offset of `n` contiguous free bytes, or -1 when there is no such room now. May wrap the head
   * to 0 (the caller seals what it had before the old head: the next bytes are not contiguous).
   * The bytes become used at {@link commit}; nothing else may touch the ring in between.
   */
  reserve(n: number): number {
    const size = this.buffer.length;
    if (this.#wrapAt >= 0) return this.#head + n <= this.#tail ? this.#head : -1;
    if (this.#head === this.#tail) {
      if (n > size) return -1;
      if (this.#head + n > size) this.#head = this.#tail = 0; // empty: restart at 0
      return this.#head;
    }
    if (this.#head + n <= size) return this.#head;
    if (n > this.#tail) return -1;
    this.#wrapAt = this.#head;
    this.#head = 0;
    return 0;
  }

  /** Marks `n` bytes from the last {@link reserve}'s offset used. */
  commit(n: number): void {
    this.#head += n;
  }

  /** Records a data send posted from the ring, ending at offset `end` (exclusive). */
  posted(end: number): void {
    const ends = this.#ends;
    if (this.#count === ends.length) {
      throw new Error(`send ring: more than ${ends.length} sends in flight`);
    }
    let i = this.#first + this.#count++;
    if (i >= ends.length) i -= ends.length;
    ends[i] = end;
  }

  /**
   * A signalled completion freed the `n` oldest data sends: the ring is free up to the end of
   * the last of them. Returns false when fewer than `n` are in flight (the caller fails).
   */
  completed(n: number): boolean {
    if (n > this.#count) return false;
    if (n === 0) return true;
    const ends = this.#ends;
    let last = this.#first + n - 1;
    if (last >= ends.length) last -= ends.length;
    const end = ends[last];
    this.#first = last + 1 === ends.length ? 0 : last + 1;
    this.#count -= n;
    // An end at or before the head while wrapped lies in the second lap: the gap is passed.
    if (this.#wrapAt >= 0 && end <= this.#head) this.#wrapAt = -1;
    this.#tail = end;
    if (this.#wrapAt >= 0 && this.#tail === this.#wrapAt) {
      this.#wrapAt = -1;
      this.#tail = 0;
    }
    return true;
  }
}
