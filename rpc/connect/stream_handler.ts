/**
 * Server-streaming, client-streaming and bidi methods of a protobuf service on the verbus
 * server: the client opens a brpc stream with its call (`rpc/stream/`), the handler accepts it
 * and answers the call at once, and the messages travel as the envelopes of
 * `stream_envelope.ts`. The implementation has Connect's shape:
 *
 * - server-streaming: `(request, context) => AsyncIterable<response>` (an `async function*`);
 * - client-streaming: `(requests: AsyncIterable, context) => Promise<response>`;
 * - bidi: `(requests: AsyncIterable, context) => AsyncIterable<response>`.
 *
 * Responses are written with the stream's flow control (a client that stops reading stops the
 * implementation at its next `yield`). The end: the server's END carries the status (OK, or the
 * ConnectError thrown — code and message; any other exception is Internal `internal error (id
 * …)`, never its text) and the response trailers, then the stream is closed. The caller's
 * deadline (the opening call's `timeout_ms`) or its connection ending aborts `context.signal`
 * and ends the stream with DeadlineExceeded / an RST. A client that ends its stream before the
 * call's end — it cancels, or drops a stream it stopped reading (an RST), or closes it — aborts
 * `context.signal` with Canceled, ends the request iterable with Canceled and returns the
 * implementation's generator: nothing of the call is held after the client left.
 *
 * Threading: the server's JS thread.
 * @module
 */
import {
  create,
  type DescMethod,
  type DescMethodStreaming,
  type DescService,
  fromBinary,
  isMessage,
  toBinary,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type HandlerContext,
  type Interceptor,
  type StreamRequest,
  type StreamResponse,
} from "@connectrpc/connect";
import { EREQUEST, RpcError } from "../errors.ts";
import type { CallContext, Handler } from "../protocol/dispatch.ts";
import { internalErrorId, internalErrorText } from "../protocol/internal_error.ts";
import { acceptStream, callHasStream } from "../stream/accept.ts";
import type { Stream } from "../stream/stream.ts";
import {
  END,
  type EndStatus,
  envelope,
  HEADER,
  headersObject,
  jsonEnvelope,
  MESSAGE,
} from "./stream_envelope.ts";

/** A streaming method's implementation (its kind says which of the three shapes). */
// deno-lint-ignore no-explicit-any
export type StreamingImpl = (input: any, context: HandlerContext) => any;

const EMPTY = new Uint8Array(0);

/**
 * The requests a client sends on `s`, decoded; ends at its END, fails if the stream ends first
 * (after `ended()`, which aborts the call's signal).
 */
async function* requestsOf(
  s: Stream,
  method: DescMethod,
  ended: () => void,
): AsyncGenerator<unknown> {
  for (;;) {
    let env: Uint8Array | undefined;
    try {
      env = await s.read();
    } catch (e) {
      ended();
      throw new ConnectError(`the client's stream ended: ${(e as Error).message}`, Code.Canceled);
    }
    if (env === undefined) {
      ended();
      throw new ConnectError("the client closed the stream before its end", Code.Canceled);
    }
    if (env[0] === END) return;
    if (env[0] !== MESSAGE || env.length === 0) {
      throw new ConnectError(`unexpected envelope ${env[0]} from the client`, Code.InvalidArgument);
    }
    try {
      yield fromBinary(method.input, env.subarray(1));
    } catch (e) {
      if (e instanceof ConnectError) throw e;
      throw new ConnectError(
        `cannot decode ${method.input.typeName}: ${(e as Error).message}`,
        Code.InvalidArgument,
      );
    }
  }
}

/** The status of what the implementation threw (its own text only for a ConnectError). */
function statusOf(e: unknown, trailer: Headers): EndStatus {
  if (e instanceof ConnectError) {
    return { code: e.code, message: e.rawMessage, trailer: headersObject(trailer) };
  }
  return {
    code: Code.Internal,
    message: internalErrorText(internalErrorId()),
    trailer: headersObject(trailer),
  };
}

/** The context the implementation gets, with what the handler needs of it. */
export type StreamingContext = HandlerContext & {
  /** The request headers an interceptor passed on become the implementation's. */
  _useRequestHeader?(h: Headers): void;
  /** The call's signal joined with its stream's end becomes the implementation's. */
  _useSignal?(signal: AbortSignal): void;
};

/**
 * The call's signal, aborted also (Canceled) when its stream ends before `finished()` says the
 * call ended: the client reset or closed it, or its session dropped. `cancel` aborts it at once
 * (a read or write that found the stream ended tells it before the stream's `ended` settles).
 */
function streamSignal(s: Stream, callSignal: AbortSignal, finished: () => boolean) {
  const ac = new AbortController();
  const cancel = () => {
    if (finished() || ac.signal.aborted || callSignal.aborted) return;
    ac.abort(new ConnectError("the client ended the stream", Code.Canceled));
  };
  void s.ended.then(cancel);
  return { signal: AbortSignal.any([callSignal, ac.signal]), cancel };
}

