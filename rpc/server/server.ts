/**
 * The baidu_std server over TCP: {@link serve} listens, frames every connection with a
 * `FrameParser`, hands requests to the transport-independent `Dispatcher`, and writes the answers
 * back (answers produced in the same tick leave in one write). A stock brpc client can call it.
 *
 * Isolation: a protocol error on one connection closes that connection only (the reason is logged
 * once, `stats().protocolErrors` counts it); every other connection keeps being served. Every
 * peer is bounded (output queue, calls in flight, connections, header and idle timeouts; see
 * `server_connection.ts` and the options below).
 *
 * Threading: a server lives on the JS thread that created it.
 * @module
 */
import type { z } from "zod";
import type { ProtocolError } from "../../errors.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import type { AcceptPause, TcpConn, TcpListener } from "../../transport/tcp/tcp.ts";
import { type ConnectionBudget, connectionBudget } from "../../transport/tcp/fd_budget.ts";
import { causeKey, safeLogger } from "../../util/log_text.ts";
import { libraryLogger } from "../../util/log.ts";
import { LogLimiter } from "../../util/log_limiter.ts";
import { ELIMIT } from "../errors.ts";
import { parseOptions } from "../../util/options.ts";
import { Dispatcher, type Logger } from "../protocol/dispatch.ts";
import {
  addr,
  closeWithReason,
  type ConnectionHost,
  type ConnectionLimits,
  ServerConnection,
} from "../tcp/server_connection.ts";
import { FabricHost } from "../session/server/fabric_host.ts";
import { FABRIC_SERVICE } from "../session/handshake/hello.ts";
import type { DescService } from "@bufbuild/protobuf";
import { BrpcRdmaAcceptor, prepareBrpcRdmaServer } from "../brpc/brpc_rdma.ts";
import { BrpcUbringAcceptor } from "../brpc/brpc_ubring.ts";
import { VerbusError } from "../../errors.ts";
import type { HandshakeAcceptor } from "./handshake_acceptor.ts";
import { TimeoutSweep } from "./timeout_sweep.ts";
import { type ServeOptionsOf, ServeOptionsSchema, servicesOf } from "./serve_options.ts";
import { type EtcdRegistration, registerInEtcd } from "../cluster/etcd_register.ts";

export type { CallContext, Handler, Logger, ServiceMap } from "../protocol/dispatch.ts";
export { typedMethod } from "../protocol/typed_method.ts";
export { borrowsRequest } from "../protocol/borrow.ts";
export { type ServeOptions, type ServeOptionsOf, ServeOptionsSchema } from "./serve_options.ts";

/** Counters of a {@link Server} (a snapshot). */
export interface ServerStats {
  /** Connections open now. */
  connections: number;
  /** Connections accepted since start. */
  connectionsTotal: number;
  /** Requests received. */
  calls: number;
  /** Requests answered with an error code. */
  errors: number;
  /** Connections closed because the peer broke the protocol. */
  protocolErrors: number;
  /** Handlers still running. */
  inflight: number;
  /** Connections closed at once because `maxConnections` were open. */
  refusedConnections: number;
  /** Requests answered with ELIMIT (over `maxInflightPerConnection`). */
  refusedCalls: number;
  /** Connections closed with a frame incomplete after `headerTimeoutMs`. */
  headerTimeouts: number;
  /** Connections closed after `idleTimeoutMs` idle. */
  idleTimeouts: number;
  /** Connections closed after not reading their answers for `stallTimeoutMs`. */
  stallTimeouts: number;
  /** Connections not reading now because their output queue is over `writeHighWaterMark`. */
  blockedConnections: number;
  /**
   * Times accepting paused because file descriptors ran out (`accept` failed with EMFILE /
   * ENFILE, or Bun's listener stopped at its reserve); the first of a spell is logged.
   */
  acceptPauses: number;
  /** The connection cap in force (`maxConnections`, or the default derived from the fd limit). */
  maxConnections: number;
}

export { idleTimeoutFor } from "./idle_timeout.ts";

/** A running server. Create with {@link serve}. */
export class Server implements ConnectionHost {
  /** The bound host. */
  readonly host: string;
  /** The bound port (the real one when 0 was asked for). */
  readonly port: number;
  /** @internal Shared by all connections. */
  readonly dispatcher: Dispatcher;
  /** @internal */
  readonly logger: Logger;
  readonly #connections = new Set<ServerConnection>();
  readonly #drainTimeoutMs: number;
  readonly #limits: ConnectionLimits;
  readonly #maxConnections: number;
  /** How the default cap was derived (null: `maxConnections` was given). */
  readonly #budget: ConnectionBudget | null;
  /** Rate limit of the lines a peer can cause over and over (protocol errors, accept pauses). */
  readonly #limiter: LogLimiter;
  #acceptPauses = 0;
  #listener: TcpListener | null = null;
  #connectionsTotal = 0;
  #protocolErrors = 0;
  #refusedConnections = 0;
  #refusedCalls = 0;
  /** Whether the refusals of the current spell over `maxConnections` were logged already. */
  #refusalLogged = false;
  /** The timeout sweep (runs while connections are open and a timeout is set). */
  readonly #sweep: TimeoutSweep;
  #closing: Promise<void> | null = null;

