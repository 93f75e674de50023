/**
 * Service dispatch, independent of what carries the bytes: a decoded request (meta, payload,
 * attachment) goes in, a response goes out through a {@link ResponseSink}. The TCP server is one
 * sink; a fabric (shared memory, RDMA, URMA) carrying calls after the handshake is another, with
 * the same registry, the same {@link CallContext} and the same error mapping:
 * no such service → ENOSERVICE, no such method → ENOMETHOD, handler threw `RpcError` → its code
 * and text, anything else thrown → EINTERNAL with the text `internal error (id <16 hex>)` (the
 * error itself, stack included, is logged with that id and never sent), deadline passed →
 * ERPCTIMEDOUT, server stopping → ELOGOFF.
 *
 * Threading: a dispatcher and its sinks belong to one JS thread.
 * @module
 */
import type { NetAddress } from "../../transport/tcp/tcp.ts";
import {
  EINTERNAL,
  ELOGOFF,
  ENOMETHOD,
  ENOSERVICE,
  EREQUEST,
  ERESPONSE,
  ERPCTIMEDOUT,
  RpcError,
} from "../errors.ts";
import type { ErrorDetail, Int64, RpcMeta } from "./rpc_meta.ts";
import { borrowsItsRequest } from "./borrow.ts";
import { internalErrorId, internalErrorText } from "./internal_error.ts";

/** What a handler learns about its call, and how it sets the response attachment. */
export interface CallContext {
  /** Full service name as sent, e.g. `example.EchoService`. */
  readonly service: string;
  /** Method name, e.g. `Echo`. */
  readonly method: string;
  /** `log_id` of the request, if any. */
  readonly logId: Int64 | undefined;
  /** `request_id` of the request, if any. */
  readonly requestId: string | undefined;
  /** The client's timeout (`timeout_ms`), if it sent one. */
  readonly timeoutMs: number | undefined;
  /** Absolute deadline (`Date.now()` scale) derived from `timeout_ms`, if sent. */
  readonly deadline: number | undefined;
  /** The request attachment (empty if none). A view the handler may keep. */
  readonly requestAttachment: Uint8Array;
  /** Set to send an attachment with a successful response (ownership moves to verbus). */
  responseAttachment: Uint8Array | undefined;
  /** `user_fields` of the request, if any. */
  readonly userFields: ReadonlyMap<string, string> | undefined;
  /**
   * `user_fields` of the answer (brpc's `response_user_fields()`): set it to send them, with a
   * success or an error answer alike, on TCP and on a fabric (where they count against the
   * session's metadata bound). Ownership moves to verbus.
   */
  responseUserFields: Map<string, string> | undefined;
  /** Trailers of the answer (a verbus extension of RpcMeta that brpc skips); as above. */
  responseTrailers: Map<string, string> | undefined;
  /** The caller's address. */
  readonly peer: NetAddress;
  /** Aborted when the caller's connection closes (or, if a deadline was sent, when it passes). */
  readonly signal: AbortSignal;
  /** Aborted only when the caller's connection (or fabric session) ends — never by a deadline. */
  readonly connectionSignal: AbortSignal;
}

/**
 * A method implementation. `request` is a view the handler owns. Return (or resolve) the response
 * bytes, whose ownership moves to verbus; throw an `RpcError` to choose the error code.
 */
export type Handler = (request: Uint8Array, ctx: CallContext) => Uint8Array | Promise<Uint8Array>;

/** Services by full protobuf name, each mapping method names to handlers. */
export type ServiceMap = Readonly<Record<string, Readonly<Record<string, Handler>>>>;

/** Where responses go: one per connection (or per fabric session). */
export interface ResponseSink {
  /** The peer, reported to handlers. */
  readonly peer: NetAddress;
  /** Aborted when the peer goes away; `lifetime` says it as callbacks (util/end_notice.ts). */
  readonly signal: AbortSignal;
  readonly lifetime: import("../../util/end_notice.ts").EndNotice;
  /**
   * Sends the answer to `call`: `errorCode` 0 = success with `response` and
   * `call.responseAttachment`; otherwise an error answer with `errorText` and no body.
   */
  send(call: ServerCall, response: Uint8Array, errorCode: number, errorText: string): void;
}

/** Counters of a {@link Dispatcher}. */
export interface DispatchStats {
  /** Calls received. */
  calls: number;
  /** Calls answered with a non-zero error code. */
  errors: number;
  /** Calls whose handler has not finished yet. */
  inflight: number;
}

const EMPTY = new Uint8Array(0);

