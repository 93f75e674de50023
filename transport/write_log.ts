/**
 * The write log: small one-sided writes gathered into batches that the receiver applies, so a
 * window of calls costs one RDMA work request per flush instead of three per call (payload,
 * descriptor body, state word). On an emulated or busy fabric every work request and every
 * packet costs tens of µs (bench/vm/wr_cost.sh); bytes barely count.
 *
 * The receiver's registered region, as the sender reaches it:
 * ```
 *  0            S                              S + L        S + L + LOG_TAIL_BYTES
 *  ├ rpc region ┼ inbound log (L bytes) ────────┼ ack word ──┤
 *    records     batches, one WRITE_WITH_IMM      u32: bytes of the RECEIVER's outbound log
 *    land here   each; never straddle L           that this side applied (written by the peer)
 *
 *  batch at p (p = where the previous one ended, or 0 after a wrap; 8-aligned):
 *   0 seq u32 (1, 2, … per direction) | 4 bytes u32 (whole batch, multiple of 8) | 8 count u32 | 12 0
 *  16 record: 0 off u32 | 4 len u32 | 8 len bytes for rpc[off, off + len) | pad to 8 | next record…
 * ```
 * Publication: the whole batch is one RDMA WRITE_WITH_IMM, so its bytes are in place when its
 * receive completes; the receiver then copies the records, in order, into its rpc region. A
 * writer that writes a body and then its state word in two records therefore still publishes
 * state-last. A batch that would cross the log's end starts at 0 instead (the bytes skipped are
 * "waste", counted as used by both sides); the receiver looks for the next sequence number where
 * the previous batch ended, then at 0.
 *
 * Flow control: the sender counts every byte it used (waste included); the receiver counts every
 * byte it applied and writes that count into the sender's ack word (a plain RDMA WRITE, no
 * receive consumed) once it moved by a quarter of the log. The sender's room is L minus
 * (used − acked); no room is {@link LOG_FULL}, never an overwrite.
 *
 * A peer is not trusted: every batch header and record is bounds-checked (records only ever
 * land in [0, S)); a bad batch is an error string that fails the session, never the process.
 *
 * Pure TypeScript, fabric-neutral; the data path allocates nothing. Each object belongs to its
 * endpoint's JS thread. The outbox and the region belong to the endpoint that owns this log.
 * @module
 */

/** Bytes of a batch header. */
export const LOG_HEADER_BYTES = 16;
/** Bytes of a record header. */
export const LOG_RECORD_HEADER_BYTES = 8;
/** Bytes after the log in the receiver's region: the ack word and padding. */
export const LOG_TAIL_BYTES = 64;
/** `reserve()`: no room until the peer acknowledges what it applied. */
export const LOG_FULL = -1;
/** `reserve()`: the current batch must be sealed and posted first (it is full or at the log's end). */
export const LOG_SEAL_FIRST = -2;

const H_SEQ = 0, H_BYTES = 4, H_COUNT = 8;

function align8(n: number): number {
  return (n + 7) & ~7;
}

/** Checks a log size: a multiple of 4 KiB between 16 KiB and 64 MiB. Returns why not, or null. */
export function logSizeProblem(bytes: number): string | null {
  if (!Number.isInteger(bytes) || bytes < 16384 || bytes > 64 << 20 || bytes % 4096 !== 0) {
    return `write-log size ${bytes} must be a multiple of 4096 between 16384 and ${64 << 20}`;
  }
  return null;
}

/**
 * The sending side: builds batches in the outbox (a local mirror of the peer's log, registered
 * by the owner so the batch can be posted from it) and keeps the flow-control count.
 */
export class LogWriter {
  /** The outbox: batch bytes at the same offsets they take in the peer's log. */
  readonly outbox: Uint8Array;
  readonly #out32: Uint32Array;
  readonly #ack: Int32Array;
  readonly #ackIndex: number;
  /** Where the open batch starts, and the end of its last record's bytes (unpadded). */
  #start = 0;
  #end = LOG_HEADER_BYTES;
  #count = 0;
  /** Remote offset where the last record's bytes end (a write there extends it), or -1. */
  #lastRemoteEnd = -1;
  /** Index (in u32) of the last record's len field. */
  #lastLenAt = 0;
  /** Bytes used through the last sealed batch, waste included (u32 counter). */
  #used = 0;
  /** The last acknowledged count read from the ack word. */
  #acked = 0;
  #seq = 0;
  /** Offset of the batch `seal()` returned last. */
  sealedAt = 0;

  /** Bytes of the peer's log (= of the outbox). */
  readonly size: number;