  /** The fabric side (sessions over shm / RDMA / URMA), or null when disabled. */
  readonly fabric: FabricHost | null;
  /** brpc's RDMA mode (option `brpcRdma`), or null. */
  readonly brpcRdma: BrpcRdmaAcceptor | null;
  /** brpc's UBRing mode (option `brpcUbring`), or null. */
  readonly brpcUbring: BrpcUbringAcceptor | null;
  /** The handshake every accepted connection runs first (brpc RDMA or UBRing), or null. */
  readonly #handshake: HandshakeAcceptor | null;
  /** Its registration in etcd (option `register`), or null; close() revokes it first. */
  registration: EtcdRegistration | null = null;

  /** @internal Use {@link serve}. */
  constructor(
    options: z.output<typeof ServeOptionsSchema>,
    port: number,
    fabric: FabricHost | null = null,
  ) {
    this.host = options.host;
    this.port = port;
    // Every line passes the escaping of peer text (whatever a caller interpolated into it).
    this.logger = safeLogger(options.logger ?? libraryLogger());
    this.#limiter = new LogLimiter((l) => this.logger.warn(l));
    this.fabric = fabric;
    const services = fabric
      ? { ...options.services, [FABRIC_SERVICE]: fabric.service() }
      : options.services;
    this.dispatcher = new Dispatcher(services, this.logger);
    fabric?.attach(this.dispatcher);
    this.#drainTimeoutMs = options.drainTimeoutMs;
    this.#limits = {
      maxBodySize: options.maxBodySize,
      maxInflightPerConnection: options.maxInflightPerConnection,
      writeHighWaterMark: options.writeHighWaterMark,
      writeLowWaterMark: options.writeLowWaterMark,
      headerTimeoutMs: options.headerTimeoutMs,
      idleTimeoutMs: options.idleTimeoutMs,
      stallTimeoutMs: options.stallTimeoutMs,
    };
    this.#budget = options.maxConnections === undefined ? connectionBudget() : null;
    this.#maxConnections = options.maxConnections ?? this.#budget!.maxConnections;
    this.brpcRdma = options.brpcRdma
      ? new BrpcRdmaAcceptor(
        options.brpcRdma,
        options.idleTimeoutMs,
        this.logger,
        this.#maxConnections,
        () => this.#connections.size,
      )
      : null;
    this.brpcUbring = options.brpcUbring
      ? new BrpcUbringAcceptor(
        options.brpcUbring,
        options.idleTimeoutMs,
        this.logger,
        this.#maxConnections,
        () => this.#connections.size,
      )
      : null;
    this.#handshake = this.brpcRdma ?? this.brpcUbring;
    this.#sweep = new TimeoutSweep(this.#limits, this.#maxConnections, this.#connections);
  }

  /** @internal */
  attach(listener: TcpListener): void {
    this.#listener = listener;
  }

  /** @internal Called by the listener when accepting pauses for lack of file descriptors. */
  acceptPaused(p: AcceptPause): void {
    this.#acceptPauses++;
    this.#sweep.descriptorsShort();
    this.#limiter.note(
      `accept:${p.code}`,
      () =>
        `not accepting connections for ${p.retryMs} ms: ${p.message}; ` +
        `${this.#connections.size} connections open, ${this.#capText()}; ` +
        `counted in stats().acceptPauses`,
    );
  }

  /** `max_connections=N` and, for a derived default, what it was derived from. */
  #capText(): string {
    const b = this.#budget;
    return `max_connections=${this.#maxConnections}` +
      (b === null
        ? ""
        : b.fdLimit === null
        ? " (default; no open-file limit known)"
        : ` (default: from the open-file limit ${b.fdLimit}, ${b.fdsOpen ?? "?"} open at start)`);
  }

  /** @internal Called by the listener for each accepted connection. */
  accept(conn: TcpConn): void {
    if (this.#handshake !== null && this.#closing === null) {
      this.#handshake.accept(conn, this.#serve);
    } else this.#serve(conn);
  }

  /** Serves a connection (TCP, or RDMA after brpc's handshake). */
  readonly #serve = (conn: TcpConn): void => {
    if (this.#closing !== null) {
      conn.close();
      return;
    }
    if (this.#connections.size >= this.#maxConnections) {
      this.#refusedConnections++;
      const why = `too many connections (max_connections=${this.#maxConnections})`;
      if (!this.#refusalLogged) {
        this.#refusalLogged = true;
        this.logger.warn(
          `refusing connection from ${addr(conn.remoteAddress)}: ${why}; ` +
            `${this.#connections.size} connections open, ${this.#capText()}; ` +
            `further refusals are counted in stats().refusedConnections, not logged`,
        );
      }
      closeWithReason(conn, ELIMIT, why);
      return;
    }
    this.#connectionsTotal++;
    this.#connections.add(new ServerConnection(conn, this, this.#limits));
    this.#sweep.start();
  };

  /** @internal */
  connectionClosed(c: ServerConnection): void {
    this.#connections.delete(c);
    // Below the cap again: the next spell of refusals is logged again.
    if (this.#connections.size < this.#maxConnections) this.#refusalLogged = false;
    if (this.#connections.size === 0) this.#sweep.stop();
  }

  /**
   * @internal Counts it and logs it, rate-limited by its kind (the message up to its first
   * colon, numbers collapsed): a flood of bad connections is one line and a summary per window.
   * The connection closes itself.
   */
  protocolError(c: ServerConnection, e: ProtocolError): void {
    this.#protocolErrors++;
    this.#limiter.note(
      `protocol:${causeKey(e.message.split(":")[0])}`,
      () => `closing connection from ${addr(c.peer)}: protocol error: ${e.message}`,
    );
  }

  /** @internal */
  callRefused(_c: ServerConnection): void {
    this.#refusedCalls++;
  }

  /** A snapshot of the counters. */
  stats(): ServerStats {
    const d = this.dispatcher.stats;
    return {
      connections: this.#connections.size,
      connectionsTotal: this.#connectionsTotal,
      calls: d.calls,
      errors: d.errors,
      protocolErrors: this.#protocolErrors,
      inflight: d.inflight,
      refusedConnections: this.#refusedConnections,
      refusedCalls: this.#refusedCalls,
      headerTimeouts: this.#sweep.headerTimeouts,
      idleTimeouts: this.#sweep.idleTimeouts,
      stallTimeouts: this.#sweep.stallTimeouts,
      blockedConnections: [...this.#connections].filter((c) => c.writeBlocked).length,
      acceptPauses: this.#acceptPauses,
      maxConnections: this.#maxConnections,
    };
  }

  /**
   * Graceful stop: stops accepting, answers new requests with ELOGOFF, waits (up to
   * `drainTimeoutMs`) for calls in flight, flushes their answers, then closes every connection.
   * When it resolves the port is free again. Idempotent: later calls return the same promise.
   */
  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  async #close(): Promise<void> {
    // Out of the naming service first, so clients stop choosing this server while it drains.
    const unregistered = this.registration?.stop();
    const released = this.#listener?.close();
    this.fabric?.close();
    this.#handshake?.close();
    this.dispatcher.stop();
    const deadline = Date.now() + this.#drainTimeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const drained = await Promise.race([
      this.dispatcher.idle().then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), this.#drainTimeoutMs))),
    ]);
    clearTimeout(timer);
    if (!drained) {
      this.logger.warn(
        `close(): ${this.dispatcher.stats.inflight} call(s) still running after ` +
          `${this.#drainTimeoutMs} ms; closing their connections`,
      );
    }
    const left = Math.max(0, deadline - Date.now());
    await Promise.all([...this.#connections].map((c) => c.end(left)));
    for (const c of this.#connections) c.close();
    this.#connections.clear();
    this.#sweep.stop();
    this.#limiter.flush(); // the repeats counted so far are said, not lost
    await unregistered;
    await released;
  }

  /** Same as {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Validates `options` (a `VerbusError` code `INVALID_OPTIONS` names each bad field), listens, and
 * resolves with the running {@link Server}. Rejects with code `LISTEN_FAILED` when the address
 * cannot be bound, and with the registration's error (CONNECT_FAILED, TIMEOUT, PROTOCOL…, naming
 * the etcd URL) when `register` is given and etcd does not take the server (it is closed then).
 */
export async function serve<const T extends readonly DescService[] = []>(
  options: ServeOptionsOf<T>,
): Promise<Server> {
  const o = parseOptions(ServeOptionsSchema, options, "invalid serve() options");
  if (o.brpcRdma && o.brpcUbring) {
    throw new VerbusError(
      "INVALID_OPTIONS",
      "invalid serve() options: brpcRdma and brpcUbring cannot both be on (each connection runs one handshake)",
    );
  }
  o.services = servicesOf(o.services, options.services, o.interceptors);
  const logger = safeLogger(o.logger ?? libraryLogger());
  const fabric = o.fabric === false
    ? null
    : await FabricHost.create(o.fabric ?? {}, o.services, logger);
  if (o.brpcRdma) await prepareBrpcRdmaServer(o.brpcRdma, o.host, logger);
  // Connections accepted before the Server object exists wait in `early`.
  const early: TcpConn[] = [];
  let accept = (conn: TcpConn): void => void early.push(conn);
  let paused = (_p: AcceptPause): void => {};
  const listener = await tcp.listen({
    host: o.host,
    port: o.port,
    onConnection: (c) => accept(c),
    onAcceptPause: (p) => paused(p),
  });
  const server = new Server({ ...o, logger }, listener.port, fabric);
  server.attach(listener);
  accept = (conn) => server.accept(conn);
  paused = (p) => server.acceptPaused(p);
  for (const c of early) server.accept(c);
  if (o.register !== undefined) {
    try {
      server.registration = await registerInEtcd(o.register, server.host, server.port, logger);
    } catch (e) {
      await server.close();
      throw e;
    }
  }
  return server;
}