/**
 * One call being served. It is the handler's {@link CallContext}; its fields are read lazily
 * from the decoded meta, so a call costs one small object.
 */
export class ServerCall implements CallContext {
  /** The decoded request meta (owned by the call). */
  readonly meta: RpcMeta;
  readonly requestAttachment: Uint8Array;
  /** `Date.now()` when the request arrived. */
  readonly receivedAt: number;
  responseAttachment: Uint8Array | undefined = undefined;
  responseUserFields: Map<string, string> | undefined = undefined;
  responseTrailers: Map<string, string> | undefined = undefined;
  /** The details of the error answer (from the `RpcError` the handler threw), if any. */
  errorDetails: ErrorDetail[] | undefined = undefined;
  readonly #sink: ResponseSink;
  #signal: AbortSignal | undefined = undefined;

  constructor(meta: RpcMeta, attachment: Uint8Array, sink: ResponseSink, receivedAt: number) {
    this.meta = meta;
    this.requestAttachment = attachment;
    this.receivedAt = receivedAt;
    this.#sink = sink;
  }

  get service(): string {
    return this.meta.request!.serviceName;
  }

  get method(): string {
    return this.meta.request!.methodName;
  }

  get logId(): Int64 | undefined {
    return this.meta.request!.logId;
  }

  get requestId(): string | undefined {
    return this.meta.request!.requestId;
  }

  get timeoutMs(): number | undefined {
    return this.meta.request!.timeoutMs;
  }

  get deadline(): number | undefined {
    const t = this.meta.request!.timeoutMs;
    return t !== undefined && t > 0 ? this.receivedAt + t : undefined;
  }

  get userFields(): ReadonlyMap<string, string> | undefined {
    return this.meta.userFields;
  }

  /** The request's `correlation_id`, echoed in the answer. */
  get correlationId(): Int64 {
    return this.meta.correlationId ?? 0;
  }

  get peer(): NetAddress {
    return this.#sink.peer;
  }

  get connectionSignal(): AbortSignal {
    return this.#sink.signal;
  }

  /** Created on first use only, so calls that never look at it pay nothing. */
  get signal(): AbortSignal {
    if (this.#signal === undefined) {
      const conn = this.#sink.signal;
      const deadline = this.deadline;
      this.#signal = deadline === undefined
        ? conn
        : AbortSignal.any([conn, AbortSignal.timeout(Math.max(0, deadline - Date.now()))]);
    }
    return this.#signal;
  }

  /** The sink the answer goes to. */
  get sink(): ResponseSink {
    return this.#sink;
  }
}

/** Something to log problems to. Only `warn` is required. */
export interface Logger {
  warn(message: string): void;
  info?(message: string): void;
  error?(message: string): void;
}

/** Looks up handlers and runs calls; see the module doc for the error mapping. */
export class Dispatcher {
  readonly #services = new Map<string, Map<string, Handler>>();
  readonly #stats: DispatchStats = { calls: 0, errors: 0, inflight: 0 };
  readonly #logger: Logger;
  #stopping = false;
  #idle: (() => void)[] = [];
  // The last method looked up (consecutive calls usually name the same one; decoded names are
  // usually the same string objects, so the check is two pointer compares).
  #lastService = "";
  #lastMethod = "";
  #lastHandler: Handler | undefined = undefined;

