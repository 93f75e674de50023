/**
 * TCP on Bun's native API (`Bun.listen` / `Bun.connect`). Loaded only through `mod.ts` when
 * running on Bun. `socket.write` is synchronous and may accept only part of a buffer: the rest
 * stays queued and is written from the `drain` event.
 * @module
 */
import { ConnectFailedError, VerbusError } from "../../errors.ts";
import { ConnBase } from "./conn_base.ts";
import {
  type ConnectOptions,
  type ListenOptions,
  type NetAddress,
  type TcpConn,
  type TcpListener,
  type TcpTransport,
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

function describe(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

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
        ? this.peerClosed(`failed: ${describe(error)}`, error)
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

class BunTcpListener implements TcpListener {
  readonly host: string;
  readonly port: number;
  // deno-lint-ignore no-explicit-any
  readonly #listener: any;
  #closed = false;

  // deno-lint-ignore no-explicit-any
  constructor(listener: any, host: string) {
    this.#listener = listener;
    this.host = host;
    this.port = listener.port;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#listener.stop(false);
  }
}

/** The Bun implementation of {@link TcpTransport}. */
export const transport: TcpTransport = {
  listen(options: ListenOptions): Promise<TcpListener> {
    const onConnection = options.onConnection;
    try {
      const listener = Bun.listen({
        hostname: options.host,
        port: options.port,
        exclusive: true,
        socket: {
          ...handlers,
          open(s: BunSocket) {
            onConnection(new BunTcpConn(s));
          },
        },
      });
      return Promise.resolve(new BunTcpListener(listener, options.host));
    } catch (e) {
      return Promise.reject(
        new VerbusError(
          "LISTEN_FAILED",
          `cannot listen on ${options.host}:${options.port}: ${describe(e)}`,
          { cause: e, context: { host: options.host, port: options.port } },
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
            new ConnectFailedError(`cannot connect to ${where}: ${describe(e)}`, {
              cause: e,
              context,
            }),
          );
        },
      );
    });
  },
};