/**
 * The innermost step of the interceptor chain: runs the implementation for its kind and
 * answers with its outputs as a stream (a client-streaming answer is a stream of one).
 */
function core(method: DescMethod, impl: StreamingImpl, ctx: StreamingContext) {
  return async (req: StreamRequest): Promise<StreamResponse> => {
    ctx._useRequestHeader?.(req.header);
    let message: AsyncIterable<unknown>;
    if (method.methodKind === "client_streaming") {
      const out = impl(req.message, ctx);
      message = (async function* () {
        yield await out;
      })();
    } else if (method.methodKind === "server_streaming") {
      const first = await req.message[Symbol.asyncIterator]().next();
      if (first.done) throw new ConnectError("the client sent no request", Code.InvalidArgument);
      message = impl(first.value, ctx);
    } else message = impl(req.message, ctx);
    const base = {
      stream: true as const,
      service: method.parent,
      method: method as DescMethodStreaming,
    };
    return {
      ...base,
      header: ctx.responseHeader,
      trailer: ctx.responseTrailer,
      message,
    } as StreamResponse;
  };
}

/**
 * Runs one streaming call on its accepted stream: through the interceptors to the
 * implementation; its outputs become MESSAGE envelopes after a HEADER, then END with the status,
 * then the stream's CLOSE.
 */
async function run(
  s: Stream,
  method: DescMethod,
  impl: StreamingImpl,
  ctx: StreamingContext,
  interceptors: readonly Interceptor[],
  url: string,
): Promise<void> {
  let header: Headers = ctx.responseHeader, trailer: Headers = ctx.responseTrailer;
  let headerSent = false;
  const sendHeader = async () => {
    if (headerSent) return;
    headerSent = true;
    await s.write(jsonEnvelope(HEADER, headersObject(header)));
  };
  const encode = (out: unknown) =>
    // deno-lint-ignore no-explicit-any
    envelope(
      MESSAGE,
      toBinary(
        method.output,
        isMessage(out, method.output) ? out : create(method.output, out as any),
      ),
    );
  let status: EndStatus;
  let outputs: AsyncIterator<unknown> | undefined;
  let finished = false;
  const { signal, cancel } = streamSignal(s, ctx.signal, () => finished);
  ctx._useSignal?.(signal);
  // Ends the implementation's generator (its finally blocks run) when the call ends early.
  const stop = () => {
    const it = outputs;
    outputs = undefined;
    void it?.return?.(undefined).catch(() => {});
  };
  const onAbort = () => {
    const reason = ctx.signal.reason;
    const deadline = reason instanceof DOMException && reason.name === "TimeoutError";
    if (deadline) {
      void sendHeader().catch(() => {});
      const st = { code: Code.DeadlineExceeded, message: "the deadline passed", trailer: {} };
      void s.write(jsonEnvelope(END, st)).then(() => s.close(), () => {});
    } else s.reset("the call was aborted");
    stop();
  };
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  try {
    let next = core(method, impl, ctx);
    for (let i = interceptors.length - 1; i >= 0; i--) {
      next = interceptors[i](next as never) as typeof next;
    }
    const res = await next({
      stream: true,
      service: method.parent,
      method: method as DescMethodStreaming,
      requestMethod: "POST",
      url,
      signal: ctx.signal,
      header: ctx.requestHeader,
      contextValues: ctx.values,
      message: requestsOf(s, method, cancel) as AsyncIterable<never>,
    });
    header = res.header;
    trailer = res.trailer;
    const outs = outputs = res.message[Symbol.asyncIterator]();
    for (let r = await outs.next(); !r.done; r = await outs.next()) {
      if (ctx.signal.aborted || s.closed) return (cancel(), stop());
      await sendHeader();
      await s.write(encode(r.value));
    }
    outputs = undefined;
    status = { trailer: headersObject(trailer) };
  } catch (e) {
    if (s.closed) cancel(); // a write found the stream ended: the signal says so before the stop
    stop();
    if (ctx.signal.aborted) return;
    status = statusOf(e, trailer);
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
  }
  if (s.closed) return void cancel();
  finished = true;
  try {
    await sendHeader();
    await s.write(jsonEnvelope(END, status));
    s.close();
  } catch {
    // the stream ended under us: nothing to tell
  }
}

/**
 * The byte-level handler of a streaming method. `context(call)` makes the handler context the
 * implementation sees. A call that opened no stream is answered EREQUEST naming the method.
 */
export function streamingHandler(
  service: DescService,
  method: DescMethod,
  impl: StreamingImpl,
  context: (call: CallContext) => StreamingContext,
  interceptors: readonly Interceptor[] = [],
): Handler {
  const where = `${service.typeName}.${method.name}`;
  return (_bytes, call) => {
    if (!callHasStream(call)) {
      throw new RpcError(
        EREQUEST,
        `${where} is a ${method.methodKind.replace("_", "-")} method: call it with a stream`,
      );
    }
    const s = acceptStream(call);
    const url = `/${service.typeName}/${method.name}`;
    void run(s, method, impl, context(call), interceptors, url);
    return EMPTY;
  };
}