  /**
   * `outbox`: as many bytes as the peer's log, 8-aligned (registered by the owner; zeroed).
   * `maxBatch`: most bytes per batch. `ackWord`: an Int32Array over this side's region and the
   * index of the ack word in it.
   */
  constructor(
    outbox: Uint8Array,
    readonly maxBatch: number,
    ackWord: Int32Array,
    ackIndex: number,
  ) {
    const size = outbox.length, why = logSizeProblem(size);
    if (why) throw new RangeError(why);
    if (outbox.byteOffset % 8 !== 0) throw new RangeError("the write-log outbox must be 8-aligned");
    this.size = size;
    if (maxBatch < 256 || maxBatch > size / 2 || maxBatch % 8 !== 0) {
      throw new RangeError(
        `write-log batch limit ${maxBatch} must be a multiple of 8 in [256, ${size / 2}]`,
      );
    }
    this.outbox = outbox;
    this.#out32 = new Uint32Array(outbox.buffer, outbox.byteOffset, size >> 2);
    this.#ack = ackWord;
    this.#ackIndex = ackIndex;
  }

  /** Records in the open batch. */
  get pending(): number {
    return this.#count;
  }

  /** Bytes used and not yet acknowledged (waste included): what the peer has not applied. */
  get unacked(): number {
    this.#refreshAck();
    return (this.#used - this.#acked) >>> 0;
  }

  /** Refreshes the acknowledged count from the ack word (the peer's NIC writes it). */
  #refreshAck(): void {
    this.#acked = Atomics.load(this.#ack, this.#ackIndex) >>> 0;
  }

