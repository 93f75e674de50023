/**
 * TCP on Bun's native API (`Bun.listen` / `Bun.connect`). Loaded only through `mod.ts` when
 * running on Bun. `socket.write` is synchronous and may accept only part of a buffer: the rest
 * stays queued and is written from the `drain` event.
 * @module
 */
import { ConnectFailedError, VerbusError } from "../../errors.ts";
import { describeOsError, osErrorContext } from "../../util/os_error.ts";
import { ConnBase } from "./conn_base.ts";
import { openFdCount, softFdLimit } from "./fd_budget.ts";
import type {
  ConnectOptions,
  ListenOptions,
  NetAddress,
  TcpConn,
  TcpListener,
  TcpTransport,
} from "./tcp.ts";

// deno-lint-ignore no-explicit-any
const Bun = (globalThis as any).Bun;

/** The parts of Bun's `Socket` this file uses. */
interface BunSocket {
  data: BunTcpConn | undefined;
  write(data: Uint8Array, byteOffset?: number, byteLength?: number): number;
  end(): void;
  setNoDelay(noDelay?: boolean): boolean;
  pause(): boolean;
  resume(): boolean;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly localAddress: string;
  readonly localPort: number;
}

/** Free descriptors kept: below this many the listener stops accepting (see BunTcpListener). */
const FD_RESERVE = 8;
/** How often the free descriptors are counted while listening. */
const FD_CHECK_MS = 1000;
/** The first and the longest wait before listening again after a stop (doubling between). */
const PAUSE_FIRST_MS = 100, PAUSE_MAX_MS = 2000;

class BunTcpConn extends ConnBase {
  readonly remoteAddress: NetAddress;
  readonly localAddress: NetAddress;
  readonly #socket: BunSocket;
  #blocked = false;

  constructor(socket: BunSocket) {
    super();
    this.#socket = socket;
    socket.data = this;
    socket.setNoDelay(true);
    this.remoteAddress = { host: socket.remoteAddress, port: socket.remotePort };
    this.localAddress = { host: socket.localAddress, port: socket.localPort };
  }

  protected flushNow(): void {
    if (this.#blocked) return;
    while (this.hasQueued && !this.closed) {
      const slab = this.runSlab;
      if (slab !== null) {
        // Only frames appended to the slab since the last write: write them in place (no view).
        const start = this.runStart, len = this.pendingWriteBytes;
        const n = this.#socket.write(slab, start, len);
        if (n < 0) {
          this.closed_(this.peerClosed("is closed (write refused)"));
          return;
        }
        this.wroteRun(n);
        if (n < len) {
          this.#blocked = true; // resumed by the drain event
          return;
        }
        continue;
      }
      const buf = this.takeQueued();
      const n = this.#socket.write(buf);
      if (n < 0) {
        this.closed_(this.peerClosed("is closed (write refused)"));
        return;
      }
      this.wrote(n);
      if (n < buf.length) {
        this.requeueFront(buf.subarray(n));
        this.#blocked = true; // resumed by the drain event
        return;
      }
    }
  }

  /** Socket events, called by the shared handler tables below. */
  onSocketData(chunk: Uint8Array): void {
    this.deliver(chunk);
  }

  onSocketDrain(): void {
    this.#blocked = false;
    this.flushNow();
  }

  onSocketClose(error: unknown): void {
    if (this.closed) return;
    this.closed_(
      error
        ? this.peerClosed(`failed: ${describeOsError(error)}`, error)
        : this.peerClosed("closed by peer"),
    );
  }

  protected setSocketPaused(paused: boolean): void {
    if (paused) this.#socket.pause();
    else this.#socket.resume();
  }

  protected closeSocket(): void {
    this.#socket.end();
  }
}

/** Handlers shared by every socket (Bun keeps one table per listener / connect call). */
const handlers = {
  binaryType: "uint8array",
  data(s: BunSocket, d: Uint8Array) {
    s.data?.onSocketData(d);
  },
  drain(s: BunSocket) {
    s.data?.onSocketDrain();
  },
  end(s: BunSocket) {
    s.data?.onSocketClose(undefined);
  },
  close(s: BunSocket, error?: Error) {
    s.data?.onSocketClose(error);
  },
  error(s: BunSocket, error: Error) {
    s.data?.onSocketClose(error);
  },
};

/**
 * Bun accepts in native code and, when `accept` fails with EMFILE, retries at once for as long as
 * the connection waits in the backlog: a full core spent while nothing is accepted. So the
 * listener watches the free descriptors itself (the count of `/proc/self/fd` against the soft
 * limit, read every few accepts and every second, more often as they run low) and, when only
 * {@link FD_RESERVE} are left, stops listening; it listens again on the same port once more are
 * free (retried with a doubling wait). While stopped, new peers are refused by the kernel.
 */
class BunTcpListener implements TcpListener {
  readonly host: string;
  readonly port: number;
  // deno-lint-ignore no-explicit-any
  #listener: any;
  #closed = false;
  readonly #options: ListenOptions;
  readonly #fdLimit: number | null;
  /** Accepts left before the free descriptors are counted again. */
  #untilCheck = 0;
  /** Non-zero while stopped for lack of descriptors: the current wait before trying again. */
  #pausedMs = 0;
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;

