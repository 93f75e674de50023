/**
 * One accepted baidu_std connection of a {@link Server}: frames in (a `FrameParser`), calls to
 * the shared `Dispatcher`, answers out, and the limits that keep a hostile peer from exhausting
 * the server:
 *
 * - **Output queue**: past `writeHighWaterMark` queued bytes the connection stops parsing (the
 *   rest of the read is held) and stops reading the socket; below `writeLowWaterMark` it goes on.
 *   A peer that sends requests and never reads its answers therefore holds at most about one
 *   high-water mark (plus the answers of calls already running) of this process's memory.
 * - **Calls in flight**: past `maxInflightPerConnection` a request is answered at once with
 *   `ELIMIT`, as brpc answers past its `max_concurrency`, without running it.
 * - **Timeouts** (checked by the server's sweep, {@link ServerConnection.expired}): a frame begun
 *   must be complete within `headerTimeoutMs`; a connection with nothing in flight, nothing
 *   queued, nothing received and nothing answered for `idleTimeoutMs` (seen by two sweeps in a
 *   row) is closed — unless something depends on its lifetime (a fabric session negotiated on it
 *   asked for its signal); a connection whose output stays over the high-water mark for
 *   `stallTimeoutMs` (its peer does not read) is closed at once, its queue dropped.
 * - A server-side close says why: the last frame is an error answer with `correlation_id` 0
 *   (which no client uses; brpc clients drop it, a verbus `Channel` reports its text).
 *
 * All of it is counters and flags read where the state changes, nothing per frame.
 *
 * Threading: the server's JS thread.
 * @module
 */
import { ConnectionClosedError, ProtocolError } from "../../errors.ts";
import type { NetAddress, TcpConn } from "../../transport/tcp/tcp.ts";
import { ECLOSE, ELIMIT, EREQUEST, ERESPONSE } from "../errors.ts";
import type { Dispatcher, Logger, ResponseSink, ServerCall } from "../protocol/dispatch.ts";
import { encodeFrameTo, FrameParser } from "../protocol/frame.ts";
import { encodeResponseFrameTo } from "../protocol/frame_fast.ts";
import { EndNotice } from "../../util/end_notice.ts";
import type { Int64, RpcMeta, RpcRequestMeta, RpcResponseMeta } from "../protocol/rpc_meta.ts";
import { FABRIC_SERVICE } from "../session/handshake/hello.ts";
import { answerStreamCall } from "../stream/accept.ts";
import { StreamTable } from "../stream/stream_table.ts";

/** Room kept for an answer's RpcMeta (headers, trailers) under `maxBodySize` (at most 1/16). */
const ANSWER_META_ROOM = 64 * 1024;

/** The per-connection limits (validated by the server's options schema). */
export interface ConnectionLimits {
  readonly maxBodySize: number;
  readonly maxInflightPerConnection: number;
  readonly writeHighWaterMark: number;
  readonly writeLowWaterMark: number;
  /** 0 = none. */
  readonly headerTimeoutMs: number;
  /** 0 = none. */
  readonly idleTimeoutMs: number;
  /** 0 = none. */
  readonly stallTimeoutMs: number;
}

/** What a connection needs of its server. */
export interface ConnectionHost {
  readonly dispatcher: Dispatcher;
  readonly logger: Logger;
  /** The connection is gone (closed by either side). */
  connectionClosed(c: ServerConnection): void;
  /** The peer broke the protocol: count it, log it once; the connection closes itself. */
  protocolError(c: ServerConnection, e: ProtocolError): void;
  /** A request was refused with ELIMIT (too many calls in flight on its connection). */
  callRefused(c: ServerConnection): void;
}

/** How long answers already queued may take to flush before a server-side close. */
const CLOSE_FLUSH_MS = 1000;

const EMPTY = new Uint8Array(0);

function discard(): void {}

