/**
 * {@link PipeCalls}: the calls that open streams on a fabric session, carried by the session's
 * stream pipe itself (`stream_ring.ts`) instead of the TCP connection. The opening call is the
 * very baidu_std request frame TCP would carry (`RpcMeta` with `stream_settings`, the request
 * headers, `timeout_ms`, `log_id`, `request_id`), written into the pipe between the stream
 * frames; the server dispatches it with its session's dispatcher, the handler accepts the stream
 * on the pipe's table, and the answer comes back as on TCP: wrapped in a DATA frame to the
 * client's stream (`answerStreamCall`, so it precedes the stream's own frames), or as a plain
 * answer frame when no stream could be paired. So an open costs what a call on the session costs
 * (no TCP round trip, no wake-up of a session idle on the other path), and the protocol is
 * brpc's Streaming RPC unchanged: the pipe exists only between verbus peers (a stock brpc peer
 * has no fabric session; its streams open on TCP as before).
 *
 * Client side: {@link call} sends the frame and waits for the answer (by correlation id, in a
 * range of its own above 2^40), up to its timeout; the session's end rejects what waits. Server
 * side, once {@link serve} gave it the session's dispatcher: request frames are dispatched with
 * the pipe as their sink, at most {@link MAX_PIPE_CALLS_IN_FLIGHT} at once (ELIMIT past it). A
 * frame of the wrong kind for the side (a request at a client, an answer at a server) breaks the
 * pipe.
 *
 * Threading: the JS thread of the session.
 * @module
 */
import { ConnectionClosedError, TimeoutError } from "../../errors.ts";
import { answerError, ELIMIT } from "../errors.ts";
import type { CallOptions, CallResult } from "../tcp/channel_call.ts";
import { type Dispatcher, type ResponseSink, ServerCall } from "../protocol/dispatch.ts";
import { encodeFrame } from "../protocol/frame.ts";
import type { RpcMeta } from "../protocol/rpc_meta.ts";
import type { NetAddress } from "../../transport/tcp/tcp.ts";
import type { EndNotice } from "../../util/end_notice.ts";
import { answerStreamCall } from "./accept.ts";
import type { StreamConn, StreamTable } from "./stream_table.ts";

const EMPTY = new Uint8Array(0);

/** The first correlation id of a pipe call (far from the TCP channel's ids). */
const FIRST_ID = 2 ** 40;

/** An opening call's timeout when the caller gave none (the TCP channel's default). */
export const DEFAULT_OPEN_TIMEOUT_MS = 5000;

/**
 * Opening calls a server runs at once for one session's pipe (as `maxInflightPerConnection`'s
 * default bounds a TCP connection); past it a call is answered ELIMIT, not run.
 */
export const MAX_PIPE_CALLS_IN_FLIGHT = 1024;

interface Pending {
  readonly service: string;
  readonly method: string;
  readonly timer: ReturnType<typeof setTimeout>;
  resolve(r: CallResult): void;
  reject(e: unknown): void;
}

/** What a server's pipe dispatches with. */
export interface PipeServing {
  readonly dispatcher: Dispatcher;
  /** The client (reported to handlers). */
  readonly peer: NetAddress;
  /** The session's end (a handler's `ctx.signal`). */
  readonly lifetime: EndNotice;
}

/** The opening calls of one session's stream pipe. See the module documentation. */
export class PipeCalls {
  readonly #conn: StreamConn;
  readonly #table: StreamTable;
  readonly #where: string;
  readonly #pending = new Map<number, Pending>();
  #nextId = FIRST_ID;
  #sink: (ResponseSink & { streams: StreamTable }) | null = null;
  #dispatcher: Dispatcher | null = null;
  /** Server: opening calls dispatched and not answered yet. */
  #inflight = 0;
  #ended: string | null = null;

  /** `conn` is the pipe (frames are written to it), `table` its streams, `where` the peer. */
  constructor(conn: StreamConn, table: StreamTable, where: string) {
    this.#conn = conn;
    this.#table = table;
    this.#where = where;
  }

  /** Opening calls waiting for their answer. */
  get waiting(): number {
    return this.#pending.size;
  }

