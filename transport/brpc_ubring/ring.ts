/**
 * {@link UbringRings}: the data path over the two mapped objects of one brpc UBRing connection
 * (layout.ts): writing the byte stream into the peer's ring, reading it out of this side's,
 * flow control by the peer's tail, the io_id edge, heartbeat and close flags.
 *
 * Every value the peer controls is checked before it is used: a tail out of the ring or moving
 * past the blocks written, a block flag other than NONE/EXIST/EOF, a length of 0 or past the
 * block's 60 payload bytes, a read position past the length. The first violation sets
 * {@link UbringRings.error} and the connection is to be failed; nothing is read or written past
 * either mapping.
 *
 * A write of several blocks stores its first block's flag last (the others are complete before
 * it), so a reader never sees part of a write. Full blocks move as 15 32-bit words when source
 * and destination are 4-aligned. A write allocates at most one word view; a read allocates the
 * chunk it returns (owned by the caller) and copies through a preallocated scratch buffer.
 *
 * Data path. Threading: the connection's JS thread.
 * @module
 */
import {
  BLOCK,
  BLOCK_CUR,
  BLOCK_FLAG,
  BLOCK_LEN,
  CHUNK,
  OBJ,
  PAYLOAD,
  ringBlocks,
  STATE,
} from "./layout.ts";

const EMPTY8 = new Uint8Array(0);
const EMPTY32 = new Uint32Array(0);

/** Largest chunk one read returns (brpc reads up to 512 KiB at once). */
export const MAX_READ = 256 * 1024;

/** The rings of one connection. */
export class UbringRings {
  /** Blocks of this side's ring (the peer writes them). */
  readonly recvBlocks: number;
  /** Blocks of the peer's ring (this side writes them). */
  readonly sendBlocks: number;
  /** Why the peer broke the protocol (null while it did not). */
  error: string | null = null;
  #own: Uint8Array;
  #ownW: Uint32Array;
  /** The whole of this side's object as 32-bit words (a full block's payload is 15 of them). */
  #own32: Uint32Array;
  #peer: Uint8Array;
  #peerW: Uint32Array;
  #peer32: Uint32Array;
  #readPos = 0;
  #writePos = 0;
  #lastTail: number;
  #ioLow = 0;
  #ioHigh = 0;
  readonly #scratch = new Uint8Array(MAX_READ + BLOCK);
  readonly #scratch32 = new Uint32Array(this.#scratch.buffer);

  /** Over this side's object `own` and the peer's `peer` (both mapped; not owned). */
  constructor(own: Uint8Array, peer: Uint8Array) {
    this.#own = own;
    this.#ownW = new Uint32Array(own.buffer, own.byteOffset, OBJ.DATA / 4);
    this.#peer = peer;
    this.#peerW = new Uint32Array(peer.buffer, peer.byteOffset, OBJ.DATA / 4);
    this.#own32 = new Uint32Array(own.buffer, own.byteOffset, own.length >>> 2);
    this.#peer32 = new Uint32Array(peer.buffer, peer.byteOffset, peer.length >>> 2);
    this.recvBlocks = ringBlocks(own.length);
    this.sendBlocks = ringBlocks(peer.length);
    this.#lastTail = this.sendBlocks - 1;
  }

