/**
 * The baidu_std server over TCP: {@link serve} listens, frames every connection with a
 * `FrameParser`, hands requests to the transport-independent `Dispatcher`, and writes the answers
 * back (answers produced in the same tick leave in one write). A stock brpc client can call it.
 *
 * Isolation: a protocol error on one connection closes that connection only (the reason is logged
 * once, `stats().protocolErrors` counts it); every other connection keeps being served.
 *
 * Threading: a server lives on the JS thread that created it.
 * @module
 */
import { z } from "zod";
import { ConnectionClosedError, ProtocolError } from "../errors.ts";
import { tcp } from "../transport/tcp/mod.ts";
import type { NetAddress, TcpConn, TcpListener } from "../transport/tcp/tcp.ts";
import { ERESPONSE } from "./errors.ts";
import { parseOptions } from "../util/options.ts";
import {
  Dispatcher,
  type Handler,
  type Logger,
  type ResponseSink,
  type ServerCall,
} from "./protocol/dispatch.ts";
import { DEFAULT_MAX_BODY_SIZE, encodeFrameTo, FrameParser } from "./protocol/frame.ts";
import { encodeResponseFrameTo } from "./protocol/frame_fast.ts";
import type { RpcMeta, RpcResponseMeta } from "./protocol/rpc_meta.ts";
import { FabricHost, fabricHostOptionsSchema } from "./session/fabric_host.ts";
import { FABRIC_SERVICE } from "./session/hello.ts";

export type { CallContext, Handler, Logger, ServiceMap } from "./protocol/dispatch.ts";
export { typedMethod } from "./protocol/dispatch.ts";

const handlerSchema = z.custom<Handler>((v) => typeof v === "function", {
  message:
    "expected a handler function (request: Uint8Array, ctx) => Uint8Array | Promise<Uint8Array>",
});
const loggerSchema = z.custom<Logger>(
  (v) => typeof v === "object" && v !== null && typeof (v as Logger).warn === "function",
  { message: "expected a logger with a warn(message) method" },
);

/** The options of {@link serve}, validated with zod (unknown keys are rejected). */
export const ServeOptionsSchema = z.object({
  /** TCP port; 0 = ephemeral (read `server.port`). */
  port: z.number().int().min(0).max(65535),
  /** Address to bind. */
  host: z.string().min(1).default("127.0.0.1"),
  /** `{ "example.EchoService": { Echo: handler } }`. */
  services: z.record(
    z.string().regex(
      /^[A-Za-z_][A-Za-z0-9_.]*$/,
      "expected a protobuf service name like pkg.Service",
    ),
    z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "expected a method name"), handlerSchema),
  ),
  /** Largest accepted request body; a bigger frame closes its connection. */
  maxBodySize: z.number().int().positive().max(0xffffffff).default(DEFAULT_MAX_BODY_SIZE),
  /** Where problems are logged; default `console.warn`. */
  logger: loggerSchema.optional(),
  /** How long `close()` waits for calls in flight and for their answers to be written. */
  drainTimeoutMs: z.number().int().nonnegative().default(5000),
  /** Fast fabrics offered to verbus clients after the handshake (`false`: TCP only). */
  fabric: z.union([z.literal(false), fabricHostOptionsSchema]).optional(),
}).strict();

/** Input type of {@link serve}. */
export type ServeOptions = z.input<typeof ServeOptionsSchema>;

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
}

/** How long answers already queued may take to flush after a peer broke the protocol. */
const PROTOCOL_ERROR_FLUSH_MS = 1000;

function discard(): void {}

const defaultLogger: Logger = { warn: (m) => console.warn(`verbus: ${m}`) };

/** One accepted connection: parses frames in, writes answers out. */
class ServerConnection implements ResponseSink {
  readonly peer: NetAddress;
  readonly #conn: TcpConn;
  readonly #server: Server;
  readonly #parser: FrameParser;
  #abort: AbortController | null = null;
  /** Arrival time of the chunk being parsed (one clock read per chunk, not per call). */
  #receivedAt = 0;
  // Reused for every answer: encoded at once, never kept.
  readonly #okMeta: RpcMeta = { correlationId: 0 };
  readonly #errorResponse: RpcResponseMeta = { errorCode: 0, errorText: "" };
  readonly #errorMeta: RpcMeta = { correlationId: 0, response: this.#errorResponse };

  constructor(conn: TcpConn, server: Server, maxBodySize: number) {
    this.#conn = conn;
    this.#server = server;
    this.peer = conn.remoteAddress;
    this.#parser = new FrameParser(
      (meta, payload, attachment) =>
        server.dispatcher.dispatch(meta, payload, attachment, this, this.#receivedAt),
      { maxBodySize },
    );
    conn.onClose(() => {
      server.connectionClosed(this);
      this.#abort?.abort(new ConnectionClosedError(`connection from ${addr(this.peer)} closed`));
    });
    conn.onData((chunk) => {
      this.#receivedAt = Date.now();
      try {
        this.#parser.push(chunk);
      } catch (e) {
        if (e instanceof ProtocolError) server.protocolError(this, e);
        else server.logger.warn(`connection from ${addr(this.peer)}: ${String(e)}; closing it`);
        // Ignore the rest of the stream; answers already produced still go out (bounded wait).
        conn.onData(discard);
        void conn.end(PROTOCOL_ERROR_FLUSH_MS);
      }
    });
  }

