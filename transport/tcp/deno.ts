/**
 * TCP on Deno's native API (`Deno.listen` / `Deno.connect`). Loaded only through `mod.ts` when
 * running on Deno. One read loop and at most one write in flight per connection; writes queued
 * while a write is in flight leave together in the next one.
 * @module
 */
import { ConnectFailedError, VerbusError } from "../../errors.ts";
import { describeOsError, osErrorContext } from "../../util/os_error.ts";
import { ConnBase } from "./conn_base.ts";
import type {
  ConnectOptions,
  ListenOptions,
  NetAddress,
  TcpConn,
  TcpListener,
  TcpTransport,
} from "./tcp.ts";

/** Read buffer size. */
const READ_SIZE = 64 * 1024;
/** A read buffer with less room than this left is replaced by a new one. */
const READ_MIN = 16 * 1024;
/** The first retry after a failed accept, and the longest (the wait doubles while it fails). */
const ACCEPT_BACKOFF_MS = 10, ACCEPT_BACKOFF_MAX_MS = 1000;

function addr(a: Deno.Addr): NetAddress {
  return a.transport === "tcp" || a.transport === "udp"
    ? { host: a.hostname, port: a.port }
    : { host: String((a as { path?: string }).path ?? "?"), port: 0 };
}

class DenoTcpConn extends ConnBase {
  readonly remoteAddress: NetAddress;
  readonly localAddress: NetAddress;
  readonly #conn: Deno.TcpConn;
  #writing = false;
  /** Set while reading is paused: the read loop waits on it before its next read. */
  #resume: Promise<void> | null = null;
  #wake: (() => void) | null = null;

  constructor(conn: Deno.TcpConn) {
    super();
    this.#conn = conn;
    this.remoteAddress = addr(conn.remoteAddr);
    this.localAddress = addr(conn.localAddr);
    try {
      conn.setNoDelay(true);
    } catch { /* closed already: the read loop reports it */ }
    this.#readLoop();
  }

  async #readLoop(): Promise<void> {
    // Reads land back to back in one buffer and are delivered as views of it (no copy, no
    // allocation per read: a fresh Uint8Array costs microseconds on Deno); a new buffer is taken
    // when less than READ_MIN is left. Delivered views are never written again.
    // The first buffer is half size: most connections of a fabric server carry a handshake and
    // then idle (10,000 of them held 640 MB of read buffers).
    let buf = new Uint8Array(2 * READ_MIN);
    let off = 0;
    for (;;) {
      if (this.#resume !== null) await this.#resume;
      if (this.closed) return;
      let n: number | null;
      try {
        n = await this.#conn.read(off === 0 ? buf : buf.subarray(off));
      } catch (e) {
        if (!this.closed) this.closed_(this.peerClosed(`failed: ${describeOsError(e)}`, e));
        return;
      }
      if (this.closed) return;
      if (n === null) {
        this.closed_(this.peerClosed("closed by peer"));
        return;
      }
      if (n === 0) continue;
      const chunk = buf.subarray(off, off + n);
      off += n;
      if (buf.length - off < READ_MIN) {
        buf = new Uint8Array(READ_SIZE);
        off = 0;
      }
      this.deliver(chunk);
    }
  }

  protected flushNow(): void {
    if (this.#writing || !this.hasQueued) return;
    this.#writing = true;
    this.#writeLoop();
  }

  async #writeLoop(): Promise<void> {
    try {
      while (this.hasQueued && !this.closed) {
        const buf = this.takeQueued();
        let off = 0;
        while (off < buf.length) {
          const n = await this.#conn.write(off === 0 ? buf : buf.subarray(off));
          off += n;
          this.wrote(n);
          if (this.closed) return;
        }
      }
    } catch (e) {
      if (!this.closed) this.closed_(this.peerClosed(`write failed: ${describeOsError(e)}`, e));
    } finally {
      this.#writing = false;
    }
  }

