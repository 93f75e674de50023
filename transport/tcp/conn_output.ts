/**
 * {@link ConnOutput}: the write queue of a connection — the output slab frames are encoded into,
 * the chunk queue, the write limits and the reasons reading is stopped — that {@link ConnBase}
 * (`conn_base.ts`: handlers, delivery, close) builds on. See `tcp.ts` for the interface and the
 * buffer ownership rules.
 *
 * Ring mode, for fabric connections (brpc's RDMA mode, `transport/brpc_rdma/`): the subclass lends
 * an {@link OutputRing} — registered send memory — and frames are reserved in it, so they leave
 * from where they were encoded (no copy); see {@link ConnOutput.useOutputRing}.
 *
 * Threading: the JS thread that created the connection only.
 * @module
 */

const EMPTY = new Uint8Array(0);

/** Why reading is stopped (bits): the owner asked, or the output queue is over its limit. */
const PAUSED_BY_OWNER = 1;
const PAUSED_BY_WRITES = 2;

/** Largest buffer the write queue builds by copying several queued chunks together. */
const COALESCE_LIMIT = 256 * 1024;
/** Output slab size: frames are encoded back to back into it and leave in one write. */
const SLAB_SIZE = 256 * 1024;
const FIRST_SLAB_SIZE = 8 * 1024; // first slab, doubling to SLAB_SIZE: fabric connections idle
/** Writes up to this size are copied into the slab; bigger ones are queued as they are. */
export const COPY_LIMIT = 16 * 1024;

/**
 * Registered output memory a subclass lends the write queue ({@link ConnBase.useOutputRing}):
 * while everything queued lies in it, frames are reserved in it, and the subclass sends them from
 * where they are (zero copy). Owned by the subclass; {@link ConnBase} only reserves and commits.
 */
export interface OutputRing {
  /** The ring's memory. */
  readonly buffer: Uint8Array;
  /** Offset of the next reservation when nothing wraps. */
  readonly head: number;
  /** Offset of `n` contiguous free bytes (possibly 0 after a wrap), or -1: no room now. */
  reserve(n: number): number;
  /** Marks `n` bytes from the last reservation used. */
  commit(n: number): void;
}

/**
 * The output half of a connection. A subclass implements {@link flushNow} (push queued bytes out)
 * and {@link setSocketPaused}, and closes the output with {@link shutOutput}.
 */
export abstract class ConnOutput {
  // Output: chunks ready to go, then the "run" slab[#runStart, #used) not yet sealed into a chunk.
  // The slab is append-only while anything is queued or in flight: bytes before #used are never
  // written again until the kernel took every queued byte (then it restarts at 0).
  #queue: Uint8Array[] = [];
  #queued = 0;
  #slab: Uint8Array = EMPTY;
  #nextSlab = FIRST_SLAB_SIZE;
  #runStart = 0;
  #used = 0;
  #dedicated: Uint8Array | null = null;
  /**
   * Ring mode ({@link useOutputRing}): the slab is the ring while everything queued lies in it;
   * once a byte is queued elsewhere (a big write, the ring full) output goes to a heap slab until
   * the queue drains, so the ring is filled in the order its bytes leave.
   */
  #ring: OutputRing | null = null;
  /** Ring mode: the heap slab kept for the next time output cannot go to the ring. */
  #spare: Uint8Array = EMPTY;
  #scheduled = false;
  #closed = false;
  #drainWaiters: (() => void)[] | null = null;
  // Output limits (setWriteLimits) and the reasons reading is stopped: two counters and a mask,
  // checked where the queue length changes — nothing per frame.
  #high = Infinity;
  #low = Infinity;
  #paused = 0;
  #writable: (() => void) | null = null;

  get closed(): boolean {
    return this.#closed;
  }

  get pendingWriteBytes(): number {
    return this.#queued;
  }