  /** Moves the open (empty) batch to offset 0; the rest of this lap counts as used (waste). */
  #wrap(): void {
    this.#used = (this.#used + this.size - this.#start) >>> 0;
    this.#start = 0;
  }

  #fits(batchEnd: number): boolean {
    const need = align8(batchEnd) - this.#start;
    if (((this.#used - this.#acked) >>> 0) + need <= this.size) return true;
    this.#refreshAck();
    return ((this.#used - this.#acked) >>> 0) + need <= this.size;
  }

  /**
   * Room for `len` bytes destined to the peer's rpc region at `remoteOff`: returns where in the
   * outbox to copy them (then they are part of the open batch), {@link LOG_SEAL_FIRST} (seal and
   * post the open batch, then ask again) or {@link LOG_FULL}. `len` must be ≤ maxBatch / 2.
   */
  reserve(remoteOff: number, len: number): number {
    if (this.#count > 0 && remoteOff === this.#lastRemoteEnd) { // extends the last record
      const end = this.#end + len;
      if (end - this.#start > this.maxBatch || align8(end) > this.size) return LOG_SEAL_FIRST;
      if (!this.#fits(end)) return LOG_FULL;
      this.#out32[this.#lastLenAt] += len;
      this.#lastRemoteEnd += len;
      this.#end = end;
      return end - len;
    }
    let rec = align8(this.#end), end = rec + LOG_RECORD_HEADER_BYTES + len;
    if (end - this.#start > this.maxBatch || align8(end) > this.size) {
      if (this.#count > 0) return LOG_SEAL_FIRST;
      // An empty batch at the log's end: start it at 0 (the rest of the lap is waste).
      this.#wrap();
      this.#end = LOG_HEADER_BYTES;
      rec = LOG_HEADER_BYTES;
      end = rec + LOG_RECORD_HEADER_BYTES + len;
    }
    if (!this.#fits(end)) return LOG_FULL;
    const w = rec >> 2;
    this.#out32[w] = remoteOff;
    this.#out32[w + 1] = len;
    this.#lastLenAt = w + 1;
    this.#lastRemoteEnd = remoteOff + len;
    this.#end = end;
    this.#count++;
    return end - len;
  }

  /**
   * Closes the open batch: writes its header and returns its length in bytes (its offset is
   * {@link sealedAt}) — post outbox[sealedAt, +length) to the peer's log at the same offset as
   * one write with an immediate. `empty`: seal a batch of no records too (a bare kick). Returns
   * 0 when there is nothing to seal (or no room for an empty batch: the peer has batches
   * of ours to apply, which wake it anyway).
   */
  seal(empty: boolean): number {
    if (this.#count === 0) {
      if (!empty) return 0;
      if (this.#start + LOG_HEADER_BYTES > this.size) this.#wrap();
      if (!this.#fits(this.#start + LOG_HEADER_BYTES)) return 0;
      this.#end = this.#start + LOG_HEADER_BYTES;
    }
    const at = this.#start, bytes = align8(this.#end) - at, h = at >> 2;
    this.#seq = (this.#seq + 1) >>> 0;
    this.#out32[h + (H_SEQ >> 2)] = this.#seq;
    this.#out32[h + (H_BYTES >> 2)] = bytes;
    this.#out32[h + (H_COUNT >> 2)] = this.#count;
    this.#out32[h + 3] = 0;
    this.#used = (this.#used + bytes) >>> 0;
    this.sealedAt = at;
    this.#start = at + bytes === this.size ? 0 : at + bytes;
    this.#end = this.#start + LOG_HEADER_BYTES;
    this.#count = 0;
    this.#lastRemoteEnd = -1;
    return bytes;
  }
}

/**
 * The receiving side: applies the peer's batches from the inbound log into the rpc region, in
 * order, and counts what it applied (the peer's ack).
 */
export class LogReader {
  readonly #region: Uint8Array;
  readonly #r32: Uint32Array;
  /** S: where the log starts, and the bound every record's target must stay within. */
  readonly #rpcSize: number;
  #head = 0;
  #seq = 0;
  #applied = 0;
  /** The count last written to the peer's ack word. */
  ackedUpTo = 0;

  /**
   * `region`: this side's whole registered region (rpc region, log, tail; 8-aligned);
   * `rpcSize`: S, where the log starts; `size`: L.
   */
  constructor(region: Uint8Array, rpcSize: number, readonly size: number) {
    if (region.byteOffset % 8 !== 0 || rpcSize % 8 !== 0) {
      throw new RangeError("the write-log region must be 8-aligned");
    }
    if (region.length < rpcSize + size + LOG_TAIL_BYTES) {
      throw new RangeError(`a ${region.length}-byte region has no room for a ${size}-byte log`);
    }
    this.#region = region;
    this.#r32 = new Uint32Array(region.buffer, region.byteOffset, region.length >> 2);
    this.#rpcSize = rpcSize;
  }

  /** Bytes applied so far, waste included (u32 counter): the value of the peer's ack word. */
  get applied(): number {
    return this.#applied;
  }

  /** True when the peer should be told what was applied (a quarter of the log since the last ack). */
  get ackDue(): boolean {
    return ((this.#applied - this.ackedUpTo) >>> 0) >= this.size >> 2;
  }

  /**
   * Applies the next batch (one per receive completion of the peer's log writes). Returns the
   * records applied, or a string naming what is wrong with the batch (the session must fail).
   */
  applyNext(): number | string {
    const want = (this.#seq + 1) >>> 0;
    let at = this.#head, waste = 0;
    if (this.#seqAt(at) !== want) {
      if (at === 0 || this.#seqAt(0) !== want) {
        return `write-log batch ${want} is neither at offset ${at} nor at 0 of the ${this.size}-byte log`;
      }
      waste = this.size - at;
      at = 0;
    }
    const h = (this.#rpcSize + at) >> 2, r32 = this.#r32;
    const bytes = r32[h + (H_BYTES >> 2)], count = r32[h + (H_COUNT >> 2)];
    if (bytes < LOG_HEADER_BYTES || bytes % 8 !== 0 || bytes > this.size - at) {
      return `write-log batch ${want} at offset ${at} claims ${bytes} bytes (the log has ${
        this.size - at
      } left)`;
    }
    const end = at + bytes;
    let q = at + LOG_HEADER_BYTES;
    for (let i = 0; i < count; i++) {
      if (q + LOG_RECORD_HEADER_BYTES > end) {
        return `write-log batch ${want} claims ${count} records but ends after ${i}`;
      }
      const w = (this.#rpcSize + q) >> 2, off = r32[w], len = r32[w + 1];
      const data = q + LOG_RECORD_HEADER_BYTES;
      if (len > end - data) {
        return `write-log batch ${want}: record ${i} of ${len} bytes runs past the batch's end`;
      }
      if (off + len > this.#rpcSize) {
        return `write-log batch ${want}: record ${i} targets [${off}, +${len}), past the ${this.#rpcSize}-byte region`;
      }
      const src = this.#rpcSize + data;
      if (len === 4 && (off & 3) === 0) r32[off >> 2] = r32[src >> 2];
      else this.#region.copyWithin(off, src, src + len);
      q = align8(data + len);
    }
    this.#seq = want;
    this.#applied = (this.#applied + waste + bytes) >>> 0;
    this.#head = end === this.size ? 0 : end;
    return count;
  }

  #seqAt(at: number): number {
    return at + LOG_HEADER_BYTES > this.size ? -1 : this.#r32[(this.#rpcSize + at) >> 2];
  }
}