  #fail(reason: string): -1 {
    this.error ??= reason;
    return -1;
  }

  /**
   * Blocks free in the peer's ring (one always stays empty), from the tail the peer wrote into
   * this side's object; -1 (and {@link error}) when that tail lies.
   */
  freeBlocks(): number {
    if (this.error !== null) return -1;
    const cap = this.sendBlocks, w = this.#writePos;
    const tail = Atomics.load(this.#ownW, OBJ.TAIL / 4);
    if (tail !== this.#lastTail) {
      if (tail >= cap) {
        return this.#fail(`the peer's tail ${tail} is out of its ring of ${cap} blocks`);
      }
      const moved = (tail - this.#lastTail + cap) % cap;
      const written = (w - 1 - this.#lastTail + 2 * cap) % cap;
      if (moved > written) {
        return this.#fail(
          `the peer's tail moved from ${this.#lastTail} to ${tail}, past the ${written} block(s) written`,
        );
      }
      this.#lastTail = tail;
    }
    return w > tail ? tail + cap - w : tail - w;
  }

  /**
   * Writes up to `len` bytes of `src` from `off` into the peer's ring, as many as the free
   * blocks take (the last block of the write is EOF); returns the bytes written (0: the ring is
   * full), -1 when the peer broke the protocol.
   */
  write(src: Uint8Array, off: number, len: number): number {
    const free = this.freeBlocks();
    if (free <= 0) return free;
    const n = Math.min(Math.ceil(len / PAYLOAD), free);
    const bytes = Math.min(len, n * PAYLOAD);
    const cap = this.sendBlocks, ring = this.#peer, ring32 = this.#peer32;
    const first = this.#writePos;
    // Full blocks of a 4-aligned source move as 15 words each (no view per block).
    const src32 = ((src.byteOffset + off) & 3) === 0
      ? new Uint32Array(src.buffer, src.byteOffset + off, bytes >>> 2)
      : null;
    // Blocks 1..n-1 first, whole; the first block's flag last: the write appears at once.
    for (let i = n - 1; i >= 0; i--) {
      const at = off + i * PAYLOAD;
      const k = Math.min(PAYLOAD, off + bytes - at);
      const base = OBJ.DATA + ((first + i) % cap) * BLOCK;
      if (src32 !== null && k === PAYLOAD) {
        const d = base >>> 2, s0 = i * (PAYLOAD >>> 2);
        for (let w = 0; w < PAYLOAD >>> 2; w++) ring32[d + w] = src32[s0 + w];
      } else ring.set(src.subarray(at, at + k), base);
      ring[base + BLOCK_LEN] = k;
      ring[base + BLOCK_CUR] = 0;
      const flag = i === n - 1 ? CHUNK.EOF : CHUNK.EXIST;
      if (i === 0) Atomics.store(ring, base + BLOCK_FLAG, flag);
      else ring[base + BLOCK_FLAG] = flag;
    }
    this.#writePos = (first + n) % cap;
    // brpc's edge trigger: a new io_id tells its poller there is something to read.
    if (++this.#ioLow > 0xffffffff) {
      this.#ioLow = 0;
      Atomics.store(this.#peerW, OBJ.RX_IO_ID / 4 + 1, ++this.#ioHigh >>> 0);
    }
    Atomics.store(this.#peerW, OBJ.RX_IO_ID / 4, this.#ioLow);
    return bytes;
  }

  /**
   * Takes what the peer wrote into this side's ring, up to {@link MAX_READ} bytes: a new chunk
   * (owned by the caller), or null when there is nothing (or the peer broke the protocol: then
   * {@link error} says how). Consumed blocks are freed and the peer's tail moved.
   */
  read(): Uint8Array | null {
    if (this.error !== null) return null;
    const ring = this.#own, cap = this.recvBlocks, out = this.#scratch;
    const ring32 = this.#own32, out32 = this.#scratch32;
    let pos = this.#readPos, total = 0, n = 0;
    while (n < cap && total + PAYLOAD <= MAX_READ) {
      const base = OBJ.DATA + pos * BLOCK;
      const flag = Atomics.load(ring, base + BLOCK_FLAG);
      if (flag === CHUNK.NONE) break;
      const len = ring[base + BLOCK_LEN], cur = ring[base + BLOCK_CUR];
      if (flag > CHUNK.EOF) {
        this.#fail(`block ${pos} of this side's ring has flag ${flag} (not 0, 1 or 2)`);
        break;
      }
      if (len === 0 || len > PAYLOAD || cur >= len) {
        this.#fail(
          `block ${pos} of this side's ring says ${len} byte(s) from ${cur}: past its ${PAYLOAD}-byte payload`,
        );
        break;
      }
      if (len === PAYLOAD && cur === 0 && (total & 3) === 0) {
        const s0 = base >>> 2, d = total >>> 2;
        for (let w = 0; w < PAYLOAD >>> 2; w++) out32[d + w] = ring32[s0 + w];
      } else out.set(ring.subarray(base + cur, base + len), total);
      total += len - cur;
      ring[base + BLOCK_FLAG] = CHUNK.NONE;
      pos = pos + 1 === cap ? 0 : pos + 1;
      n++;
    }
    if (n === 0) return null;
    // The last block consumed: the writer may reuse every block up to it.
    Atomics.store(this.#peerW, OBJ.TAIL / 4, (pos - 1 + cap) % cap);
    this.#readPos = pos;
    return out.slice(0, total);
  }

  /** The low word of this side's io_id, which the peer bumps after each write (0 once detached). */
  get ioSeen(): number {
    return this.#ownW.length === 0 ? 0 : Atomics.load(this.#ownW, OBJ.RX_IO_ID / 4);
  }

  /** Whether the peer closed its side (it set this side's receive flag CLOSED). */
  get peerClosed(): boolean {
    return Atomics.load(this.#ownW, OBJ.RX_FLAG / 4) === STATE.CLOSED;
  }

  /**
   * One heartbeat: marks the peer alive-checked (its heart_beat := 1) and returns whether the
   * peer did the same for this side since the last beat (clearing it).
   */
  beat(): boolean {
    Atomics.store(this.#peer, OBJ.HEART_BEAT, 1);
    if (Atomics.load(this.#own, OBJ.HEART_BEAT) !== 1) return false;
    Atomics.store(this.#own, OBJ.HEART_BEAT, 0);
    return true;
  }

  /**
   * Closes this side: `peerFirst` (the peer closed first) acknowledges its close, else tells it
   * this side closes (its sending side CLOSING, its receive flag CLOSED).
   */
  close(peerFirst: boolean): void {
    if (this.#peerW.length === 0) return;
    if (!peerFirst) Atomics.store(this.#peerW, OBJ.TX_FLAG / 4, STATE.CLOSING);
    Atomics.store(this.#ownW, OBJ.TX_FLAG / 4, STATE.CLOSED);
    Atomics.store(this.#peerW, OBJ.RX_FLAG / 4, STATE.CLOSED);
  }

  /** Drops every view (call before unmapping): later calls touch no memory. */
  detach(): void {
    this.#own = this.#peer = EMPTY8;
    this.#ownW =
      this.#peerW =
      this.#own32 =
      this.#peer32 =
        EMPTY32;
    this.error ??= "detached";
  }
}
