/**
 * The per-call fast paths of baidu_std framing: a request or an answer of the common shape is
 * written straight into a {@link FrameSink} (a connection's output slab) from precomputed bytes,
 * with no RpcMeta object, no scratch encode and no copy of the meta.
 *
 * - {@link RequestMetaCache}: the encoded `request` field (service, method, timeout) per method,
 *   computed once; a request frame ({@link encodeRequestFrameTo}) is then header + those bytes +
 *   `correlation_id` (+ `attachment_size`) + payload + attachment.
 * - {@link encodeResponseFrameTo}: a successful answer's meta is only `correlation_id` (+
 *   `attachment_size`), written in place.
 *
 * The bytes are identical to what `encodeFrameTo` produces for the same meta (field order 1, 4, 5;
 * `attachment_size` omitted when 0), which `tests/rpc/codec_test.ts` checks.
 *
 * Threading: a cache belongs to the JS thread that created it; the functions keep no state.
 * @module
 */
import { ProtocolError } from "../../errors.ts";
import { copyInto, FRAME_HEADER_SIZE, type FrameSink, writeHeader } from "./frame.ts";
import { encodeRpcMeta } from "./rpc_meta_encode.ts";

const EMPTY = new Uint8Array(0);

/** Bytes of the unsigned varint of `v` (0 <= v < 2^53). */
function varintSize(v: number): number {
  let n = 1;
  while (v > 0x7f) {
    v = v > 0x7fffffff ? Math.floor(v / 128) : v >>> 7;
    n++;
  }
  return n;
}

/** Writes the varint of `v` (0 <= v < 2^53) at `out[off..]`; returns the offset after it. */
function putVarint(out: Uint8Array, off: number, v: number): number {
  while (v > 0x7fffffff) {
    out[off++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  while (v > 0x7f) {
    out[off++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  out[off++] = v;
  return off;
}

/**
 * Writes one frame whose meta is `prefix` (already encoded fields, may be empty), then
 * `correlation_id` = `id`, then `attachment_size` when the attachment is not empty; then payload
 * and attachment (both copied: the caller keeps them). `id` must be an integer in 0..2^53-1.
 */
function writeFrame(
  sink: FrameSink,
  prefix: Uint8Array,
  id: number,
  payload: Uint8Array,
  attachment: Uint8Array,
  owned = false,
): void {
  const att = attachment.length;
  const meta = prefix.length + 1 + varintSize(id) + (att > 0 ? 1 + varintSize(att) : 0);
  const body = meta + payload.length + att;
  if (body > 0xffffffff) {
    throw new ProtocolError(`frame body of ${body} bytes does not fit the u32 body_size field`);
  }
  // A large payload the sink may keep leaves by reference: header and meta here, then the payload.
  const byRef = owned && att === 0 && payload.length >= BY_REFERENCE && sink.write !== undefined;
  const total = FRAME_HEADER_SIZE + body - (byRef ? payload.length : 0);
  let off = sink.reserve(total);
  const out = sink.writeBuffer;
  writeHeader(out, off, body, meta);
  off += FRAME_HEADER_SIZE;
  for (let i = 0; i < prefix.length; i++) out[off + i] = prefix[i];
  off += prefix.length;
  out[off++] = 0x20; // field 4 (correlation_id), varint
  off = putVarint(out, off, id);
  if (att > 0) {
    out[off++] = 0x28; // field 5 (attachment_size), varint
    off = putVarint(out, off, att);
  }
  if (byRef) {
    sink.commit(total);
    sink.write!(payload);
    return;
  }
  copyInto(out, off, payload);
  if (att > 0) copyInto(out, off + payload.length, attachment);
  sink.commit(total);
}

/** Answer payloads from this size on leave by reference when the sink can take them. */
const BY_REFERENCE = 64 * 1024;

/**
 * Writes a successful answer: meta = `correlation_id` (+ `attachment_size`), then `payload` and
 * `attachment`. The attachment is copied; so is the payload, except one of 64 KiB or more with no
 * attachment, which a sink with `write` takes by reference (a handler's answer is verbus's once
 * returned: it must not be modified afterwards). Returns `false` without writing when
 * `correlationId` is not a non-negative safe integer (the caller then uses `encodeFrameTo`).
 * Throws `ProtocolError` when the body does not fit the u32 `body_size`.
 */
export function encodeResponseFrameTo(
  sink: FrameSink,
  correlationId: number | bigint,
  payload: Uint8Array,
  attachment: Uint8Array = EMPTY,
): boolean {
  if (typeof correlationId !== "number" || !(correlationId >= 0) || correlationId % 1 !== 0) {
    return false;
  }
  if (correlationId > Number.MAX_SAFE_INTEGER) return false;
  writeFrame(sink, EMPTY, correlationId, payload, attachment, true);
  return true;
}

/** One method's precomputed request field. */
interface Entry {
  readonly timeoutMs: number;
  readonly bytes: Uint8Array;
}

/**
 * Encoded `request` fields (RpcMeta field 1: service, method, timeout) per method, so a client
 * encodes each request meta once per method and timeout instead of once per call. Holds at most
 * `limit` methods per service (older ones are dropped when full). Owned by one channel.
 */
export class RequestMetaCache {
  readonly #services = new Map<string, Map<string, Entry>>();
  readonly #limit: number;

  constructor(limit = 256) {
    this.#limit = limit;
  }

  // The last method asked for (consecutive calls usually name the same one: string compares
  // of the same objects, no map lookup).
  #lastService = "";
  #lastMethod = "";
  #lastTimeout = -1;
  #lastBytes: Uint8Array = EMPTY;

  /** The encoded request field for `service.method` with `timeoutMs` (computed on first use). */
  prefix(service: string, method: string, timeoutMs: number): Uint8Array {
    if (
      method === this.#lastMethod && service === this.#lastService &&
      timeoutMs === this.#lastTimeout
    ) {
      return this.#lastBytes;
    }
    const bytes = this.#lookup(service, method, timeoutMs);
    this.#lastService = service;
    this.#lastMethod = method;
    this.#lastTimeout = timeoutMs;
    this.#lastBytes = bytes;
    return bytes;
  }

  #lookup(service: string, method: string, timeoutMs: number): Uint8Array {
    let methods = this.#services.get(service);
    if (methods === undefined) {
      if (this.#services.size >= this.#limit) this.#services.clear();
      methods = new Map();
      this.#services.set(service, methods);
    }
    const e = methods.get(method);
    if (e !== undefined && e.timeoutMs === timeoutMs) return e.bytes;
    if (methods.size >= this.#limit) methods.clear();
    const bytes = encodeRpcMeta({
      request: { serviceName: service, methodName: method, timeoutMs },
    })
      .slice();
    methods.set(method, { timeoutMs, bytes });
    return bytes;
  }
}

/**
 * Writes a request frame whose meta is `prefix` (a {@link RequestMetaCache.prefix}: service,
 * method, timeout; no log or request ids) and `correlation_id` = `id` (a non-negative safe
 * integer) into `sink`. Payload and attachment are copied; the caller keeps them. Throws
 * `ProtocolError` when the body does not fit the u32 `body_size`.
 */
export function encodeRequestFrameTo(
  sink: FrameSink,
  prefix: Uint8Array,
  id: number,
  payload: Uint8Array,
  attachment: Uint8Array = EMPTY,
): void {
  writeFrame(sink, prefix, id, payload, attachment);
}
