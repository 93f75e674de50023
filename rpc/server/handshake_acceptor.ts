/**
 * {@link HandshakeAcceptor}: the server's side of brpc's per-connection handshakes (RDMA, UBRing)
 * — each accepted connection runs the mode's handshake before it carries baidu_std, with a cap
 * on connections in their handshake and silent ones closed after the (shortened) idle timeout;
 * and {@link logOnce}, the once-per-cause log of both modes.
 *
 * Threading: the server's JS thread.
 * @module
 */
import type { TcpConn } from "../../transport/tcp/tcp.ts";
import type { Logger } from "../protocol/dispatch.ts";
import { idleTimeoutFor } from "./idle_timeout.ts";
import { libraryLogger } from "../../util/log.ts";

/** Causes already logged, per logger (bounded): each handshake ending is said once. */
const said = new WeakMap<Logger, Set<string>>();

/**
 * Logs `line` to `logger` (default: util/log.ts's library logger) unless a line of the same
 * cause (addresses and numbers aside) was logged to it already.
 */
export function logOnce(logger: Logger | undefined, line: string): void {
  const l = logger ?? libraryLogger();
  const cause = line.replace(/\d+\.\d+\.\d+\.\d+:\d+/g, "").replace(/\d+/g, "N");
  let seen = said.get(l);
  if (seen === undefined) said.set(l, seen = new Set());
  if (seen.has(cause)) return;
  if (seen.size >= 256) seen.clear();
  seen.add(cause);
  l.warn(line);
}

/** How often silent connections are looked at (while any is waiting for its first bytes). */
const SILENT_SWEEP_MS = 500;

/** A connection in its handshake: when it was accepted, and whether its first bytes came. */
interface Pending {
  readonly since: number;
  silent: boolean;
}

/**
 * The server's side of a handshake that runs on each accepted connection before baidu_std
 * (brpc's RDMA and UBRing modes): it hands the connection to carry baidu_std (the fabric's
 * stream or TCP) to `next`. Connections still in their handshake are closed by
 * {@link close}. One that has sent nothing yet is closed after the server's idle timeout,
 * shortened as for idle TCP connections when handshakes and served connections together fill
 * most of `maxPending` (`idle_timeout.ts`): silent sockets cannot hold every handshake place
 * for the whole idle time.
 */
export abstract class HandshakeAcceptor {
  readonly #pending = new Map<TcpConn, Pending>();
  #closed = false;
  #sweepTimer: ReturnType<typeof setInterval> | undefined = undefined;
  /** Handshakes that ended in each state (tests, stats); `notMine`: a plain baidu_std peer. */
  readonly outcomes: Record<string, number>;
  /** Connections closed because they sent nothing within the (shortened) idle timeout. */
  idleClosed = 0;

  constructor(
    /** The mode's name in log lines ("brpc-rdma"). */
    readonly label: string,
    /** The state of a connection that is a plain baidu_std peer ("NOT_RDMA"). */
    notMine: string,
    /** The server's idle timeout: how long a connection may stay silent (0 = no limit). */
    readonly sniffTimeoutMs: number,
    readonly logger: Logger,
    /** Connections in their handshake at once; more are closed at once (logged once). */
    readonly maxPending = 16_384,
    /** The server's connections past their handshake (they count toward a tight budget). */
    readonly openConnections: () => number = () => 0,
  ) {
    this.outcomes = { ESTABLISHED: 0, FALLBACK_TCP: 0, FAILED: 0, [notMine]: 0 };
  }

  /** Runs the mode's server handshake on `conn` (resolves, never rejects). */
  protected abstract handshake(
    conn: TcpConn,
    log: (line: string) => void,
    onFirstBytes: () => void,
  ): Promise<{ state: string; conn: TcpConn | null }>;

  /** Runs the handshake on `conn`; `next` gets the connection to serve, unless it FAILED. */
  accept(conn: TcpConn, next: (c: TcpConn) => void): void {
    if (this.#closed || this.#pending.size >= this.maxPending) {
      if (!this.#closed) {
        logOnce(
          this.logger,
          `${this.label}: refusing a connection: ${this.maxPending} in their handshake`,
        );
      }
      conn.close();
      return;
    }
    const entry: Pending = { since: Date.now(), silent: true };
    this.#pending.set(conn, entry);
    if (this.#sweepTimer === undefined && this.sniffTimeoutMs > 0) {
      this.#sweepTimer = setInterval(this.#sweep, SILENT_SWEEP_MS);
    }
    void this.handshake(
      conn,
      (l) => logOnce(this.logger, l),
      () => (entry.silent = false),
    ).then((out) => {
      this.#pending.delete(conn);
      if (this.#pending.size === 0) this.#stopSweep();
      this.outcomes[out.state] = (this.outcomes[out.state] ?? 0) + 1;
      if (out.conn === null) return;
      if (this.#closed) out.conn.close();
      else next(out.conn);
    });
  }

  /** Closes the connections that stayed silent past the idle timeout in force now. */
  readonly #sweep = (): void => {
    const now = Date.now(), n = this.#pending.size;
    const limit = idleTimeoutFor(this.sniffTimeoutMs, n + this.openConnections(), this.maxPending);
    let closed = 0;
    for (const [c, p] of this.#pending) {
      if (!p.silent || now - p.since < limit) continue;
      p.silent = false;
      closed++;
      c.close(); // its handshake ends FAILED and leaves the set
    }
    if (closed === 0) return;
    this.idleClosed += closed;
    logOnce(
      this.logger,
      `${this.label}: closed ${closed} silent connection(s) after ${limit} ms ` +
        `(${n} of ${this.maxPending} in their handshake); counted in idleClosed`,
    );
  };

  #stopSweep(): void {
    clearInterval(this.#sweepTimer);
    this.#sweepTimer = undefined;
  }

  /** Closes the connections still in their handshake. */
  close(): void {
    this.#closed = true;
    this.#stopSweep();
    for (const c of this.#pending.keys()) c.close();
    this.#pending.clear();
  }
}
