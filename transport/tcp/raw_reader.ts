/**
 * {@link RawReader}: reads exact byte counts off a {@link TcpConn}, for protocols that run before
 * or after framed RPC on the same connection (e.g. a fabric handshake on the control connection).
 * @module
 */
import { ConnectionClosedError, type VerbusError } from "../../errors.ts";
import type { TcpConn } from "./tcp.ts";

/**
 * Takes over a connection's byte stream to read exact byte counts (handshakes, raw prefixes). While
 * attached it owns the connection's data and close handlers; {@link release} gives the stream
 * back and returns the bytes received but not yet read, which the next owner must consume first.
 */
export class RawReader {
  readonly #conn: TcpConn;
  #buf: Uint8Array[] = [];
  #have = 0;
  #want = 0;
  #resolve: ((b: Uint8Array) => void) | null = null;
  #reject: ((e: unknown) => void) | null = null;
  #error: VerbusError | null = null;

  /** Attaches to `conn`; `initial` holds bytes already taken off the stream by a previous owner. */
  constructor(conn: TcpConn, initial?: Uint8Array) {
    this.#conn = conn;
    if (initial && initial.length > 0) this.#push(initial);
    conn.onClose((err) => {
      this.#error = err ?? new ConnectionClosedError("connection closed locally");
      if (this.#reject) {
        const rej = this.#reject;
        this.#resolve = this.#reject = null;
        rej(this.#error);
      }
    });
    conn.onData((c) => this.#push(c));
  }

  #push(chunk: Uint8Array): void {
    this.#buf.push(chunk);
    this.#have += chunk.length;
    if (this.#resolve !== null && this.#have >= this.#want) {
      const res = this.#resolve;
      this.#resolve = this.#reject = null;
      res(this.#take(this.#want));
    }
  }

  #take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let off = 0;
    while (off < n) {
      const c = this.#buf[0];
      const k = Math.min(c.length, n - off);
      out.set(c.subarray(0, k), off);
      off += k;
      if (k === c.length) this.#buf.shift();
      else this.#buf[0] = c.subarray(k);
    }
    this.#have -= n;
    return out;
  }

  /** Resolves with exactly `n` bytes (a fresh buffer); rejects if the connection closes first. */
  read(n: number): Promise<Uint8Array> {
    if (this.#resolve !== null) return Promise.reject(new Error("RawReader: read already pending"));
    if (this.#have >= n) return Promise.resolve(this.#take(n));
    if (this.#error) return Promise.reject(this.#error);
    this.#want = n;
    return new Promise((res, rej) => {
      this.#resolve = res;
      this.#reject = rej;
    });
  }

  /** Detaches (data and close handlers removed) and returns the unread bytes (may be empty). */
  release(): Uint8Array {
    this.#conn.onData(null);
    this.#conn.onClose(null);
    return this.#take(this.#have);
  }
}
