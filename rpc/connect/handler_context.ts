/**
 * The context a descriptor-based handler gets ({@link VerbusHandlerContext}): Connect's
 * `HandlerContext` over one verbus call. Request headers come from the request meta
 * (`headers.ts`); response headers and trailers set here travel with the answer, success or
 * error, on every path: TCP puts the headers in the answer's `user_fields` (what brpc's
 * `response_user_fields()` reads) and the trailers in verbus's RpcMeta extension; a fabric
 * session in the answer's metadata block.
 *
 * Threading: the server's JS thread; one context per call.
 * @module
 */
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import {
  ConnectError,
  type ContextValues,
  createContextValues,
  type HandlerContext,
} from "@connectrpc/connect";
import type { CallContext } from "../protocol/dispatch.ts";
import { requestHeadersOf } from "./headers.ts";

/**
 * The context a descriptor-based handler gets: Connect's `HandlerContext` (headers from the
 * request meta, the deadline, an abort signal, response headers and trailers that are sent)
 * plus the verbus call (`call`: attachment, peer, `log_id`…). Fields are computed when first read.
 */
export class VerbusHandlerContext implements HandlerContext {
  /** The service being called. */
  readonly service: DescService;
  /** The method being called. */
  readonly method: DescMethod;
  /** The verbus call: attachment, peer, `log_id`, `request_id`, `user_fields`, signals. */
  readonly call: CallContext;
  #requestHeader: Headers | undefined = undefined;
  #responseHeader: Headers | undefined = undefined;
  #responseTrailer: Headers | undefined = undefined;
  #values: ContextValues | undefined = undefined;
  #signal: AbortSignal | undefined = undefined;

  /** @internal Made by the handlers of `protoService`. */
  constructor(service: DescService, method: DescMethod, call: CallContext) {
    this.service = service;
    this.method = method;
    this.call = call;
  }

  /**
   * Aborted when the caller's connection (or fabric session) ends or the deadline passes; for a
   * streaming method also when the client ends its stream before the call's end (cancel, reset).
   */
  get signal(): AbortSignal {
    return this.#signal ?? this.call.signal;
  }

  /** Milliseconds left until the caller's deadline (`timeout_ms`), or undefined if none. */
  timeoutMs(): number | undefined {
    const d = this.call.deadline;
    return d === undefined ? undefined : Math.max(0, d - Date.now());
  }

  /** Always "POST" (what Connect reports for a unary call). */
  get requestMethod(): string {
    return "POST";
  }

  /** `baidu_std`. */
  get protocolName(): string {
    return "baidu_std";
  }

  /** `/<service full name>/<method name>`. */
  get url(): string {
    return `/${this.service.typeName}/${this.method.name}`;
  }

  /** The request headers: `user_fields`, `x-request-id`, `log-id` (see `headers.ts`). */
  get requestHeader(): Headers {
    return this.#requestHeader ??= requestHeadersOf(this.call);
  }

  /** Response headers: sent with the answer (as its `user_fields`). */
  get responseHeader(): Headers {
    return this.#responseHeader ??= new Headers();
  }

  /** Response trailers: sent with the answer (verbus's trailers extension). */
  get responseTrailer(): Headers {
    return this.#responseTrailer ??= new Headers();
  }

  /** Per-call context values (empty at first). */
  get values(): ContextValues {
    return this.#values ??= createContextValues();
  }

  /** @internal The signal of a streaming call (the call's, and its stream's end). */
  _useSignal(signal: AbortSignal): void {
    this.#signal = signal;
  }

  /** @internal The request headers a server interceptor passed on (it may have replaced them). */
  _useRequestHeader(h: Headers): void {
    this.#requestHeader = h;
  }

  /**
   * @internal Moves the response headers and trailers (`header` / `trailer` when an interceptor
   * answered with others; the error's metadata, for an error answer, joins the headers) onto the
   * call, where the sink sends them. Nothing is allocated when none was set.
   */
  _send(error?: unknown, header?: Headers, trailer?: Headers): void {
    const h = header ?? this.#responseHeader, t = trailer ?? this.#responseTrailer;
    const call = this.call;
    if (h !== undefined) call.responseUserFields = into(call.responseUserFields, h);
    if (error instanceof ConnectError) {
      call.responseUserFields = into(call.responseUserFields, error.metadata);
    }
    if (t !== undefined) call.responseTrailers = into(call.responseTrailers, t);
  }
}

/** `map` with every entry of `h` added (a new map only when `h` has some). */
function into(
  map: Map<string, string> | undefined,
  h: Headers,
): Map<string, string> | undefined {
  for (const [k, v] of h) (map ??= new Map()).set(k, v);
  return map;
}