  constructor(services: ServiceMap, logger: Logger) {
    this.#logger = logger;
    const short = new Map<string, string | null>();
    for (const [name, methods] of Object.entries(services)) {
      this.#services.set(name, new Map(Object.entries(methods)));
      // jprotobuf clients send the service name without its package (as brpc accepts).
      const s = name.slice(name.lastIndexOf(".") + 1);
      short.set(s, short.has(s) ? null : name);
    }
    for (const [s, full] of short) {
      if (full !== null && !this.#services.has(s)) this.#services.set(s, this.#services.get(full)!);
    }
  }

  /** Live counters (the object is updated in place; copy it to snapshot). */
  get stats(): Readonly<DispatchStats> {
    return this.#stats;
  }

  /** Whether `service`/`method` is a handler marked `borrowsRequest` (false if none). */
  borrows(service: string, method: string): boolean {
    return borrowsItsRequest(this.#services.get(service)?.get(method));
  }

  /** From now on every request is answered with ELOGOFF ("server is stopping"). */
  stop(): void {
    this.#stopping = true;
  }

  /** Resolves when no call is in flight. */
  idle(): Promise<void> {
    if (this.#stats.inflight === 0) return Promise.resolve();
    return new Promise((r) => this.#idle.push(r));
  }

  /**
   * Serves one request frame. `payload` and `attachment` are owned by the call from now on. The
   * answer goes to `sink.send`, synchronously when the handler returns synchronously.
   * `receivedAt` (`Date.now()` scale) is when the bytes arrived; the deadline counts from it.
   */
  dispatch(
    meta: RpcMeta,
    payload: Uint8Array,
    attachment: Uint8Array,
    sink: ResponseSink,
    receivedAt: number = Date.now(),
  ): void {
    this.#stats.calls++;
    const req = meta.request;
    if (req === undefined) {
      this.#answerError(meta, sink, EREQUEST, "frame has no request meta (not a request)");
      return;
    }
    const call = new ServerCall(meta, attachment, sink, receivedAt);
    if (this.#stopping) return this.#fail(call, ELOGOFF, "server is stopping");
    if (meta.compressType) {
      return this.#fail(call, EREQUEST, `compress_type=${meta.compressType} is not supported`);
    }
    let handler = this.#lastHandler;
    if (
      handler === undefined || req.serviceName !== this.#lastService ||
      req.methodName !== this.#lastMethod
    ) {
      const methods = this.#services.get(req.serviceName);
      if (methods === undefined) {
        return this.#fail(call, ENOSERVICE, `no service ${req.serviceName}`);
      }
      handler = methods.get(req.methodName);
      if (handler === undefined) {
        return this.#fail(call, ENOMETHOD, `no method ${req.methodName} in ${req.serviceName}`);
      }
      this.#lastService = req.serviceName;
      this.#lastMethod = req.methodName;
      this.#lastHandler = handler;
    }
    this.#stats.inflight++;
    let result: Uint8Array | Promise<Uint8Array>;
    try {
      result = handler(payload, call);
    } catch (e) {
      this.#done(call, undefined, e, false);
      return;
    }
    // A synchronous answer skips the deadline check: no time passed that the client would not
    // have seen anyway (a late answer is dropped by a client that already timed out).
    if (result instanceof Uint8Array) this.#done(call, result, undefined, false);
    else this.#await(call, result);
  }

  async #await(call: ServerCall, result: Promise<Uint8Array>): Promise<void> {
    let value: Uint8Array;
    try {
      value = await result;
    } catch (e) {
      this.#done(call, undefined, e, true);
      return;
    }
    this.#done(call, value, undefined, true);
  }

  #done(call: ServerCall, value: Uint8Array | undefined, error: unknown, late: boolean): void {
    if (--this.#stats.inflight === 0 && this.#idle.length > 0) {
      const waiters = this.#idle;
      this.#idle = [];
      for (const w of waiters) w();
    }
    if (error !== undefined) {
      if (error instanceof RpcError) {
        call.errorDetails = error.details;
        return this.#fail(call, error.errorCode, error.errorText);
      }
      // An unexpected throw may carry anything (paths, keys, a peer's data): the caller gets a
      // generic text and an id; the full error, stack included, goes to the server's log.
      const id = internalErrorId();
      const detail = error instanceof Error
        ? (error.stack ?? `${error.name}: ${error.message}`)
        : String(error);
      this.#logger.warn(
        `${call.service}.${call.method} from ${peerName(call.peer)} threw (id ${id}): ${detail}`,
      );
      return this.#fail(call, EINTERNAL, internalErrorText(id));
    }
    if (!(value instanceof Uint8Array)) {
      return this.#fail(call, ERESPONSE, `handler returned ${typeName(value)}, not a Uint8Array`);
    }
    if (late) {
      const deadline = call.deadline;
      if (deadline !== undefined && Date.now() > deadline) {
        return this.#fail(call, ERPCTIMEDOUT, `finished after the ${call.timeoutMs} ms deadline`);
      }
    }
    call.sink.send(call, value, 0, "");
  }

  #fail(call: ServerCall, code: number, text: string): void {
    this.#stats.errors++;
    call.sink.send(call, EMPTY, code, text);
  }

  #answerError(meta: RpcMeta, sink: ResponseSink, code: number, text: string): void {
    const fake: RpcMeta = { ...meta, request: { serviceName: "", methodName: "" } };
    this.#fail(new ServerCall(fake, EMPTY, sink, 0), code, text);
  }
}

function peerName(a: NetAddress): string {
  return `${a.host}:${a.port}`;
}

function typeName(v: unknown): string {
  return v === null ? "null" : typeof v === "object" ? (v.constructor?.name ?? "object") : typeof v;
}