  protected setSocketPaused(paused: boolean): void {
    if (paused) {
      this.#resume ??= new Promise((r) => (this.#wake = r));
    } else if (this.#resume !== null) {
      const wake = this.#wake!;
      this.#resume = this.#wake = null;
      wake();
    }
  }

  protected closeSocket(): void {
    this.setSocketPaused(false); // the read loop sees `closed` and ends
    this.#conn.close();
  }
}

class DenoTcpListener implements TcpListener {
  readonly host: string;
  readonly port: number;
  readonly #listener: Deno.TcpListener;
  #closed = false;
  /** The last accept asked for: Deno holds the socket open until it ends. */
  #accepting: Promise<Deno.TcpConn> | null = null;
  #released: Promise<void> | null = null;

  constructor(listener: Deno.TcpListener, host: string, options: ListenOptions) {
    this.#listener = listener;
    this.host = host;
    this.port = (listener.addr as Deno.NetAddr).port;
    this.#acceptLoop(options);
  }

  async #acceptLoop(options: ListenOptions): Promise<void> {
    const { onConnection, onAcceptPause } = options;
    let backoff = 0;
    while (!this.#closed) {
      let conn: Deno.TcpConn;
      try {
        conn = await (this.#accepting = this.#listener.accept());
      } catch (e) {
        if (this.#closed) return;
        if (e instanceof Deno.errors.BadResource) return;
        // Transient accept failures (EMFILE, ENFILE, ECONNABORTED) must not stop the listener;
        // while they last, the retries back off (the pending connection stays in the backlog,
        // so retrying at once would only spin).
        backoff = Math.min(ACCEPT_BACKOFF_MAX_MS, backoff === 0 ? ACCEPT_BACKOFF_MS : backoff * 2);
        const code = (e as { code?: string }).code ?? (e as Error).name ?? "accept error";
        onAcceptPause?.({
          code,
          message: `accept failed: ${describeOsError(e)}`,
          retryMs: backoff,
        });
        await new Promise((r) => setTimeout(r, backoff));
        continue;
      }
      backoff = 0;
      if (this.#closed) {
        conn.close();
        return;
      }
      onConnection(new DenoTcpConn(conn));
    }
  }

  close(): Promise<void> {
    if (this.#released) return this.#released;
    this.#closed = true;
    try {
      this.#listener.close();
    } catch { /* already closed */ }
    // The pending accept fails (BadResource) once Deno has dropped the socket; a settled one
    // (the loop backing off) held nothing, and the socket closed just now.
    const settled = () => {};
    return this.#released = (this.#accepting ?? Promise.resolve()).then(settled, settled);
  }
}

/** The Deno implementation of {@link TcpTransport}. */
export const transport: TcpTransport = {
  listen(options: ListenOptions): Promise<TcpListener> {
    let listener: Deno.TcpListener;
    try {
      listener = Deno.listen({ hostname: options.host, port: options.port, transport: "tcp" });
    } catch (e) {
      return Promise.reject(
        new VerbusError(
          "LISTEN_FAILED",
          `cannot listen on ${options.host}:${options.port}: ${describeOsError(e)}`,
          { cause: e, context: { host: options.host, port: options.port, ...osErrorContext(e) } },
        ),
      );
    }
    return Promise.resolve(new DenoTcpListener(listener, options.host, options));
  },

  async connect(options: ConnectOptions): Promise<TcpConn> {
    const timeoutMs = options.timeoutMs ?? 5000;
    // Not AbortSignal.timeout: the signal stays tied to the connection after it is established.
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    try {
      const conn = await Deno.connect({
        hostname: options.host,
        port: options.port,
        signal: abort.signal,
      });
      clearTimeout(timer);
      return new DenoTcpConn(conn);
    } catch (e) {
      clearTimeout(timer);
      const why = abort.signal.aborted ? `timed out after ${timeoutMs} ms` : describeOsError(e);
      throw new ConnectFailedError(`cannot connect to ${options.host}:${options.port}: ${why}`, {
        cause: e,
        context: { host: options.host, port: options.port, ...osErrorContext(e) },
      });
    }
  },
};
