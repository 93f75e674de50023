/**
 * The client side of a Connect streaming call over a verbus stream (`rpc/stream/`): the
 * `next` step of `runStreamingCall` in `VerbusTransport.stream`. It opens a brpc stream with a
 * call of the method (request headers and the timeout go in that call's meta, as for unary
 * calls), writes the requests as MESSAGE envelopes and an END when they run out, resolves with
 * the server's HEADER, and yields the responses until the server's END (its status: OK, or a
 * `ConnectError` with the code, message and trailers it names).
 *
 * Cancellation (the call's signal: the caller's abort or the deadline) resets the stream, so the
 * server's implementation sees its requests end and its writes fail; so does a caller that left
 * its loop early, once it let go of the messages (`stream_abandon.ts`: connect-es tells the
 * transport nothing of a `break`). A stream that ends without an END is an error named for how
 * it ended (the connection: Unavailable; a reset: Aborted).
 *
 * Threading: the JS thread of the transport.
 * @module
 */
import {
  type DescMessage,
  type DescMethodStreaming,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextValues,
  type Interceptor,
  type StreamRequest,
  type StreamResponse,
} from "@connectrpc/connect";
import { runStreamingCall } from "@connectrpc/connect/protocol";
import { openStream, type StreamVia } from "../stream/open.ts";
import type { Stream } from "../stream/stream.ts";
import { StreamError } from "../stream/stream_error.ts";
import { connectErrorOf } from "./codes.ts";
import { unwatchAbandoned, watchAbandoned } from "./stream_abandon.ts";
import { callOptionsOf } from "./headers.ts";
import {
  END,
  type EndStatus,
  envelope,
  HEADER,
  jsonBody,
  jsonEnvelope,
  MESSAGE,
} from "./stream_envelope.ts";

const EMPTY = new Uint8Array(0);

const CODE_OF_END: Readonly<Record<StreamError["kind"], Code>> = {
  closed: Code.Aborted,
  reset: Code.Aborted,
  refused: Code.Unimplemented,
  overrun: Code.ResourceExhausted,
  protocol: Code.Internal,
  connection: Code.Unavailable,
};

/** The next envelope, errors as ConnectErrors; undefined when the stream closed. */
async function next(s: Stream, where: string): Promise<Uint8Array | undefined> {
  try {
    const env = await s.read();
    if (env !== undefined && env.length === 0) {
      throw new ConnectError(`${where}: an empty envelope on the stream`, Code.Internal);
    }
    return env;
  } catch (e) {
    if (e instanceof StreamError) {
      throw new ConnectError(`${where}: ${e.message}`, CODE_OF_END[e.kind]);
    }
    throw e;
  }
}

/** The ConnectError of a server's END status (undefined for OK); fills `trailer`. */
function endError(status: EndStatus, trailer: Headers, where: string): ConnectError | undefined {
  for (const [k, v] of Object.entries(status.trailer ?? {})) trailer.set(k, String(v));
  if (status.code === undefined || status.code === 0) return undefined;
  const code = Code[status.code] === undefined ? Code.Unknown : status.code as Code;
  return new ConnectError(`${where}: ${status.message ?? ""}`, code, trailer);
}

