/**
 * Typed methods: a handler written against decoded request and response values (protobuf
 * messages through their `@bufbuild/protobuf` descriptors, or any plain codec), wrapped into the
 * byte-level {@link Handler} the dispatcher runs. A request that fails to decode is the caller's
 * error (EREQUEST naming the type); a response that fails to encode is the server's, answered as
 * any internal error (the text may quote the handler's values, so it goes to the log only).
 *
 * Threading: the server's JS thread, like every handler.
 * @module
 */
import {
  create,
  type DescMessage,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import { EREQUEST, RpcError } from "../errors.ts";
import type { CallContext, Handler } from "./dispatch.ts";

/** Decodes request bytes into a value. */
export interface Decoder<T> {
  decode(bytes: Uint8Array): T;
}

/** Encodes a response value into bytes (ownership of the bytes moves to the caller). */
export interface Encoder<T> {
  encode(value: T): Uint8Array;
}

type Req<D> = D extends DescMessage ? MessageShape<D> : D extends Decoder<infer T> ? T : never;
type Res<E> = E extends DescMessage ? MessageInitShape<E> : E extends Encoder<infer T> ? T : never;

function isDesc(x: unknown): x is DescMessage {
  return typeof x === "object" && x !== null && (x as DescMessage).kind === "message";
}

/**
 * Wraps a typed implementation into a {@link Handler}. `request` and `response` are either
 * `@bufbuild/protobuf` message descriptors (e.g. `EchoRequestSchema`) or plain codecs
 * (`{ decode(bytes) }` / `{ encode(value) }`). A request that fails to decode is answered with
 * EREQUEST; a response that fails to encode with EINTERNAL `internal error (id …)`, its text
 * logged under that id.
 */
export function typedMethod<
  D extends DescMessage | Decoder<unknown>,
  E extends DescMessage | Encoder<unknown>,
>(
  request: D,
  response: E,
  impl: (request: Req<D>, ctx: CallContext) => Res<E> | Promise<Res<E>>,
): Handler {
  const decode: (b: Uint8Array) => unknown = isDesc(request)
    ? (b) => fromBinary(request, b)
    : (b) => (request as Decoder<unknown>).decode(b);
  const encode: (v: unknown) => Uint8Array = isDesc(response)
    ? (v) => toBinary(response, create(response, v as MessageShape<typeof response>))
    : (v) => (response as Encoder<unknown>).encode(v);
  const reqName = isDesc(request) ? request.typeName : "request";
  const resName = isDesc(response) ? response.typeName : "response";
  const finish = (v: unknown): Uint8Array => {
    try {
      return encode(v);
    } catch (e) {
      // A plain Error: the dispatcher logs it with an id and answers EINTERNAL (the text may
      // quote the handler's values — a secret in the wrong field).
      throw new Error(`cannot encode ${resName}: ${(e as Error)?.message ?? e}`, { cause: e });
    }
  };
  return (bytes, ctx) => {
    let req: unknown;
    try {
      req = decode(bytes);
    } catch (e) {
      throw new RpcError(EREQUEST, `cannot decode ${reqName}: ${(e as Error)?.message ?? e}`);
    }
    const out = impl(req as Req<D>, ctx);
    return out instanceof Promise ? out.then(finish) : finish(out);
  };
}
