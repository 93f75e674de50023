/**
 * {@link ConnBase}: the handler, delivery and close logic both runtime files (`deno.ts`, `bun.ts`)
 * build on, over the write queue of `conn_output.ts`. See `tcp.ts` for the interface and the
 * buffer ownership rules.
 *
 * Lent input, for fabric connections (brpc's RDMA mode, `transport/brpc_rdma/`):
 * {@link ConnBase.deliverLent} hands a receive block the subclass reuses afterwards to a handler
 * that copies what it keeps ({@link TcpConn.onDataLent}), or a copy to any other handler.
 *
 * Threading: the JS thread that created the connection only.
 * @module
 */
import { ConnectionClosedError, type VerbusError } from "../../errors.ts";
import { ConnOutput } from "./conn_output.ts";
import type { CloseHandler, DataHandler, LendingDataHandler, NetAddress, TcpConn } from "./tcp.ts";

/**
 * The queue, pausing, handler and close logic shared by both runtimes. A runtime subclass implements
 * {@link flushNow} (push queued bytes to the socket), {@link closeSocket} and
 * {@link setSocketPaused}, and calls
 * {@link deliver} / {@link closed_} from its socket events.
 */
export abstract class ConnBase extends ConnOutput implements TcpConn {
  abstract readonly remoteAddress: NetAddress;
  abstract readonly localAddress: NetAddress;
  #data: LendingDataHandler | null = null;
  /** The data handler takes lent chunks ({@link onDataLent}). */
  #lends = false;
  #close: CloseHandler | null = null;
  #early: Uint8Array[] | null = null;
  #closeError: VerbusError | undefined;
  #closeNotified = false;

  /** Closes the socket itself (runtime-specific); must not call back into this class. */
  protected abstract closeSocket(): void;

  /**
   * Hands a received chunk (owned by the receiver) to the data handler or buffers it. What the
   * handler wrote synchronously (a server's answers to the requests of this chunk) is flushed at
   * once, still inside the runtime's socket callback (Bun corks it with the read), before the
   * chunk's microtasks run.
   */
  protected deliver(chunk: Uint8Array): void {
    if (this.closed) return;
    const h = this.#data;
    if (h !== null && this.#early === null) {
      h(chunk, false);
      if (this.hasQueued && !this.closed) this.flushNow();
    } else (this.#early ??= []).push(chunk);
  }

  /**
   * Hands over a chunk the subclass only lends (a receive block it reuses once this returns):
   * to a lending handler ({@link onDataLent}) as it is, else as a copy the receiver owns (also
   * when it is buffered for a handler not set yet). Returns the bytes copied (0: lent).
   */
  protected deliverLent(chunk: Uint8Array): number {
    if (this.closed) return 0;
    const h = this.#data;
    if (h === null || this.#early !== null || !this.#lends) {
      this.deliver(chunk.slice());
      return chunk.length;
    }
    h(chunk, true);
    if (this.hasQueued && !this.closed) this.flushNow();
    return 0;
  }

  unread(chunk: Uint8Array): void {
    if (this.closed || chunk.length === 0) return;
    (this.#early ??= []).unshift(chunk);
  }

  onData(handler: DataHandler | null): void {
    this.#setData(handler, false);
  }

  onDataLent(handler: LendingDataHandler | null): void {
    this.#setData(handler, handler !== null);
  }

  #setData(handler: LendingDataHandler | null, lends: boolean): void {
    this.#data = handler;
    this.#lends = lends;
    // Deliver what arrived without a handler; the handler may swap itself out mid-way.
    while (this.#early !== null && this.#data !== null && !this.closed) {
      const chunk = this.#early.shift()!;
      if (this.#early.length === 0) this.#early = null;
      this.#data(chunk, false);
    }
    if (this.closed && this.#closeNotified === false && this.#early === null) this.#notifyClose();
  }

  onClose(handler: CloseHandler | null): void {
    this.#close = handler;
    if (this.closed && !this.#closeNotified && this.#early === null) {
      queueMicrotask(() => this.#notifyClose());
    }
  }

  async end(timeoutMs = 5000): Promise<void> {
    if (this.closed) return;
    if (this.pendingWriteBytes > 0) {
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
    if (!this.shutOutput()) return;
    this.#closeError = error;
    try {
      this.closeSocket();
    } catch { /* already gone */ }
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