/** Writes the requests, then an END; a failing request iterable resets the stream. */
async function pump<I extends DescMessage>(s: Stream, req: StreamRequest<I>): Promise<void> {
  try {
    for await (const m of req.message) {
      await s.write(envelope(MESSAGE, toBinary(req.method.input, m)));
    }
    await s.write(jsonEnvelope(END, {}));
  } catch (e) {
    s.reset(`the requests failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * One streaming call through `via` (a direct client or a channel). Rejects with a ConnectError
 * (the opening call's error mapped as unary calls' are; Unimplemented when the server accepted
 * no stream).
 */
export async function streamCall<I extends DescMessage, O extends DescMessage>(
  via: StreamVia,
  req: StreamRequest<I, O>,
  timeoutMs: number | undefined,
): Promise<StreamResponse<I, O>> {
  const method = req.method;
  const where = `${method.parent.typeName}/${method.name}`;
  if (req.signal.aborted) throw ConnectError.from(req.signal.reason, Code.Canceled);
  const o = callOptionsOf(req.header, timeoutMs);
  let s: Stream;
  try {
    const opened = await openStream(via, method.parent.typeName, method.name, EMPTY, {
      timeoutMs: o.timeoutMs,
      logId: o.logId,
      requestId: o.requestId,
      userFields: o.userFields,
    });
    s = opened.stream;
  } catch (e) {
    if (e instanceof StreamError) {
      throw new ConnectError(`${where}: ${e.message}`, CODE_OF_END[e.kind]);
    }
    throw connectErrorOf(e, where);
  }
  const stream = s;
  const onAbort = () => stream.reset("canceled by the client");
  req.signal.addEventListener("abort", onAbort, { once: true });
  const token = {};
  const release = () => {
    unwatchAbandoned(token);
    req.signal.removeEventListener("abort", onAbort);
    stream.close();
  };
  void pump(stream, req);
  const trailer = new Headers();
  let first: Uint8Array | undefined;
  try {
    first = await next(stream, where);
    if (first === undefined) {
      throw new ConnectError(`${where}: the stream closed before any answer`, Code.Unavailable);
    }
    if (first[0] === END) {
      throw endError(jsonBody(first, "END"), trailer, where) ??
        new ConnectError(`${where}: no header`, Code.Internal);
    }
    if (first[0] !== HEADER) {
      throw new ConnectError(
        `${where}: the server's first envelope is not its header`,
        Code.Internal,
      );
    }
  } catch (e) {
    release();
    throw e;
  }
  const header = new Headers(jsonBody<Record<string, string>>(first, "HEADER"));
  async function* messages(): AsyncGenerator<MessageShape<O>> {
    try {
      for (;;) {
        const env = await next(stream, where);
        if (env === undefined) {
          throw new ConnectError(`${where}: the stream closed without a status`, Code.Unavailable);
        }
        if (env[0] === END) {
          const e = endError(jsonBody(env, "END"), trailer, where);
          if (e !== undefined) throw e;
          return;
        }
        if (env[0] !== MESSAGE) {
          throw new ConnectError(`${where}: unexpected envelope ${env[0]}`, Code.Internal);
        }
        let m: MessageShape<O>;
        try {
          m = fromBinary(method.output, env.subarray(1));
        } catch (e) {
          throw new ConnectError(
            `${where}: cannot decode ${method.output.typeName}: ${(e as Error).message}`,
            Code.Internal,
          );
        }
        yield m;
      }
    } finally {
      release();
    }
  }
  // A caller that leaves its loop early cannot tell us (connect-es drops `return()`): when it
  // lets go of the messages unfinished, the stream is reset (`stream_abandon.ts`).
  const message = messages();
  watchAbandoned(message, token, () => {
    req.signal.removeEventListener("abort", onAbort);
    stream.reset("the caller dropped the call's messages before their end");
  });
  return { stream: true, service: method.parent, method, header, trailer, message };
}

/** What {@link transportStream} needs of its transport. */
export interface StreamingTransport {
  /** `HOST:PORT` (for the request's url). */
  readonly target: string;
  /** The verbus client (connecting first). */
  client(): Promise<object>;
}

/** What one `Transport.stream` call gives besides its method ({@link transportStream}'s input). */
export interface StreamCallInput<I extends DescMessage> {
  /** The transport's interceptors (run around the call). */
  interceptors: Interceptor[];
  signal: AbortSignal | undefined;
  timeoutMs: number | undefined;
  header: HeadersInit | undefined;
  /** The request messages. */
  input: AsyncIterable<MessageInitShape<I>>;
  contextValues: ContextValues | undefined;
}

/**
 * `Transport.stream` of `VerbusTransport`: Connect's `runStreamingCall` (interceptors, the
 * timeout and the signal) over {@link streamCall}. Streams need a direct connection to one server:
 * over an agent or a cluster target the call is Unimplemented, naming why.
 */
export function transportStream<I extends DescMessage, O extends DescMessage>(
  transport: StreamingTransport,
  method: DescMethodStreaming<I, O>,
  call: StreamCallInput<I>,
): Promise<StreamResponse<I, O>> {
  const { interceptors, signal, timeoutMs, header, input, contextValues } = call;
  const where = `${method.parent.typeName}/${method.name}`;
  return runStreamingCall<I, O>({
    interceptors,
    signal,
    timeoutMs,
    req: {
      stream: true,
      service: method.parent,
      method,
      requestMethod: "POST",
      url: `verbus://${transport.target}/${where}`,
      header: new Headers(header),
      contextValues: contextValues ?? createContextValues(),
      message: input,
    },
    next: async (req) => {
      let client: object;
      try {
        client = await transport.client();
      } catch (e) {
        throw connectErrorOf(e, where);
      }
      if (!("channel" in client)) {
        throw new ConnectError(
          `${where} is a ${method.methodKind.replace("_", "-")} method: streams need a direct ` +
            `connection to one server (target ${transport.target} is not one)`,
          Code.Unimplemented,
        );
      }
      return streamCall(client as StreamVia, req, timeoutMs);
    },
  });
}
