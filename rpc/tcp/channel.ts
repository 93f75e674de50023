/**
 * The baidu_std client over TCP. A {@link Channel} keeps one connection to one server and runs
 * any number of calls on it at once (matched by `correlation_id`). A stock brpc server can be
 * called with it.
 *
 * Failure model: a call's local timer rejects it with `TimeoutError` (code TIMEOUT) and its late
 * answer is dropped; a broken connection rejects every pending call with `ConnectionClosedError`
 * (code CONNECTION_CLOSED) and the next call reconnects; an answer with a non-zero `error_code`
 * rejects with `RpcError` (code RPC_ERROR).
 *
 * Threading: a channel belongs to the JS thread that created it.
 * @module
 */
import type { z } from "zod";
import { ClosedError, VerbusError } from "../../errors.ts";
import type { TcpConn } from "../../transport/tcp/tcp.ts";
import { connKind, dialChannel } from "../brpc/brpc_rdma.ts";
import { answerError, brpcErrorName } from "../errors.ts";
import { parseOptions } from "../../util/options.ts";
import { ChannelOptionsSchema, MAX_TIMER, parseAddress } from "./channel_options.ts";
import { encodeFrameTo, FrameParser } from "../protocol/frame.ts";
import { encodeRequestFrameTo, RequestMetaCache } from "../protocol/frame_fast.ts";
import type { RpcMeta, RpcRequestMeta } from "../protocol/rpc_meta.ts";
import { StreamTable } from "../stream/stream_table.ts";
import {
  type CallOptions,
  type CallResult,
  type ChannelCall,
  connectionLost,
  copyChannelCall,
  newChannelCall,
  PendingCall,
  promiseOf,
  type TcpCallResult,
} from "./channel_call.ts";
import { PendingCalls } from "./pending_calls.ts";

export type { CallOptions, CallResult, TcpCallResult };

/** Told how long each call made through `_callAsClient` took (ms), at its answer. */
export type CallObserver = (tookMs: number) => void;

const EMPTY = new Uint8Array(0);

export { ChannelOptionsSchema };
export type { ChannelOptions } from "./channel_options.ts";
import type { ChannelOptions } from "./channel_options.ts";

