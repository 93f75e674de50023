/**
 * `verbus.Demo/Count`, the demo's server-streaming method (brpc Streaming RPC): the call opens a
 * stream, the server writes `count` messages to it and closes it. What `verbus call
 * --stream-count N` measures.
 *
 * Wire: the request is `count` (u32 LE) and `size` (u32 LE, each message's bytes, at least 8,
 * default 16 when the request is 4 bytes); each message starts with its index (u64 LE), the
 * rest zeros. The call's answer is empty (the messages are the result). Called without a stream
 * it is EREQUEST.
 *
 * Threading: the server's JS thread.
 * @module
 */
import { acceptStream, type CallContext, callHasStream, EREQUEST, RpcError } from "../../mod.ts";

/** Most messages one Count streams. */
export const MAX_COUNT = 100_000_000;
/** Largest Count message. */
export const MAX_COUNT_MESSAGE = 1 << 20;
/** Default message size. */
export const DEFAULT_COUNT_MESSAGE = 16;

/** Encodes a Count request. */
export function encodeCountRequest(count: number, size = DEFAULT_COUNT_MESSAGE): Uint8Array {
  const b = new Uint8Array(8);
  const v = new DataView(b.buffer);
  v.setUint32(0, count, true);
  v.setUint32(4, size, true);
  return b;
}

/** The index a Count message carries. */
export function countIndexOf(message: Uint8Array): number {
  if (message.length < 8) throw new RpcError(EREQUEST, `Count message of ${message.length} bytes`);
  return Number(new DataView(message.buffer, message.byteOffset, 8).getBigUint64(0, true));
}

function decode(req: Uint8Array): { count: number; size: number } {
  if (req.length !== 4 && req.length !== 8) {
    throw new RpcError(EREQUEST, `Count request: expected 4 or 8 bytes, got ${req.length}`);
  }
  const v = new DataView(req.buffer, req.byteOffset, req.length);
  const count = v.getUint32(0, true);
  const size = req.length === 8 ? v.getUint32(4, true) : DEFAULT_COUNT_MESSAGE;
  if (count > MAX_COUNT) throw new RpcError(EREQUEST, `Count: count ${count} > ${MAX_COUNT}`);
  if (size < 8 || size > MAX_COUNT_MESSAGE) {
    throw new RpcError(EREQUEST, `Count: message size ${size} is not in 8..${MAX_COUNT_MESSAGE}`);
  }
  return { count, size };
}

/** Writes the messages; ends early (quietly) when the stream ends under it. */
async function pump(
  s: ReturnType<typeof acceptStream>,
  count: number,
  size: number,
): Promise<void> {
  for (let i = 0; i < count; i++) {
    const m = new Uint8Array(size);
    new DataView(m.buffer).setBigUint64(0, BigInt(i), true);
    await s.write(m);
  }
  s.close();
}

/** The Count handler (request bytes and the server's call context). */
export function countHandler(request: Uint8Array, ctx: CallContext): Uint8Array {
  const { count, size } = decode(request);
  if (!callHasStream(ctx)) {
    throw new RpcError(EREQUEST, "Count streams its answer: call it with a stream (openStream)");
  }
  const s = acceptStream(ctx);
  void pump(s, count, size).catch(() => {});
  return new Uint8Array(0);
}