  /**
   * Client: sends the opening call of `service.method` with `request` and the encoded stream
   * `settings`, and resolves with its answer. Rejects with an `RpcError` (an error answer), a
   * `TimeoutError`, or a `ConnectionClosedError` when the session ended first.
   */
  call(
    service: string,
    method: string,
    request: Uint8Array,
    settings: Uint8Array,
    options: Omit<CallOptions, "streamSettings">,
  ): Promise<CallResult> {
    if (this.#ended !== null) return Promise.reject(this.#closed(service, method));
    const id = this.#nextId++;
    const timeoutMs = options.timeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS;
    const meta: RpcMeta = {
      request: {
        serviceName: service,
        methodName: method,
        logId: options.logId,
        requestId: options.requestId,
        timeoutMs,
      },
      correlationId: id,
      streamSettings: settings,
      userFields: options.userFields as Map<string, string> | undefined,
    };
    const frame = encodeFrame(meta, request, options.attachment);
    return new Promise<CallResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(
          new TimeoutError(
            `call ${service}.${method} to ${this.#where} timed out after ${timeoutMs} ms`,
            { service, method, timeoutMs },
          ),
        );
      }, timeoutMs);
      this.#pending.set(id, { service, method, timer, resolve, reject });
      this.#conn.write(frame);
    });
  }

  /**
   * An answer for one of {@link call}'s calls (plain, or unwrapped from a stream's first DATA
   * frame): settles it and returns true; false when it is none of ours (a late one is dropped).
   */
  answer(meta: RpcMeta, payload: Uint8Array, attachment: Uint8Array): boolean {
    const id = meta.correlationId;
    if (typeof id !== "number" || id < FIRST_ID) return false;
    const p = this.#pending.get(id);
    if (p === undefined) return true; // timed out already
    this.#pending.delete(id);
    clearTimeout(p.timer);
    const e = answerError(meta, p.service, p.method);
    if (e !== undefined) {
      p.reject(e);
      return true;
    }
    const result: CallResult = { response: payload, attachment };
    if (meta.userFields !== undefined) result.userFields = meta.userFields;
    if (meta.trailers !== undefined) result.trailers = meta.trailers;
    p.resolve(result);
    return true;
  }

  /** Server: request frames are dispatched from now on. */
  serve(serving: PipeServing): void {
    const table = this.#table, conn = this.#conn;
    const done = () => this.#inflight--;
    this.#sink = {
      peer: serving.peer,
      lifetime: serving.lifetime,
      get signal() {
        return serving.lifetime.signal;
      },
      streams: table,
      send(call: ServerCall, response: Uint8Array, errorCode: number, errorText: string): void {
        done();
        if (conn.closed) return;
        // Answered inside a frame of the stream it opened, as on TCP; plainly when none paired.
        const st = call.meta.streamSettings;
        if (st !== undefined && answerStreamCall(table, call, response, errorCode, errorText)) {
          return;
        }
        const meta: RpcMeta = {
          correlationId: call.correlationId,
          userFields: call.responseUserFields,
          trailers: call.responseTrailers,
        };
        if (errorCode !== 0) {
          meta.response = { errorCode, errorText };
          meta.errorDetails = call.errorDetails;
        }
        const ok = errorCode === 0;
        conn.write(encodeFrame(meta, ok ? response : EMPTY, ok ? call.responseAttachment : EMPTY));
      },
    };
    this.#dispatcher = serving.dispatcher;
  }

  /**
   * One baidu_std frame out of the pipe. Returns why it breaks the pipe (a request at a client,
   * an answer at a server, a call frame the side does not take), or undefined.
   */
  onFrame(meta: RpcMeta, payload: Uint8Array, attachment: Uint8Array): string | undefined {
    const dispatcher = this.#dispatcher, sink = this.#sink;
    if (meta.request !== undefined) {
      if (dispatcher === null || sink === null) return "a request frame at the client";
      if (meta.streamSettings === undefined) return "a request frame that opens no stream";
      this.#inflight++;
      if (this.#inflight <= MAX_PIPE_CALLS_IN_FLIGHT) {
        dispatcher.dispatch(meta, payload, attachment, sink);
      } else {
        const why = `${MAX_PIPE_CALLS_IN_FLIGHT} opening calls of this session are running`;
        sink.send(new ServerCall(meta, attachment, sink, Date.now()), EMPTY, ELIMIT, why);
      }
      return undefined;
    }
    if (dispatcher !== null) return "an answer frame at the server";
    this.answer(meta, payload, attachment);
    return undefined;
  }

  /** The session ended: every call waiting fails. Safe twice. */
  end(reason: string): void {
    if (this.#ended !== null) return;
    this.#ended = reason;
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(this.#closed(p.service, p.method));
    }
    this.#pending.clear();
  }

  #closed(service: string, method: string): ConnectionClosedError {
    return new ConnectionClosedError(
      `call ${service}.${method} to ${this.#where}: the fabric session ended (${this.#ended})`,
      { context: { service, method } },
    );
  }
}