/** A client connection to one server. Create with {@link connect}. */
export class Channel {
  /** The server's host. */
  readonly host: string;
  /** The server's port. */
  readonly port: number;
  readonly #options: z.output<typeof ChannelOptionsSchema>;
  readonly #pending: PendingCalls;
  // Reused for every request: encoded at once, never kept.
  readonly #req: RpcRequestMeta = { serviceName: "", methodName: "" };
  readonly #meta: RpcMeta = { request: this.#req, correlationId: 0 };
  /** Encoded request fields per method: plain calls encode no meta of their own. */
  readonly #prefixes = new RequestMetaCache();
  /** The call being started, refilled per call (no object per call; see {@link ChannelCall}). */
  readonly #call: ChannelCall = newChannelCall();
  #conn: TcpConn | null = null;
  /** The streams of the current connection (`rpc/stream/`). */
  #streams: StreamTable | null = null;
  /** Told of every answer of a call made for a Client (the Client's counters). */
  #observer: CallObserver | null = null;
  /** `performance.now()` of the read being parsed (only while an observer is set). */
  #readAt = 0;
  /** The reason a server gave for closing the connection (an error answer to id 0). */
  #lastWord: string | undefined = undefined;
  #connecting: Promise<TcpConn> | null = null;
  #nextId = 1;
  #closed = false;
  readonly #defaultTimeout: number;
  /** `performance.now()` read once per burst of calls (reset on the next microtask), or -1. */
  #clock = -1;
  readonly #resetClock = (): void => {
    this.#clock = -1;
  };

  /** @internal Use {@link connect}. */
  constructor(host: string, port: number, options: z.output<typeof ChannelOptionsSchema>) {
    this.host = host;
    this.port = port;
    this.#options = options;
    this.#defaultTimeout = options.timeoutMs;
    this.#pending = new PendingCalls(options.timeoutMs, `${host}:${port}`);
  }

  /** The time for deadlines: one clock read serves every call issued in the same microtask run. */
  #now(): number {
    if (this.#clock < 0) {
      this.#clock = performance.now();
      queueMicrotask(this.#resetClock);
    }
    return this.#clock;
  }

  /** Calls waiting for an answer. */
  get pendingCalls(): number {
    return this.#pending.size;
  }

  /** Whether a connection is up right now. */
  get connected(): boolean {
    return this.#conn !== null && !this.#conn.closed;
  }

  /** What carries the connection: "brpc-rdma" / "brpc-ubring" (brpc's mode established) or "tcp". */
  get transport(): "brpc-rdma" | "brpc-ubring" | "tcp" {
    return connKind(this.#conn);
  }

  /**
   * Calls `service.method` with `request` (copied; the caller keeps it). Resolves with the answer;
   * rejects with `RpcError`, `TimeoutError`, `ConnectionClosedError`, `ConnectFailedError` or
   * `ClosedError` (channel closed). Reconnects first if the connection is down.
   */
  call(
    service: string,
    method: string,
    request: Uint8Array,
    options?: CallOptions,
  ): Promise<CallResult> {
    return this.#start(this.#fill(service, method, request, options, false));
  }

  /**
   * @internal For `Client`: {@link call}, resolving with a {@link TcpCallResult} (no result of
   * its own to build), and reporting each answer's latency to the {@link _observe} callback.
   */
  _callAsClient(
    service: string,
    method: string,
    request: Uint8Array,
    options: CallOptions | undefined,
  ): Promise<TcpCallResult> {
    return this.#start(this.#fill(service, method, request, options, true));
  }

  /** The channel's one call record, refilled with this call (see {@link ChannelCall}). */
  #fill(
    service: string,
    method: string,
    request: Uint8Array,
    options: CallOptions | undefined,
    asClient: boolean,
  ): ChannelCall {
    const c = this.#call;
    c.service = service;
    c.method = method;
    c.request = request;
    c.options = options;
    c.asClient = asClient;
    return c;
  }

  /** Sends `c` now, or after connecting (then a copy: the reused record is refilled meanwhile). */
  #start<T extends CallResult>(c: ChannelCall): Promise<T> {
    if (this.#closed) return Promise.reject(new ClosedError("channel"));
    const conn = this.#conn;
    if (conn !== null && !conn.closed) return this.#send<T>(conn, c);
    return this.#reconnectAndSend<T>(copyChannelCall(c));
  }

  /** @internal Sets the callback told of every answer of a Client's call (see `_callAsClient`). */
  _observe(observer: CallObserver | null): void {
    this.#observer = observer;
  }

  async #reconnectAndSend<T extends CallResult>(c: ChannelCall): Promise<T> {
    const conn = await (this.#connecting ??= this.#open());
    if (this.#closed) throw new ClosedError("channel");
    return this.#send<T>(conn, c);
  }

  /** @internal Opens the first connection (used by {@link connect}). */
  async _open(): Promise<void> {
    await (this.#connecting ??= this.#open());
  }

  async #open(): Promise<TcpConn> {
    try {
      const conn = await dialChannel(this.host, this.port, this.#options);
      if (this.#closed) {
        conn.close();
        throw new ClosedError("channel");
      }
      this.#attach(conn);
      return conn;
    } finally {
      this.#connecting = null;
    }
  }

  #attach(conn: TcpConn): void {
    this.#conn = conn;
    this.#lastWord = undefined;
    let broken: VerbusError | undefined;
    const streams = this.#streams = new StreamTable(
      conn,
      `${this.host}:${this.port}`,
      this.#onAnswer,
    );
    const parser = new FrameParser(
      (meta, payload, attachment) => this.#answer(meta, payload, attachment),
      // #answer reads the id and the response field at once and keeps neither.
      {
        maxBodySize: this.#options.maxBodySize,
        reuseAnswerMeta: true,
        onStreamFrame: (m, p) => streams.onFrame(m, p),
      },
    );
    conn.onWritable(() => streams.writable());
    // Lent chunks (brpc's RDMA receive blocks): the parser copies out only what outlives the call.
    conn.onDataLent((chunk, lent) => {
      if (this.#observer !== null) this.#readAt = performance.now();
      try {
        parser.push(chunk, lent);
      } catch (e) {
        broken = e as VerbusError;
        this.#options.logger?.warn(`channel to ${this.host}:${this.port}: ${e}; reconnecting`);
        conn.close();
      }
    });
    conn.onClose((err) => {
      streams.closeAll(broken ?? err);
      if (this.#conn === conn) this.#conn = null;
      if (this.#pending.size === 0) return;
      const where = `${this.host}:${this.port}`;
      this.#pending.rejectAll(
        connectionLost(this.#pending.size, where, broken ?? err, this.#lastWord),
      );
    });
  }

  /** Frames `c` into `conn`'s output and records it as pending (reads `c` before returning). */
  #send<T extends CallResult>(conn: TcpConn, c: ChannelCall): Promise<T> {
    const options = c.options;
    let timeoutMs = this.#defaultTimeout;
    const req = this.#req;
    let attachment: Uint8Array = EMPTY;
    if (options !== undefined) {
      if (options.timeoutMs !== undefined) {
        timeoutMs = options.timeoutMs;
        if (!(timeoutMs > 0 && timeoutMs <= MAX_TIMER) || !Number.isInteger(timeoutMs)) {
          return Promise.reject(
            new VerbusError(
              "INVALID_OPTIONS",
              `invalid call options: timeoutMs: expected an integer in 1..${MAX_TIMER}, got ${timeoutMs}`,
            ),
          );
        }
      }
      req.logId = options.logId;
      req.requestId = options.requestId;
      this.#meta.userFields = options.userFields as Map<string, string> | undefined;
      this.#meta.streamSettings = options.streamSettings;
      attachment = options.attachment ?? EMPTY;
    } else {
      req.logId = req.requestId = undefined;
      this.#meta.userFields = this.#meta.streamSettings = undefined;
    }
    const id = this.#nextId++;
    if (this.#nextId > Number.MAX_SAFE_INTEGER) this.#nextId = 1;
    const p = new PendingCall(this.#pending, id, c, timeoutMs, this.#now() + timeoutMs);
    try {
      const m = this.#meta;
      if (
        req.logId === undefined && req.requestId === undefined && !m.userFields && !m.streamSettings
      ) {
        const prefix = this.#prefixes.prefix(c.service, c.method, timeoutMs);
        encodeRequestFrameTo(conn, prefix, id, c.request, attachment);
      } else {
        req.serviceName = c.service;
        req.methodName = c.method;
        req.timeoutMs = timeoutMs;
        this.#meta.correlationId = id;
        encodeFrameTo(conn, this.#meta, c.request, attachment);
      }
    } catch (e) {
      return Promise.reject(e);
    }
    const promise = promiseOf<T>(p);
    this.#pending.add(p);
    return promise;
  }

  /** @internal The streams of the connection (connecting first if it is down). */
  async _streams(): Promise<StreamTable> {
    if (this.#closed) throw new ClosedError("channel");
    if (this.#conn === null || this.#conn.closed) await (this.#connecting ??= this.#open());
    return this.#streams!;
  }

  readonly #onAnswer = (m: RpcMeta, p: Uint8Array, a: Uint8Array) => this.#answer(m, p, a);

  /** @internal Where a stream table hands the answers of opening calls (a fabric session's too). */
  get _answerSink(): (m: RpcMeta, p: Uint8Array, a: Uint8Array) => void {
    return this.#onAnswer;
  }

  #answer(meta: RpcMeta, payload: Uint8Array, attachment: Uint8Array): void {
    const id = meta.correlationId;
    if (typeof id !== "number") return; // not one of ours
    const p = this.#pending.take(id);
    if (p === undefined) {
      // Timed out already: drop the late answer. Id 0 (never a call's) is a verbus server's
      // reason for closing the connection.
      if (id === 0 && meta.response?.errorCode) {
        this.#lastWord = `${brpcErrorName(meta.response.errorCode)}: ${
          meta.response.errorText ?? ""
        }`;
      }
      return;
    }
    const e = answerError(meta, p.service, p.method);
    if (e !== undefined) {
      p.reject(e);
    } else if (meta.userFields !== undefined || meta.trailers !== undefined) {
      const r: CallResult = { response: payload, attachment };
      if (meta.userFields !== undefined) r.userFields = meta.userFields;
      if (meta.trailers !== undefined) r.trailers = meta.trailers;
      if (!p.asClient) return p.resolve(r);
      p.resolve({ ...r, path: "TCP_FALLBACK", fabric: "tcp" } as TcpCallResult);
      this.#observer?.(this.#readAt - (p.deadline - p.timeoutMs));
    } else if (p.asClient) {
      const result: TcpCallResult = {
        response: payload,
        attachment,
        path: "TCP_FALLBACK",
        fabric: "tcp",
      };
      p.resolve(result);
      // Latency from the send burst's clock to this read's: no clock read per call.
      this.#observer?.(this.#readAt - (p.deadline - p.timeoutMs));
    } else {
      p.resolve({ response: payload, attachment });
    }
  }

  /**
   * Closes the connection; pending calls reject with `ClosedError` (code CLOSED), later calls too.
   * Safe to call more than once.
   */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#pending.rejectAll(new ClosedError("channel"));
    const conn = this.#conn;
    this.#conn = null;
    conn?.close();
    return Promise.resolve();
  }

  /** Same as {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Same as {@link close} (synchronous: the connection is closed on return). */
  [Symbol.dispose](): void {
    void this.close();
  }
}

/**
 * Validates the address and options (a `VerbusError` code `INVALID_OPTIONS` names each bad
 * field), connects, and resolves with the {@link Channel}. Rejects with `ConnectFailedError`
 * (code CONNECT_FAILED) when the server cannot be reached.
 */
export async function connect(
  address: string | { host: string; port: number },
  options: ChannelOptions = {},
): Promise<Channel> {
  const a = parseAddress(address);
  const o = parseOptions(ChannelOptionsSchema, options, "invalid connect() options");
  const ch = new Channel(a.host, a.port, o);
  await ch._open();
  return ch;
}
