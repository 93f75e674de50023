/**
 * The runtime-neutral TCP interface of verbus: a listener, a connection, and the shared write
 * queue / delivery logic both runtime files (`deno.ts`, `bun.ts`) build on. Pick the
 * implementation through `mod.ts`; never import a runtime file directly.
 *
 * Threading: everything here runs on the one JavaScript thread that created the object; no
 * method may be called from a worker.
 *
 * Buffer ownership, in one place:
 * - `write(bytes)` takes ownership of `bytes`: the caller must not modify it afterwards (it may be
 *   written later, after the current tick).
 * - a chunk passed to a data handler is owned by the handler from then on: the transport never
 *   reuses or modifies its bytes, so views into it may be kept (e.g. a request payload an async
 *   handler still needs). It may be a view of a larger read buffer: use its bytes only.
 *
 * @module
 */
import { ConnectionClosedError, type VerbusError } from "../../errors.ts";

const EMPTY = new Uint8Array(0);

/** A host (IP literal or name) and a TCP port. */
export interface NetAddress {
  readonly host: string;
  readonly port: number;
}

/** Receives bytes in arrival order. The chunk is owned by the handler (never reused). */
export type DataHandler = (chunk: Uint8Array) => void;

/**
 * Called once when the connection is closed: `error` is `undefined` when it was closed locally
 * through {@link TcpConn.close}/{@link TcpConn.end}, otherwise a `ConnectionClosedError` saying
 * why (peer closed, reset, write failed).
 */
export type CloseHandler = (error: VerbusError | undefined) => void;

/**
 * One TCP connection with TCP_NODELAY on. Writes are queued and coalesced: everything written in
 * the same tick leaves in one write syscall (on the microtask after the first write, or — for
 * what a data handler writes synchronously — as soon as the handler returns), partial
 * writes are retried when the socket drains. Data is delivered to one replaceable handler, which
 * lets a protocol hand the byte stream over to another (e.g. a fabric handshake before or after
 * framed RPC, see {@link RawReader}).
 */
export interface TcpConn {
  /** The peer's address. */
  readonly remoteAddress: NetAddress;
  /** This side's address. */
  readonly localAddress: NetAddress;
  /** `true` once closed (locally or by the peer); writes are then dropped. */
  readonly closed: boolean;
  /** Bytes queued but not yet accepted by the kernel. */
  readonly pendingWriteBytes: number;
  /**
   * Queues `bytes` (ownership moves to the connection). Returns `false` and drops the bytes when
   * the connection is closed. Never throws, never blocks.
   */
  write(bytes: Uint8Array): boolean;
  /**
   * Zero-copy output, step 1: makes room for `n` bytes at the end of the output and returns the
   * offset in {@link writeBuffer} where they go. Fill `writeBuffer[off, off + n)`, then
   * {@link commit}. No other call on this connection may come in between. Works on a closed
   * connection too (the bytes are then dropped at commit).
   */
  reserve(n: number): number;
  /** The buffer the last {@link reserve} points into (may change on every reserve). */
  readonly writeBuffer: Uint8Array;
  /** Zero-copy output, step 2: queues the `n` bytes filled after {@link reserve}. */
  commit(n: number): void;
  /**
   * Sets (or with `null` removes) the data handler. Data arriving while no handler is set is
   * buffered and delivered, in order, as soon as one is set.
   */
  onData(handler: DataHandler | null): void;
  /** Sets the close handler (one; a later call replaces it). Called at most once, after all data. */
  onClose(handler: CloseHandler | null): void;
  /** Resolves when every queued byte was accepted by the kernel (or the connection closed). */
  drained(): Promise<void>;
  /** Flushes queued writes (bounded by `timeoutMs`, default 5000), then closes. */
  end(timeoutMs?: number): Promise<void>;
  /** Closes now; queued writes are dropped. Safe to call more than once. */
  close(): void;
}

/** A listening TCP socket. Accepted connections are independent of it. */
export interface TcpListener {
  /** The address it listens on (host as given, the real port when 0 was asked for). */
  readonly host: string;
  /** The bound port. */
  readonly port: number;
  /** Stops accepting. Connections already accepted stay open. Safe to call more than once. */
  close(): void;
}

/** Options of {@link TcpTransport.listen}. */
export interface ListenOptions {
  /** IP literal or name to bind. */
  host: string;
  /** Port; 0 picks an ephemeral one (read it back from {@link TcpListener.port}). */
  port: number;
  /** Called for every accepted connection, on the JS thread. Must not throw. */
  onConnection: (conn: TcpConn) => void;
}

/** Options of {@link TcpTransport.connect}. */
export interface ConnectOptions {
  host: string;
  port: number;
  /** Give up (with `ConnectFailedError`) after this many ms. Default 5000. */
  timeoutMs?: number;
}

/** What each runtime file exports as `transport`. */
export interface TcpTransport {
  /** Binds and listens; rejects with a `VerbusError` code `LISTEN_FAILED`. */
  listen(options: ListenOptions): Promise<TcpListener>;
  /** Connects; rejects with `ConnectFailedError` (code `CONNECT_FAILED`). */
  connect(options: ConnectOptions): Promise<TcpConn>;
}

/** Largest buffer the write queue builds by copying several queued chunks together. */
const COALESCE_LIMIT = 256 * 1024;
/** Output slab size: frames are encoded back to back into it and leave in one write. */
const SLAB_SIZE = 256 * 1024;
const FIRST_SLAB_SIZE = 8 * 1024; // first slab, doubling to SLAB_SIZE: fabric connections idle
/** Writes up to this size are copied into the slab; bigger ones are queued as they are. */
const COPY_LIMIT = 16 * 1024;

/**
 * The queue, handler and close logic shared by both runtimes. A runtime subclass implements
 * {@link flushNow} (push queued bytes to the socket) and {@link closeSocket}, and calls
 * {@link deliver} / {@link closed_} from its socket events.
 */
export abstract class ConnBase implements TcpConn {
  abstract readonly remoteAddress: NetAddress;
  abstract readonly localAddress: NetAddress;
  // Output: chunks ready to go, then the "run" slab[#runStart, #used) not yet sealed into a chunk.
  // The slab is append-only: bytes before #used are never written again (they may be in flight).
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

  get closed(): boolean {
    return this.#closed;
  }

  get pendingWriteBytes(): number {
    return this.#queued;
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
    if (this.#queued === 0 && this.#drainWaiters !== null) {
      const waiters = this.#drainWaiters;
      this.#drainWaiters = null;
      for (const w of waiters) w();
    }
  }

  /** Writes queued bytes to the socket (runtime-specific). Called on the JS thread only. */
  protected abstract flushNow(): void;
  /** Closes the socket itself (runtime-specific); must not call back into this class. */
  protected abstract closeSocket(): void;

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