  constructor(options: ListenOptions) {
    this.#options = options;
    this.#fdLimit = softFdLimit();
    this.#listener = this.#listen(options.port);
    this.host = options.host;
    this.port = this.#listener.port;
    this.#watch(FD_CHECK_MS);
  }

  // deno-lint-ignore no-explicit-any
  #listen(port: number): any {
    return Bun.listen({
      hostname: this.#options.host,
      port,
      exclusive: true,
      socket: {
        ...handlers,
        open: (s: BunSocket) => {
          this.#options.onConnection(new BunTcpConn(s));
          if (--this.#untilCheck <= 0) this.#check();
        },
      },
    });
  }

  /** Free descriptors now (Infinity when the limit or the count is unknown). */
  #free(): number {
    const open = this.#fdLimit === null ? null : openFdCount();
    return open === null ? Infinity : this.#fdLimit! - open;
  }

  /** Counts the free descriptors; stops listening when only the reserve is left. */
  #check(): void {
    if (this.#closed || this.#pausedMs !== 0) return;
    const free = this.#free();
    // Each accept takes one descriptor: count again before half of the margin is used.
    this.#untilCheck = Math.max(1, Math.floor((free - FD_RESERVE) / 2));
    if (free > FD_RESERVE) return;
    this.#listener.stop(false);
    this.#pause(PAUSE_FIRST_MS, free);
  }

  #pause(ms: number, free: number): void {
    this.#pausedMs = ms;
    this.#options.onAcceptPause?.({
      code: "FD_RESERVE",
      message: `not accepting: ${free} of ${this.#fdLimit} file descriptors free ` +
        `(keeping ${FD_RESERVE} in reserve)`,
      retryMs: ms,
    });
    this.#watch(ms);
  }

  /** The timer of the next count (listening) or of the next try to listen again (stopped). */
  #watch(ms: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(this.#tick, ms);
    // deno-lint-ignore no-explicit-any
    (this.#timer as any)?.unref?.(); // never keeps the process alive
  }

  readonly #tick = (): void => {
    if (this.#closed) return;
    if (this.#pausedMs === 0) {
      this.#check();
      if (this.#pausedMs === 0) this.#watch(FD_CHECK_MS);
      return;
    }
    const free = this.#free();
    if (free > 2 * FD_RESERVE) {
      try {
        this.#listener = this.#listen(this.port);
        this.#pausedMs = 0;
        this.#untilCheck = 0;
        this.#watch(FD_CHECK_MS);
        return;
      } catch { /* the port is taken meanwhile, or no descriptor for it: try again later */ }
    }
    this.#pause(Math.min(PAUSE_MAX_MS, this.#pausedMs * 2), free);
  };

  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      clearTimeout(this.#timer);
      if (this.#pausedMs === 0) this.#listener.stop(false);
    }
    return Promise.resolve(); // stop() frees the port at once
  }
}

/** The Bun implementation of {@link TcpTransport}. */
export const transport: TcpTransport = {
  listen(options: ListenOptions): Promise<TcpListener> {
    try {
      return Promise.resolve(new BunTcpListener(options));
    } catch (e) {
      return Promise.reject(
        new VerbusError(
          "LISTEN_FAILED",
          `cannot listen on ${options.host}:${options.port}: ${describeOsError(e)}`,
          { cause: e, context: { host: options.host, port: options.port, ...osErrorContext(e) } },
        ),
      );
    }
  },

  connect(options: ConnectOptions): Promise<TcpConn> {
    const timeoutMs = options.timeoutMs ?? 5000;
    const where = `${options.host}:${options.port}`;
    const context = { host: options.host, port: options.port };
    return new Promise<TcpConn>((resolve, reject) => {
      let done = false;
      const timer = setTimeout(() => {
        if (done) return;
        done = true;
        reject(
          new ConnectFailedError(`cannot connect to ${where}: timed out after ${timeoutMs} ms`, {
            context,
          }),
        );
      }, timeoutMs);
      Bun.connect({
        hostname: options.host,
        port: options.port,
        socket: {
          ...handlers,
          // Wrap at once so no data event can arrive before the connection object exists.
          open(s: BunSocket) {
            new BunTcpConn(s);
          },
          // Reported through the rejected promise below.
          connectError() {},
        },
      }).then(
        (s: BunSocket) => {
          clearTimeout(timer);
          const conn = s.data ?? new BunTcpConn(s);
          if (done) {
            conn.close(); // gave up already
            return;
          }
          done = true;
          resolve(conn);
        },
        (e: unknown) => {
          clearTimeout(timer);
          if (done) return;
          done = true;
          reject(
            new ConnectFailedError(`cannot connect to ${where}: ${describeOsError(e)}`, {
              cause: e,
              context: { ...context, ...osErrorContext(e) },
            }),
          );
        },
      );
    });
  },
};
