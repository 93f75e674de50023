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
 * The blocks are copied by the C helper (`vb_ubring_scatter` / `vb_ubring_gather`, one call per
 * write or read, whatever the number of 60-byte blocks; it checks each block's header as it
 * reads it, and never touches memory outside the ring or the caller's buffer). A write of
 * several blocks stores its first block's flag last (the others are complete before it), so a
 * reader never sees part of a write. A read lands in a read buffer, back to back after the
 * previous reads, and returns a view of it (as the TCP connection's reads do): no copy and no
 * allocation per read but the view; a new buffer is taken when less than 16 KiB is left.
 * The helper is required: a handshake that cannot load it stays on TCP.
 *
 * Data path. Threading: the connection's JS thread.
 * @module
 */
import type { Helper } from "../../ffi/helper.ts";
import { VB_UBRING_GATHER } from "../../ffi/layouts/helper.ts";
import {
  VB_UBRING_BAD_FLAG,
  VB_UBRING_BAD_LENGTH,
  VB_UBRING_OK,
} from "../../ffi/symbols/helper.ts";
import { BLOCK, OBJ, PAYLOAD, ringBlocks, STATE } from "./layout.ts";

type HelperFns = Helper["lib"]["symbols"];

const EMPTY8 = new Uint8Array(0);
const EMPTY32 = new Uint32Array(0);
/** struct vb_ubring_gather: word indexes, then byte offsets of the bad block's header. */
const G_BLOCKS = VB_UBRING_GATHER.blocks / 4, G_BYTES = VB_UBRING_GATHER.bytes / 4;
const G_POS = VB_UBRING_GATHER.pos / 4, G_BAD = VB_UBRING_GATHER.bad_block / 4;
const G_FLAG = VB_UBRING_GATHER.flag, G_LEN = VB_UBRING_GATHER.len, G_CUR = VB_UBRING_GATHER.cur;

/** A connection's first read buffer (most carry little), the later ones, and the least room a
 * read starts in (else it takes a new buffer). */
const FIRST_SLAB = 32 * 1024;
const SLAB = 256 * 1024;
const MIN_ROOM = 16 * 1024;

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
  #ownW: Uint32Array;
  #peerW: Uint32Array;
  /** The data queues (the blocks) of this side's object and of the peer's. */
  #ownRing: Uint8Array;
  #peerRing: Uint8Array;
  #own: Uint8Array;
  #peer: Uint8Array;
  #readPos = 0;
  #writePos = 0;
  #lastTail: number;
  #ioLow = 0;
  #ioHigh = 0;
  readonly #scatter: HelperFns["vb_ubring_scatter"];
  readonly #gather: HelperFns["vb_ubring_gather"];
  /** The helper's struct vb_ubring_gather, as bytes and words (one buffer, reused). */
  readonly #st = new Uint8Array(new ArrayBuffer(VB_UBRING_GATHER.$size));
  readonly #st32 = new Uint32Array(this.#st.buffer);
  /** Reads land back to back in this buffer and are returned as views of it, never rewritten. */
  #slab = EMPTY8;
  #slabUsed = 0;

  /**
   * Over this side's object `own` and the peer's `peer` (both mapped; not owned); `helper`
   * copies the blocks.
   */
  constructor(own: Uint8Array, peer: Uint8Array, helper: Helper) {
    this.#own = own;
    this.#peer = peer;
    this.#ownW = new Uint32Array(own.buffer, own.byteOffset, OBJ.DATA / 4);
    this.#peerW = new Uint32Array(peer.buffer, peer.byteOffset, OBJ.DATA / 4);
    this.recvBlocks = ringBlocks(own.length);
    this.sendBlocks = ringBlocks(peer.length);
    this.#ownRing = own.subarray(OBJ.DATA, OBJ.DATA + this.recvBlocks * BLOCK);
    this.#peerRing = peer.subarray(OBJ.DATA, OBJ.DATA + this.sendBlocks * BLOCK);
    this.#lastTail = this.sendBlocks - 1;
    this.#scatter = helper.lib.symbols.vb_ubring_scatter;
    this.#gather = helper.lib.symbols.vb_ubring_gather;
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
   * blocks take (the last block of the write is EOF), in one helper call; returns the bytes
   * written (0: the ring is full), -1 when the peer broke the protocol.
   */
  write(src: Uint8Array, off: number, len: number): number {
    const free = this.freeBlocks();
    if (free <= 0 || len <= 0) return Math.min(free, 0);
    const bytes = Math.min(len, free * PAYLOAD);
    const part = off === 0 && bytes === src.length ? src : src.subarray(off, off + bytes);
    const first = this.#writePos;
    const n = this.#scatter(this.#peerRing, this.#peerRing.length, first, part, bytes);
    if (n < 0) return this.#fail(`the block copy into the peer's ring failed (errno ${-n})`);
    this.#writePos = (first + n) % this.sendBlocks;
    // brpc's edge trigger: a new io_id tells its poller there is something to read.
    if (++this.#ioLow > 0xffffffff) {
      this.#ioLow = 0;
      Atomics.store(this.#peerW, OBJ.RX_IO_ID / 4 + 1, ++this.#ioHigh >>> 0);
    }
    Atomics.store(this.#peerW, OBJ.RX_IO_ID / 4, this.#ioLow);
    return bytes;
  }

  /**
   * Takes what the peer wrote into this side's ring, up to {@link MAX_READ} bytes, in one helper
   * call: a view of a read buffer that is never written again (owned by the caller), or null
   * when there is nothing (or the peer broke the protocol: then {@link error} says how; the
   * bytes of the blocks before the bad one are still returned once). Consumed blocks are freed
   * and the peer's tail moved.
   */
  read(): Uint8Array | null {
    if (this.error !== null) return null;
    const cap = this.recvBlocks;
    if (this.#slab.length - this.#slabUsed < MIN_ROOM) {
      this.#slab = new Uint8Array(this.#slab.length === 0 ? FIRST_SLAB : SLAB);
      this.#slabUsed = 0;
    }
    const at = this.#slabUsed;
    const room = Math.min(MAX_READ, this.#slab.length - at);
    const out = at === 0 && room === this.#slab.length
      ? this.#slab
      : this.#slab.subarray(at, at + room);
    const rc = this.#gather(
      this.#ownRing,
      this.#ownRing.length,
      this.#readPos,
      out,
      room,
      this.#st,
    );
    const st = this.#st32, blocks = st[G_BLOCKS], total = st[G_BYTES];
    if (rc === VB_UBRING_BAD_FLAG || rc === VB_UBRING_BAD_LENGTH) {
      const b = st[G_BAD], h = this.#st;
      this.#fail(
        rc === VB_UBRING_BAD_FLAG
          ? `block ${b} of this side's ring has flag ${h[G_FLAG]} (not 0, 1 or 2)`
          : `block ${b} of this side's ring says ${h[G_LEN]} byte(s) from ${
            h[G_CUR]
          }: past its ${PAYLOAD}-byte payload`,
      );
    } else if (rc !== VB_UBRING_OK) {
      this.#fail(`the block copy out of this side's ring failed (errno ${-rc})`);
      return null;
    }
    if (blocks === 0) return null;
    const pos = st[G_POS]; // < cap: the helper wraps it
    // The last block consumed: the writer may reuse every block up to it.
    Atomics.store(this.#peerW, OBJ.TAIL / 4, (pos - 1 + cap) % cap);
    this.#readPos = pos;
    this.#slabUsed = at + total;
    return this.#slab.subarray(at, at + total);
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
    this.#own =
      this.#peer =
      this.#ownRing =
      this.#peerRing =
        EMPTY8;
    this.#ownW = this.#peerW = EMPTY32;
    this.error ??= "detached";
  }
}