  get writeBlocked(): boolean {
    return (this.#paused & PAUSED_BY_WRITES) !== 0;
  }

  setWriteLimits(high: number, low: number): void {
    if (!(low >= 0 && high > low)) {
      throw new RangeError(`write limits: expected 0 <= low < high, got low=${low} high=${high}`);
    }
    this.#high = high;
    this.#low = low;
    this.#checkHigh();
  }

  onWritable(handler: (() => void) | null): void {
    this.#writable = handler;
  }

  pauseReading(): void {
    this.#setPaused(this.#paused | PAUSED_BY_OWNER);
  }

  resumeReading(): void {
    this.#setPaused(this.#paused & ~PAUSED_BY_OWNER);
  }

  #setPaused(mask: number): void {
    const was = this.#paused !== 0;
    this.#paused = mask;
    if (was !== (mask !== 0) && !this.#closed) this.setSocketPaused(mask !== 0);
  }

  /** Called where the queue grows: past the high-water mark, stop reading. */
  #checkHigh(): void {
    if (this.#queued > this.#high && (this.#paused & PAUSED_BY_WRITES) === 0) {
      this.#setPaused(this.#paused | PAUSED_BY_WRITES);
    }
  }

  get writeBuffer(): Uint8Array {
    return this.#dedicated ?? this.#slab;
  }

  reserve(n: number): number {
    if (n > SLAB_SIZE >>> 2) {
      this.#dedicated = new Uint8Array(n);
      return 0;
    }
    const ring = this.#ring;
    if (ring !== null && this.#slab === ring.buffer) {
      const off = ring.reserve(n);
      if (off >= 0) {
        if (off !== this.#used) {
          this.#sealRun(); // wrapped: the run before it leaves as a chunk of its own
          this.#runStart = off;
        }
        return this.#used = off;
      }
      this.#leaveRing(); // no room: this reservation and what follows go to a heap slab
    }
    if (this.#used + n > this.#slab.length) {
      this.#sealRun();
      const spare = this.#spare;
      if (spare.length >= n) {
        this.#slab = spare;
        this.#spare = EMPTY;
      } else {
        this.#slab = new Uint8Array(Math.max(this.#nextSlab, n));
        this.#nextSlab = Math.min(SLAB_SIZE, this.#nextSlab * 2);
      }
      this.#runStart = this.#used = 0;
    }
    return this.#used;
  }

  /**
   * Ring mode: from now on the output slab is the ring (registered memory the subclass sends
   * from in place, see {@link OutputRing}). Call once, before any output.
   */
  protected useOutputRing(ring: OutputRing): void {
    this.#ring = ring;
    this.#slab = ring.buffer;
    this.#runStart = this.#used = ring.head;
  }

  /** Ring mode: output goes to a heap slab until the queue drains (see {@link #ring}). */
  #leaveRing(): void {
    if (this.#ring === null || this.#slab !== this.#ring.buffer) return;
    this.#sealRun();
    this.#slab = EMPTY;
    this.#runStart = this.#used = 0;
  }

  /** Whether `chunk` lies in the output ring (sent in place), else it is to be copied. */
  protected inRing(chunk: Uint8Array): boolean {
    return this.#ring !== null && chunk.buffer === this.#ring.buffer.buffer;
  }

