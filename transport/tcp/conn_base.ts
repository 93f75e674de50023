/**
 * {@link ConnBase}: the write queue, read pausing, handler and close logic both runtime files
 * (`deno.ts`, `bun.ts`) build on. See `tcp.ts` for the interface and the buffer ownership rules.
 *
 * Threading: the JS thread that created the connection only.
 * @module
 */
import { ConnectionClosedError, type VerbusError } from "../../errors.ts";
import type { CloseHandler, DataHandler, NetAddress, TcpConn } from "./tcp.ts";

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
const COPY_LIMIT = 16 * 1024;

/**
 * The queue, pausing, handler and close logic shared by both runtimes. A runtime subclass implements
 * {@link flushNow} (push queued bytes to the socket), {@link closeSocket} and
 * {@link setSocketPaused}, and calls
 * {@link deliver} / {@link closed_} from its socket events.
 */
export abstract class ConnBase implements TcpConn {
  abstract readonly remoteAddress: NetAddress;
  abstract readonly localAddress: NetAddress;
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
  #scheduled = false;
  #closed = false;
  #data: DataHandler | null = null;
  #close: CloseHandler | null = null;
  #early: Uint8Array[] | null = null;
  #drainWaiters: (() => void)[] | null = null;
  #closeError: VerbusError | undefined;
  #closeNotified = false;
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
    if (this.#used + n > this.#slab.length) {
      this.#sealRun();
      this.#slab = new Uint8Array(Math.max(this.#nextSlab, n));
      this.#nextSlab = Math.min(SLAB_SIZE, this.#nextSlab * 2);
      this.#runStart = this.#used = 0;
    }
    return this.#used;
  }

  commit(n: number): void {
    const d = this.#dedicated;
    if (d !== null) {
      this.#dedicated = null;
      if (this.#closed) return;
      this.#sealRun();
      this.#queue.push(n === d.length ? d : d.subarray(0, n));
    } else {
      this.#used += n;
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
    // and no garbage — per 256 KiB written while traffic keeps draining).
    this.#runStart = this.#used = 0;
    if (this.#drainWaiters !== null) {
      const waiters = this.#drainWaiters;
      this.#drainWaiters = null;
      for (const w of waiters) w();
    }
  }

  /** Writes queued bytes to the socket (runtime-specific). Called on the JS thread only. */
  protected abstract flushNow(): void;
  /** Closes the socket itself (runtime-specific); must not call back into this class. */
  protected abstract closeSocket(): void;
  /** Stops (`true`) or restarts reading the socket (runtime-specific). */
  protected abstract setSocketPaused(paused: boolean): void;

  /**
   * Hands a received chunk (owned by the receiver) to the data handler or buffers it. What the
   * handler wrote synchronously (a server's answers to the requests of this chunk) is flushed at
   * once, still inside the runtime's socket callback (Bun corks it with the read), before the
   * chunk's microtasks run.
   */
  protected deliver(chunk: Uint8Array): void {
    if (this.#closed) return;
    const h = this.#data;
    if (h !== null && this.#early === null) {
      h(chunk);
      if (this.hasQueued && !this.#closed) this.flushNow();
    } else (this.#early ??= []).push(chunk);
  }

  unread(chunk: Uint8Array): void {
    if (this.#closed || chunk.length === 0) return;
    (this.#early ??= []).unshift(chunk);
  }

  onData(handler: DataHandler | null): void {
    this.#data = handler;
    // Deliver what arrived without a handler; the handler may swap itself out mid-way.
    while (this.#early !== null && this.#data !== null && !this.#closed) {
      const chunk = this.#early.shift()!;
      if (this.#early.length === 0) this.#early = null;
      this.#data(chunk);
    }
    if (this.#closed && this.#closeNotified === false && this.#early === null) this.#notifyClose();
  }

  onClose(handler: CloseHandler | null): void {
    this.#close = handler;
    if (this.#closed && !this.#closeNotified && this.#early === null) {
      queueMicrotask(() => this.#notifyClose());
    }
  }

  drained(): Promise<void> {
    if (this.#queued === 0 || this.#closed) return Promise.resolve();
    return new Promise((resolve) => (this.#drainWaiters ??= []).push(resolve));
  }

  async end(timeoutMs = 5000): Promise<void> {
    if (this.#closed) return;
    if (this.#queued > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        this.drained(),
        new Promise<void>((r) => (timer = setTimeout(r, timeoutMs))),
      ]);
      clearTimeout(timer);
    }
    this.close();
  }

  close(): void {
    this.closed_(undefined);
  }

  /**
   * Marks the connection closed (idempotent), closes the socket, releases drain waiters and
   * notifies the close handler once. `error` undefined = closed locally.
   */
  protected closed_(error: VerbusError | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeError = error;
    this.#queue.length = 0;
    this.#queued = 0;
    this.#slab = EMPTY;
    this.#runStart = this.#used = 0;
    try {
      this.closeSocket();
    } catch { /* already gone */ }
    const waiters = this.#drainWaiters;
    this.#drainWaiters = null;
    if (waiters) { for (const w of waiters) w(); }
    // Buffered data never delivered is dropped: nobody asked for it before the close.
    this.#early = null;
    this.#writable = null;
    this.#notifyClose();
  }

  #notifyClose(): void {
    if (this.#closeNotified || this.#close === null) return;
    this.#closeNotified = true;
    this.#close(this.#closeError);
  }

  /** Builds the close error for a peer-side close. */
  protected peerClosed(reason: string, cause?: unknown): ConnectionClosedError {
    const r = this.remoteAddress;
    return new ConnectionClosedError(`connection to ${r.host}:${r.port} ${reason}`, {
      cause,
      context: { remote: `${r.host}:${r.port}` },
    });
  }
}