  get signal(): AbortSignal {
    return (this.#abort ??= new AbortController()).signal;
  }

  send(call: ServerCall, response: Uint8Array, errorCode: number, errorText: string): void {
    const conn = this.#conn;
    if (conn.closed) return;
    if (errorCode === 0) {
      const meta = this.#okMeta;
      meta.correlationId = call.correlationId;
      try {
        // The meta of a plain answer is written in place (no RpcMeta encode); odd ids take the
        // general encoder.
        if (encodeResponseFrameTo(conn, meta.correlationId, response, call.responseAttachment)) {
          return;
        }
        encodeFrameTo(conn, meta, response, call.responseAttachment);
      } catch (e) {
        this.send(call, response, ERESPONSE, `cannot frame the response: ${String(e)}`);
      }
    } else {
      const meta = this.#errorMeta;
      meta.correlationId = call.correlationId;
      this.#errorResponse.errorCode = errorCode;
      this.#errorResponse.errorText = errorText;
      encodeFrameTo(conn, meta, response);
    }
  }

  /** Flushes queued answers, then closes (bounded by `timeoutMs`). */
  end(timeoutMs: number): Promise<void> {
    return this.#conn.end(timeoutMs);
  }

  close(): void {
    this.#conn.close();
  }
}

function addr(a: NetAddress): string {
  return a.host.includes(":") ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/** A running server. Create with {@link serve}. */
export class Server {
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
  readonly #maxBodySize: number;
  #listener: TcpListener | null = null;
  #connectionsTotal = 0;
  #protocolErrors = 0;
  #closing: Promise<void> | null = null;

  /** The fabric side (sessions over shm / RDMA / URMA), or null when disabled. */
  readonly fabric: FabricHost | null;

  /** @internal Use {@link serve}. */
  constructor(
    options: z.output<typeof ServeOptionsSchema>,
    port: number,
    fabric: FabricHost | null = null,
  ) {
    this.host = options.host;
    this.port = port;
    this.logger = options.logger ?? defaultLogger;
    this.fabric = fabric;
    const services = fabric
      ? { ...options.services, [FABRIC_SERVICE]: fabric.service() }
      : options.services;
    this.dispatcher = new Dispatcher(services, this.logger);
    fabric?.attach(this.dispatcher);
    this.#drainTimeoutMs = options.drainTimeoutMs;
    this.#maxBodySize = options.maxBodySize;
  }

  /** @internal */
  attach(listener: TcpListener): void {
    this.#listener = listener;
  }

  /** @internal Called by the listener for each accepted connection. */
  accept(conn: TcpConn): void {
    if (this.#closing !== null) {
      conn.close();
      return;
    }
    this.#connectionsTotal++;
    this.#connections.add(new ServerConnection(conn, this, this.#maxBodySize));
  }

  /** @internal */
  connectionClosed(c: ServerConnection): void {
    this.#connections.delete(c);
  }

  /** @internal Logs the reason once and counts it; the caller closes the connection. */
  protocolError(c: ServerConnection, e: ProtocolError): void {
    this.#protocolErrors++;
    this.logger.warn(`closing connection from ${addr(c.peer)}: protocol error: ${e.message}`);
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
    };
  }

  /**
   * Graceful stop: stops accepting, answers new requests with ELOGOFF, waits (up to
   * `drainTimeoutMs`) for calls in flight, flushes their answers, then closes every connection.
   * Idempotent: later calls return the same promise.
   */
  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  async #close(): Promise<void> {
    this.#listener?.close();
    this.fabric?.close();
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
  }

  /** Same as {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Validates `options` (a `VerbusError` code `INVALID_OPTIONS` names each bad field), listens, and
 * resolves with the running {@link Server}. Rejects with code `LISTEN_FAILED` when the address
 * cannot be bound.
 */
export async function serve(options: ServeOptions): Promise<Server> {
  const o = parseOptions(ServeOptionsSchema, options, "invalid serve() options");
  const fabric = o.fabric === false
    ? null
    : await FabricHost.create(o.fabric ?? {}, o.services, o.logger ?? defaultLogger);
  // Connections accepted before the Server object exists wait in `early`.
  const early: TcpConn[] = [];
  let accept = (conn: TcpConn): void => void early.push(conn);
  const listener = await tcp.listen({ host: o.host, port: o.port, onConnection: (c) => accept(c) });
  const server = new Server(o, listener.port, fabric);
  server.attach(listener);
  accept = (conn) => server.accept(conn);
  for (const c of early) server.accept(c);
  return server;
}