/** `host:port`, with brackets for IPv6. */
export function addr(a: NetAddress): string {
  return a.host.includes(":") ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/** Builds the meta of an error answer; reused (encoded at once, never kept). */
function errorMeta(): { meta: RpcMeta; response: RpcResponseMeta } {
  const response: RpcResponseMeta = { errorCode: 0, errorText: "" };
  return { meta: { correlationId: 0, response }, response };
}

/**
 * Writes one error answer for `correlationId` into `conn` (shared scratch meta), with the
 * response headers, trailers and error details of `call` when given.
 */
const scratch = errorMeta();
export function writeError(
  conn: TcpConn,
  id: Int64,
  code: number,
  text: string,
  call?: ServerCall,
): void {
  const m = scratch.meta;
  m.correlationId = id;
  scratch.response.errorCode = code;
  scratch.response.errorText = text;
  if (call !== undefined) {
    m.userFields = call.responseUserFields;
    m.trailers = call.responseTrailers;
    m.errorDetails = call.errorDetails;
  }
  try {
    encodeFrameTo(conn, m, EMPTY);
  } finally {
    m.userFields = m.trailers = m.errorDetails = undefined;
  }
}

/**
 * Says why (an error answer with `correlation_id` 0, see the module doc), flushes what is queued
 * (bounded) and closes. Reading stops at once.
 */
export function closeWithReason(conn: TcpConn, code: number, text: string): void {
  conn.onDataLent(discard);
  conn.pauseReading();
  writeError(conn, 0, code, text);
  void conn.end(CLOSE_FLUSH_MS);
}

/** One accepted connection: parses frames in, writes answers out. */
export class ServerConnection implements ResponseSink {
  readonly peer: NetAddress;
  readonly #conn: TcpConn;
  readonly #host: ConnectionHost;
  readonly #parser: FrameParser;
  readonly #maxInflight: number;
  /** The largest answer body this side sends: its own `maxBodySize` less room for the meta. */
  readonly #maxAnswer: number;
  readonly #metaRoom: number;
  /** Its end: the fabric session negotiated on it listens; a signal for handlers that ask. */
  readonly lifetime: EndNotice = new EndNotice();
  /** Its brpc streams (`rpc/stream/`): handlers accept them with `acceptStream(ctx)`. */
  readonly streams: StreamTable;
  /** Arrival time of the chunk being parsed (one clock read per chunk, not per call). */
  #receivedAt = 0;
  /** When the frame still incomplete began arriving (0 = none incomplete). */
  #partialSince = 0;
  /** Calls dispatched and not answered yet. */
  #inflight = 0;
  /**
   * Of those, open `verbus.Fabric/Watch` calls: each waits for the end of a fabric session (the
   * host keeps one per session), so they do not count against `maxInflightPerConnection` — with
   * a cap of 1 a fabric client's Watch would refuse every TCP call of its connection.
   */
  #watches = 0;
  /** Since when (sweep time) the output queue has been over its high-water mark (0 = it is not). */
  #blockedSince = 0;
  /**
   * Idle counts from the last byte received or the last sweep that saw work going on, whichever
   * is later: a call that outlasted the idle timeout must not get its connection closed the
   * moment it is answered (the client's next call would race the close).
   */
  #busyAt = 0;
  /** An answer went out since the last sweep (a store per answer, no clock read). */
  #answered = false;
  /**
   * The previous sweep found it idle already. A sweep running late after a stalled event loop
   * may find a connection "idle" whose bytes wait unread in the socket: it closes only on the
   * second sweep in a row, after the loop has read what was pending.
   */
  #idleSeen = false;
  #closing = false;
  // Reused for every answer: encoded at once, never kept.
  readonly #okMeta: RpcMeta = { correlationId: 0 };

  constructor(conn: TcpConn, host: ConnectionHost, limits: ConnectionLimits) {
    this.#conn = conn;
    this.#host = host;
    this.peer = conn.remoteAddress;
    this.#maxInflight = limits.maxInflightPerConnection;
    this.#metaRoom = Math.min(ANSWER_META_ROOM, limits.maxBodySize >>> 4);
    this.#maxAnswer = limits.maxBodySize - this.#metaRoom;
    this.#receivedAt = Date.now();
    const dispatcher = host.dispatcher;
    const streams = this.streams = new StreamTable(conn, addr(this.peer));
    this.#parser = new FrameParser((meta, payload, attachment) => {
      const watch = isWatch(meta);
      if (!watch && this.#inflight - this.#watches >= this.#maxInflight) this.#refuse(meta);
      else {
        this.#inflight++;
        if (watch) this.#watches++;
        dispatcher.dispatch(meta, payload, attachment, this, this.#receivedAt);
      }
      // The peer is not reading its answers: take no more requests until they drained.
      if (conn.writeBlocked) this.#parser.pause();
    }, { maxBodySize: limits.maxBodySize, onStreamFrame: (m, p) => streams.onFrame(m, p) });
    conn.setWriteLimits(limits.writeHighWaterMark, limits.writeLowWaterMark);
    conn.onWritable(() => queueMicrotask(this.#resume));
    conn.onClose((err) => {
      streams.closeAll(err);
      host.connectionClosed(this);
      this.lifetime.end(new ConnectionClosedError(`connection from ${addr(this.peer)} closed`));
    });
    // Lent chunks (brpc's RDMA receive blocks): the parser copies out only what outlives the call.
    conn.onDataLent((chunk, lent) => {
      const now = this.#receivedAt = Date.now();
      const parser = this.#parser;
      const before = parser.frames;
      try {
        parser.push(chunk, lent);
      } catch (e) {
        this.#broken(e);
        return;
      }
      // A frame left incomplete: since now if it began in this chunk, else since it began.
      if (parser.bufferedBytes === 0) this.#partialSince = 0;
      else if (this.#partialSince === 0 || parser.frames !== before) this.#partialSince = now;
    });
  }

  /** Parses what was held while the output queue was over its high-water mark. */
  readonly #resume = (): void => {
    if (this.#conn.closed || this.#conn.writeBlocked) return;
    this.streams.writable();
    const parser = this.#parser;
    try {
      parser.resume();
    } catch (e) {
      this.#broken(e);
      return;
    }
    if (parser.bufferedBytes === 0) this.#partialSince = 0;
    else if (this.#partialSince === 0) this.#partialSince = Date.now();
  };

  #broken(e: unknown): void {
    if (e instanceof ProtocolError) this.#host.protocolError(this, e);
    else this.#host.logger.warn(`connection from ${addr(this.peer)}: ${String(e)}; closing it`);
    // Answers already produced still go out (bounded wait), then the reason, then the close.
    this.#closeWith(EREQUEST, `protocol error: ${e instanceof Error ? e.message : String(e)}`);
  }

  #closeWith(code: number, text: string): void {
    if (this.#closing) return;
    this.#closing = true;
    closeWithReason(this.#conn, code, text);
  }

  /** Answers a request over the per-connection limit with ELIMIT, without running it. */
  #refuse(meta: RpcMeta): void {
    this.#host.callRefused(this);
    const req: RpcRequestMeta | undefined = meta.request;
    writeError(
      this.#conn,
      meta.correlationId ?? 0,
      ELIMIT,
      `reached max_inflight_per_connection=${this.#maxInflight}` +
        (req ? ` (refused ${req.serviceName}.${req.methodName})` : ""),
    );
  }

  get signal(): AbortSignal {
    return this.lifetime.signal;
  }

  /** Whether its output queue is over the high-water mark (not reading now). */
  get writeBlocked(): boolean {
    return this.#conn.writeBlocked;
  }

  /** Calls dispatched on this connection and not answered yet. */
  get inflight(): number {
    return this.#inflight;
  }

  /**
   * Called by the server's sweep with the time: closes the connection (saying why) when a frame
   * has been incomplete for `headerTimeoutMs`, or when it has been idle for `idleTimeoutMs`.
   * Returns the kind of timeout, or `null`.
   */
  expired(now: number, limits: ConnectionLimits): "header" | "idle" | "stall" | null {
    const conn = this.#conn;
    if (this.#closing || conn.closed) return null;
    if (conn.writeBlocked) {
      // The peer does not read its answers: what is queued is released when it gives up.
      if (this.#blockedSince === 0) this.#blockedSince = now;
      const s = limits.stallTimeoutMs;
      if (s > 0 && now - this.#blockedSince >= s) {
        this.#closing = true;
        this.#host.logger.warn(
          `closing connection from ${addr(this.peer)}: it has not read its answers for ${s} ms ` +
            `(${conn.pendingWriteBytes} bytes queued)`,
        );
        conn.close();
        return "stall";
      }
      return null;
    }
    this.#blockedSince = 0;
    if (this.#parser.paused) return null;
    const h = limits.headerTimeoutMs;
    if (h > 0 && this.#partialSince !== 0 && now - this.#partialSince >= h) {
      this.#closeWith(
        ECLOSE,
        `frame incomplete after ${h} ms (${this.#parser.bufferedBytes} bytes of it buffered)`,
      );
      return "header";
    }
    const i = limits.idleTimeoutMs;
    if (
      this.#answered || this.#inflight !== 0 || conn.pendingWriteBytes !== 0 ||
      this.#partialSince !== 0 || this.lifetime.watched || this.streams.size !== 0
    ) {
      this.#answered = false;
      this.#busyAt = now;
      this.#idleSeen = false;
      return null;
    }
    if (i > 0 && now - Math.max(this.#receivedAt, this.#busyAt) >= i) {
      if (!this.#idleSeen) {
        this.#idleSeen = true;
        return null;
      }
      this.#closeWith(ECLOSE, `idle for ${i} ms`);
      return "idle";
    }
    this.#idleSeen = false;
    return null;
  }

  send(call: ServerCall, response: Uint8Array, errorCode: number, errorText: string): void {
    this.#inflight--;
    this.#answered = true;
    if (this.#watches > 0 && isWatch(call.meta)) this.#watches--;
    const conn = this.#conn;
    if (conn.closed) return;
    // A call that opened a stream is answered inside a frame of that stream, as brpc does.
    const st = call.meta.streamSettings;
    if (st !== undefined && answerStreamCall(this.streams, call, response, errorCode, errorText)) {
      return;
    }
    const body = response.length + (call.responseAttachment?.length ?? 0);
    if (errorCode === 0 && body > this.#maxAnswer) {
      // A peer with the same limit would refuse the frame and break the connection, failing
      // every call on it: this answer alone fails, naming the sizes.
      errorCode = ERESPONSE;
      errorText = `the answer (${body} bytes) exceeds max_body_size ${
        this.#maxAnswer + this.#metaRoom
      } less ${this.#metaRoom} bytes for its meta`;
    }
    if (errorCode === 0) {
      const meta = this.#okMeta;
      meta.correlationId = call.correlationId;
      const headers = call.responseUserFields, trailers = call.responseTrailers;
      try {
        // The meta of a plain answer is written in place (no RpcMeta encode); odd ids and
        // answers with headers or trailers take the general encoder.
        if (
          headers === undefined && trailers === undefined &&
          encodeResponseFrameTo(conn, meta.correlationId, response, call.responseAttachment)
        ) {
          return;
        }
        meta.userFields = headers;
        meta.trailers = trailers;
        encodeFrameTo(conn, meta, response, call.responseAttachment);
      } catch (e) {
        writeError(conn, call.correlationId, ERESPONSE, `cannot frame the response: ${String(e)}`);
      } finally {
        meta.userFields = meta.trailers = undefined;
      }
    } else writeError(conn, call.correlationId, errorCode, errorText, call);
  }

  /** Flushes queued answers, then closes (bounded by `timeoutMs`). */
  end(timeoutMs: number): Promise<void> {
    return this.#conn.end(timeoutMs);
  }

  close(): void {
    this.#conn.close();
  }
}

/** True for a `verbus.Fabric/Watch` request. */
function isWatch(meta: RpcMeta): boolean {
  const r = meta.request;
  return r !== undefined && r.methodName === "Watch" && r.serviceName === FABRIC_SERVICE;
}