  commit(n: number): void {
    const d = this.#dedicated;
    if (d !== null) {
      this.#dedicated = null;
      if (this.#closed) return;
      this.#leaveRing();
      this.#sealRun();
      this.#queue.push(n === d.length ? d : d.subarray(0, n));
    } else {
      this.#used += n;
      if (this.#ring !== null && this.#slab === this.#ring.buffer) this.#ring.commit(n);
      if (this.#closed) {
        this.#runStart = this.#used;
        return;
      }
    }
    this.#queued += n;
    if (this.#queued > this.#high) this.#checkHigh();
    this.#schedule();
  }

  write(bytes: Uint8Array): boolean {
    if (this.#closed) return false;
    const n = bytes.length;
    if (n === 0) return true;
    if (n <= COPY_LIMIT) {
      const off = this.reserve(n);
      this.#slab.set(bytes, off);
      this.commit(n);
      return true;
    }
    this.#leaveRing();
    this.#sealRun();
    this.#queue.push(bytes);
    this.#queued += n;
    if (this.#queued > this.#high) this.#checkHigh();
    this.#schedule();
    return true;
  }

  /** Moves the unsealed slab run into the chunk queue. */
  #sealRun(): void {
    if (this.#used > this.#runStart) {
      this.#queue.push(this.#slab.subarray(this.#runStart, this.#used));
      this.#runStart = this.#used;
    }
  }

  #schedule(): void {
    if (!this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(this.#scheduledFlush);
    }
  }

  #scheduledFlush = (): void => {
    this.#scheduled = false;
    if (!this.#closed) this.flushNow();
  };

  /** Whether there is anything to write. */
  protected get hasQueued(): boolean {
    return this.#queue.length > 0 || this.#used > this.#runStart;
  }

  /**
   * The common case of a flush: only frames appended to the current slab since the last write.
   * Returns the slab, whose {@link pendingWriteBytes} bytes from {@link runStart} are to be written
   * in place (then {@link wroteRun}), or `null` when other chunks are queued ({@link takeQueued}).
   */
  protected get runSlab(): Uint8Array | null {
    return this.#queue.length === 0 && this.#dedicated === null ? this.#slab : null;
  }

  protected get runStart(): number {
    return this.#runStart;
  }

  /** Records that the kernel took `n` bytes from the start of the run of {@link runSlab}. */
  protected wroteRun(n: number): void {
    this.#runStart += n;
    this.wrote(n);
  }

  /**
   * Takes the next buffer to write: the head chunk alone when it is large, else several small
   * chunks copied into one buffer (one syscall for many frames).
   */
  protected takeQueued(): Uint8Array {
    this.#sealRun();
    const q = this.#queue;
    let head = q[0];
    if (q.length === 1 || head.length >= COALESCE_LIMIT / 2) {
      q.shift();
    } else {
      let total = 0, count = 0;
      while (count < q.length && total + q[count].length <= COALESCE_LIMIT) {
        total += q[count++].length;
      }
      if (count <= 1) {
        q.shift();
      } else {
        head = new Uint8Array(total);
        let off = 0;
        for (let i = 0; i < count; off += q[i++].length) head.set(q[i], off);
        q.splice(0, count);
      }
    }
    return head;
  }

  /**
   * Takes the head chunk as it is (ring mode: chunks of the ring leave from where they lie, so
   * they are never coalesced into a new buffer).
   */
  protected takeHead(): Uint8Array {
    this.#sealRun();
    return this.#queue.shift()!;
  }

  /** Puts back the unwritten tail of a buffer taken by {@link takeQueued} (partial write). */
  protected requeueFront(rest: Uint8Array): void {
    this.#queue.unshift(rest);
  }

  /** Records that `n` queued bytes were accepted by the kernel. */
  protected wrote(n: number): void {
    this.#queued -= n;
    if ((this.#paused & PAUSED_BY_WRITES) !== 0 && this.#queued <= this.#low) {
      this.#setPaused(this.#paused & ~PAUSED_BY_WRITES);
      this.#writable?.();
    }
    if (this.#queued !== 0) return;
    // Everything was taken by the kernel: the slab is free again from its start (no new slab —
    // and no garbage — per 256 KiB written while traffic keeps draining). Ring mode: output goes
    // back to the ring, where it goes on from the head (the ring frees what completed).
    const ring = this.#ring;
    if (ring !== null) {
      if (this.#slab !== ring.buffer && this.#slab !== EMPTY) this.#spare = this.#slab;
      this.#slab = ring.buffer;
      this.#runStart = this.#used = ring.head;
    } else this.#runStart = this.#used = 0;
    if (this.#drainWaiters !== null) {
      const waiters = this.#drainWaiters;
      this.#drainWaiters = null;
      for (const w of waiters) w();
    }
  }

  drained(): Promise<void> {
    if (this.#queued === 0 || this.#closed) return Promise.resolve();
    return new Promise((resolve) => (this.#drainWaiters ??= []).push(resolve));
  }

  /**
   * Closes the output (once: false when it was already closed): the queue is dropped, drain
   * waiters are released, the writable handler is forgotten.
   */
  protected shutOutput(): boolean {
    if (this.#closed) return false;
    this.#closed = true;
    this.#queue.length = 0;
    this.#queued = 0;
    this.#slab = this.#spare = EMPTY;
    this.#ring = null;
    this.#runStart = this.#used = 0;
    this.#writable = null;
    const waiters = this.#drainWaiters;
    this.#drainWaiters = null;
    if (waiters) { for (const w of waiters) w(); }
    return true;
  }

  /** Writes queued bytes to the socket (runtime-specific). Called on the JS thread only. */
  protected abstract flushNow(): void;
  /** Stops (`true`) or restarts reading the socket (runtime-specific). */
  protected abstract setSocketPaused(paused: boolean): void;
}
