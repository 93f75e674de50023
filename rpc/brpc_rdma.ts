/**
 * brpc's RDMA mode for the baidu_std {@link ../channel.ts Channel} and {@link ../server.ts Server}:
 * the connection under them starts with brpc's RDMA handshake and, once ESTABLISHED, carries the
 * baidu_std byte stream over a queue pair (transport/brpc_rdma/). Chosen explicitly with the
 * `brpcRdma` option, never guessed.
 *
 * Client: FALLBACK_TCP (no RDMA here, the server answered zeroed versions, bring-up failed) keeps
 * the same connection on TCP; a server not in RDMA mode (it closed on the hello, or answered with
 * something else) is dialled again over plain TCP; both are logged once per cause (per logger). Any other
 * FAILED ending rejects the connect with `ConnectFailedError`.
 * Server: a connection whose first four bytes are not "RDMA" is a plain baidu_std peer (as brpc
 * serves TCP clients on an RDMA server); each other ending is logged once per cause.
 *
 * Threading: the channel's / server's JS thread.
 * @module
 */
import { z } from "zod";
import { ConnectFailedError } from "../errors.ts";
import {
  BrpcRdmaConn,
  brpcRdmaOptionsSchema,
  clientHandshake,
  openBrpcQp,
  serverHandshake,
} from "../transport/brpc_rdma/mod.ts";
import type { BrpcRdmaOptions } from "../transport/brpc_rdma/mod.ts";
import { tcp } from "../transport/tcp/mod.ts";
import type { TcpConn } from "../transport/tcp/tcp.ts";
import type { Logger } from "./protocol/dispatch.ts";
import { idleTimeoutFor } from "./idle_timeout.ts";

/** The `brpcRdma` option of `serve()` and `connectChannel()`: off (default) or its options. */
export const brpcRdmaOptionSchema: z.ZodOptional<
  z.ZodUnion<readonly [z.ZodLiteral<false>, typeof brpcRdmaOptionsSchema]>
> = z.union([z.literal(false), brpcRdmaOptionsSchema]).optional();
export { brpcRdmaOptionsSchema };
export type { BrpcRdmaOptions };

const defaultLogger: Logger = { warn: (m) => console.warn(`verbus: ${m}`) };

/** Causes already logged, per logger (bounded): each handshake ending is said once. */
const said = new WeakMap<Logger, Set<string>>();
function logOnce(logger: Logger | undefined, line: string): void {
  const l = logger ?? defaultLogger;
  const cause = line.replace(/\d+\.\d+\.\d+\.\d+:\d+/g, "").replace(/\d+/g, "N");
  let seen = said.get(l);
  if (seen === undefined) said.set(l, seen = new Set());
  if (seen.has(cause)) return;
  if (seen.size >= 256) seen.clear();
  seen.add(cause);
  l.warn(line);
}

/** "brpc-rdma" when `conn` is an established brpc RDMA connection, else "tcp". */
export function connKind(conn: TcpConn | null): "brpc-rdma" | "tcp" {
  return conn instanceof BrpcRdmaConn ? "brpc-rdma" : "tcp";
}

/** What the channel passes. */
export interface DialOptions {
  connectTimeoutMs: number;
  brpcRdma?: false | BrpcRdmaOptions;
  logger?: Logger;
}

/**
 * Opens the channel's connection: plain TCP, or (with `brpcRdma`) TCP then brpc's RDMA
 * handshake. Rejects with `ConnectFailedError` when the server cannot be reached or the
 * handshake FAILED for another reason than "not an RDMA server".
 */
export async function dialChannel(host: string, port: number, o: DialOptions): Promise<TcpConn> {
  const to = { host, port, timeoutMs: o.connectTimeoutMs };
  const conn = await tcp.connect(to);
  if (!o.brpcRdma) return conn;
  const out = await clientHandshake(conn, o.brpcRdma, openBrpcQp, (l) => logOnce(o.logger, l));
  if (out.conn !== null) return out.conn;
  if (out.notRdmaServer) {
    logOnce(o.logger, `brpc-rdma client to ${host}:${port}: using plain TCP (${out.reason})`);
    return await tcp.connect(to);
  }
  throw new ConnectFailedError(`brpc RDMA handshake with ${host}:${port} failed: ${out.reason}`, {
    context: { history: out.history },
  });
}

/** How often silent connections are looked at (while any is waiting for its first bytes). */
const SILENT_SWEEP_MS = 500;

/** A connection in its handshake: when it was accepted, and whether its first bytes came. */
interface Pending {
  readonly since: number;
  silent: boolean;
}

/**
 * The server's side: runs the handshake on each accepted connection, then hands the connection
 * to carry baidu_std (RDMA or TCP) to `next`. Connections still in their handshake are closed by
 * {@link close}. One that has sent nothing yet is closed after the server's idle timeout,
 * shortened as for idle TCP connections when handshakes and served connections together fill
 * most of `maxPending` (`idle_timeout.ts`): silent sockets cannot hold every handshake place
 * for the whole idle time.
 */
export class BrpcRdmaAcceptor {
  readonly #pending = new Map<TcpConn, Pending>();
  #closed = false;
  #sweepTimer: ReturnType<typeof setInterval> | undefined = undefined;
  /** Handshakes that ended in each state (tests, stats). */
  readonly outcomes = { ESTABLISHED: 0, FALLBACK_TCP: 0, FAILED: 0, NOT_RDMA: 0 };
  /** Connections closed because they sent nothing within the (shortened) idle timeout. */
  idleClosed = 0;

  constructor(
    readonly options: BrpcRdmaOptions,
    /** The server's idle timeout: how long a connection may stay silent (0 = no limit). */
    readonly sniffTimeoutMs: number,
    readonly logger: Logger,
    /** Connections in their handshake at once; more are closed at once (logged once). */
    readonly maxPending = 16_384,
    /** The server's connections past their handshake (they count toward a tight budget). */
    readonly openConnections: () => number = () => 0,
  ) {}

  /** Runs the handshake on `conn`; `next` gets the connection to serve, unless it FAILED. */
  accept(conn: TcpConn, next: (c: TcpConn) => void): void {
    if (this.#closed || this.#pending.size >= this.maxPending) {
      if (!this.#closed) {
        logOnce(
          this.logger,
          `brpc-rdma: refusing a connection: ${this.maxPending} in their handshake`,
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
    void serverHandshake(
      conn,
      this.options,
      openBrpcQp,
      this.sniffTimeoutMs,
      (l) => logOnce(this.logger, l),
      () => (entry.silent = false),
    ).then((out) => {
      this.#pending.delete(conn);
      if (this.#pending.size === 0) this.#stopSweep();
      this.outcomes[out.state as keyof BrpcRdmaAcceptor["outcomes"]]++;
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
      `brpc-rdma: closed ${closed} silent connection(s) after ${limit} ms ` +
        `(${n} of ${this.maxPending} in their handshake); counted in brpcRdma.idleClosed`,
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
