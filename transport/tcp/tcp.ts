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
 * - a chunk passed to a lending handler ({@link TcpConn.onDataLent}) with `lent` true is the
 *   transport's memory (a registered receive block of brpc's RDMA mode), valid only during the
 *   call: the handler copies what must outlive it, and the transport reuses it after the call.
 *
 * @module
 */
import type { VerbusError } from "../../errors.ts";

/** A host (IP literal or name) and a TCP port. */
export interface NetAddress {
  readonly host: string;
  readonly port: number;
}

/** Receives bytes in arrival order. The chunk is owned by the handler (never reused). */
export type DataHandler = (chunk: Uint8Array) => void;

/**
 * Receives bytes in arrival order, owned (`lent` false: as {@link DataHandler}) or lent (`lent`
 * true: valid only until the handler returns — copy what must outlive the call, keep no view).
 */
export type LendingDataHandler = (chunk: Uint8Array, lent: boolean) => void;

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
  /**
   * Sets (or with `null` removes) a data handler that takes lent chunks: a transport whose
   * receive memory is registered (brpc's RDMA mode) then hands over its receive blocks without
   * copying them; others (and data buffered before the handler was set) deliver owned chunks.
   * Replaces the {@link onData} handler, and is replaced by it.
   */
  onDataLent(handler: LendingDataHandler | null): void;
  /**
   * Puts `chunk` back in front of the input (a protocol sniffed the first bytes and is not their
   * owner): it is delivered before anything else to the next data handler set. Call only while
   * no data handler is set (e.g. after `RawReader.release`). Ownership moves to the connection.
   */
  unread(chunk: Uint8Array): void;
  /** Sets the close handler (one; a later call replaces it). Called at most once, after all data. */
  onClose(handler: CloseHandler | null): void;
  /**
   * Stops reading the socket: the peer then meets TCP backpressure instead of this process
   * buffering what it sends. At most one read already under way may still be delivered.
   */
  pauseReading(): void;
  /** Undoes {@link pauseReading} (reading stays stopped while {@link writeBlocked}). */
  resumeReading(): void;
  /**
   * Bounds the output queue: once more than `high` bytes wait for the kernel the connection
   * stops reading (so a peer that does not read cannot make it produce more) and
   * {@link writeBlocked} is `true`; when the queue falls to `low` or below it reads again and calls
   * the {@link onWritable} handler. Default: no limit. `0 <= low < high`.
   */
  setWriteLimits(high: number, low: number): void;
  /** `true` while more than the `high` of {@link setWriteLimits} bytes are queued. */
  readonly writeBlocked: boolean;
  /** Called (synchronously, from the write completion) when {@link writeBlocked} turns false. */
  onWritable(handler: (() => void) | null): void;
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
  /**
   * Stops accepting. Connections already accepted stay open. Safe to call more than once. The
   * promise resolves once the port is free again: Deno closes the socket only when its pending
   * accept ends, an event-loop turn after close, and a listen on the port (a spawned process's
   * too) before then fails with EADDRINUSE; Bun frees it at once.
   */
  close(): Promise<void>;
}

/**
 * A listener stopped accepting for a while because descriptors ran out: `accept` failed with
 * EMFILE / ENFILE (Deno), or (Bun, whose native accept loop would retry at full speed) the free
 * descriptors fell to a small reserve and the listener paused before meeting the limit.
 */
export interface AcceptPause {
  /** `EMFILE`, `ENFILE`, another accept error code, or `FD_RESERVE` (Bun's pause). */
  readonly code: string;
  /** What failed, in words. */
  readonly message: string;
  /** Accepting is tried again after this many ms (doubling while it keeps failing). */
  readonly retryMs: number;
}

/** Options of {@link TcpTransport.listen}. */
export interface ListenOptions {
  /** IP literal or name to bind. */
  host: string;
  /** Port; 0 picks an ephemeral one (read it back from {@link TcpListener.port}). */
  port: number;
  /** Called for every accepted connection, on the JS thread. Must not throw. */
  onConnection: (conn: TcpConn) => void;
  /**
   * Called (on the JS thread) each time accepting pauses because descriptors ran out; it resumes
   * by itself. Must not throw. Without it the pause is silent (the listener still backs off).
   */
  onAcceptPause?: (pause: AcceptPause) => void;
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
