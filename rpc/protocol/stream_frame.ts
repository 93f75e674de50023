/**
 * brpc's Streaming RPC wire format (apache/brpc `src/brpc/streaming_rpc_meta.proto`,
 * `policy/streaming_rpc_protocol.cpp`), encoded and decoded by hand:
 *
 * - `StreamSettings` { stream_id = 1 (int64, required), need_feedback = 2, writable = 3 (bools),
 *   extra_stream_ids = 4 (repeated int64) } rides in `RpcMeta.stream_settings` (field 8) of the
 *   call that creates a stream and of its answer.
 * - A stream frame is `"STRM"`, `body_size` u32 BE, `meta_size` u32 BE, then a
 *   `StreamFrameMeta` { stream_id = 1 (the receiver's id), source_stream_id = 2 (the sender's),
 *   frame_type = 3 (RST 1, CLOSE 2, DATA 3, FEEDBACK 4), has_continuation = 4,
 *   feedback = 5 { consumed_size = 1 } } and the payload (DATA only).
 *
 * int64 values decode to a `number` when safe and to a `bigint` otherwise, so a stock brpc
 * peer's ids round-trip exactly. Decoders throw `ProtocolError` naming the defect.
 *
 * Threading: pure functions; any thread.
 * @module
 */
import { ProtocolError } from "../../errors.ts";
import { FRAME_HEADER_SIZE } from "./frame_parser.ts";
import type { FrameSink } from "./frame.ts";
import type { Int64 } from "./rpc_meta.ts";

/** `brpc.FrameType`. */
export const FRAME_RST = 1;
/** Graceful end of a stream (the peer closes its side). */
export const FRAME_CLOSE = 2;
/** One message (or one segment of it, `hasContinuation`). */
export const FRAME_DATA = 3;
/** The reader's cumulative consumed byte count. */
export const FRAME_FEEDBACK = 4;

/** brpc's `INVALID_STREAM_ID` (all 64 bits set; -1 as an int64). */
export const INVALID_STREAM_ID = -1;

/** `brpc.StreamSettings`. */
export interface StreamSettings {
  streamId: Int64;
  needFeedback: boolean;
  writable: boolean;
  extraStreamIds: Int64[];
}

/** `brpc.StreamFrameMeta`. */
export interface StreamFrameMeta {
  streamId: Int64;
  sourceStreamId?: Int64;
  frameType: number;
  hasContinuation: boolean;
  /** `feedback.consumed_size`, when the frame has a feedback. */
  consumedSize?: Int64;
}

/** Builds protobuf bytes in a reused buffer (one per module; the JS thread's). */
class Writer {
  buf = new Uint8Array(64);
  pos = 0;
  reset(): this {
    this.pos = 0;
    return this;
  }
  #byte(x: number): void {
    if (this.pos === this.buf.length) {
      const grown = new Uint8Array(this.buf.length * 2);
      grown.set(this.buf);
      this.buf = grown;
    }
    this.buf[this.pos++] = x;
  }
  varint(v: Int64): this {
    if (typeof v === "number" && v >= 0 && v <= Number.MAX_SAFE_INTEGER) {
      // The common case (ids, types, sizes): no BigInt.
      while (v > 0x7f) {
        this.#byte((v % 128) | 0x80);
        v = Math.floor(v / 128);
      }
      this.#byte(v);
      return this;
    }
    let u = BigInt.asUintN(64, BigInt(v));
    while (u > 0x7fn) {
      this.#byte(Number(u & 0x7fn) | 0x80);
      u >>= 7n;
    }
    this.#byte(Number(u));
    return this;
  }
  field(n: number, v: Int64): this {
    return this.varint(n << 3).varint(v);
  }
  /** A copy of what was written since {@link reset}. */
  bytes(): Uint8Array {
    return this.buf.slice(0, this.pos);
  }
}

const scratch = new Writer();

/** Bytes of the varint of `v`. */
function varintSize(v: Int64): number {
  if (typeof v === "number" && v >= 0 && v <= Number.MAX_SAFE_INTEGER) {
    let n = 1;
    for (; v > 0x7f; n++) v = Math.floor(v / 128);
    return n;
  }
  let u = BigInt.asUintN(64, BigInt(v)), n = 1;
  for (; u > 0x7fn; n++) u >>= 7n;
  return n;
}

/** A cursor over protobuf bytes. */
class Reader {
  pos: number;
  constructor(readonly b: Uint8Array, start: number, readonly end: number, readonly what: string) {
    this.pos = start;
  }
  fail(why: string): never {
    throw new ProtocolError(`undecodable ${this.what}: ${why} (at byte ${this.pos})`);
  }
  /** A varint below 2^49 as a number (the common case: no BigInt), else undefined (pos kept). */
  #small(): number | undefined {
    let v = 0, mul = 1;
    for (let p = this.pos, i = 0; i < 7 && p < this.end; i++, mul *= 128) {
      const x = this.b[p++];
      v += (x & 0x7f) * mul;
      if (x < 0x80) {
        this.pos = p;
        return v;
      }
    }
    return undefined;
  }
  /** A varint as a number (tags, lengths, flags: values past 2^49 come back inexact). */
  num(): number {
    return this.#small() ?? Number(this.varint());
  }
  varint(): bigint {
    let v = 0n, shift = 0n;
    for (let i = 0; i < 10; i++, shift += 7n) {
      if (this.pos >= this.end) this.fail("varint runs past the end");
      const x = this.b[this.pos++];
      v |= BigInt(x & 0x7f) << shift;
      if (x < 0x80) return BigInt.asUintN(64, v);
    }
    this.fail("varint longer than 10 bytes");
  }
  int64(): Int64 {
    const small = this.#small();
    if (small !== undefined) return small;
    const v = BigInt.asIntN(64, this.varint());
    return v >= -0x1fffffffffffffn && v <= 0x1fffffffffffffn ? Number(v) : v;
  }
  len(): number {
    const n = this.num();
    if (n > this.end - this.pos) this.fail(`length ${n} exceeds the remaining bytes`);
    return this.pos + n;
  }
  skip(wireType: number, field: number): void {
    if (wireType === 0) this.num();
    else if (wireType === 2) this.pos = this.len();
    else if (wireType === 1 || wireType === 5) {
      const n = wireType === 1 ? 8 : 4;
      if (this.end - this.pos < n) this.fail(`field ${field} runs past the end`);
      this.pos += n;
    } else this.fail(`field ${field} has unsupported wire type ${wireType}`);
  }
  /** Calls `each(field, wireType)` for every tag; `each` reads the value or returns false. */
  fields(each: (field: number, wireType: number) => boolean): void {
    while (this.pos < this.end) {
      const tag = this.num() % 0x100000000;
      const f = tag >>> 3, wt = tag & 7;
      if (f === 0) this.fail("field number 0");
      if (!each(f, wt)) this.skip(wt, f);
    }
  }
}

/** Encodes `StreamSettings` (the bytes for `RpcMeta.streamSettings`). */
export function encodeStreamSettings(s: StreamSettings): Uint8Array {
  const w = scratch.reset().field(1, s.streamId);
  if (s.needFeedback) w.field(2, 1);
  if (s.writable) w.field(3, 1);
  for (const id of s.extraStreamIds) w.field(4, id);
  return w.bytes();
}

/** Decodes `StreamSettings`; throws `ProtocolError` (e.g. without its required stream_id). */
export function decodeStreamSettings(b: Uint8Array): StreamSettings {
  const r = new Reader(b, 0, b.length, "StreamSettings");
  let streamId: Int64 | undefined;
  const s: StreamSettings = {
    streamId: 0,
    needFeedback: false,
    writable: false,
    extraStreamIds: [],
  };
  r.fields((f, wt) => {
    if (f === 1 && wt === 0) streamId = r.int64();
    else if (f === 2 && wt === 0) s.needFeedback = r.num() !== 0;
    else if (f === 3 && wt === 0) s.writable = r.num() !== 0;
    else if (f === 4 && wt === 0) s.extraStreamIds.push(r.int64());
    else if (f === 4 && wt === 2) {
      const end = r.len();
      while (r.pos < end) s.extraStreamIds.push(r.int64());
    } else return false;
    return true;
  });
  if (streamId === undefined) return r.fail("lacks required stream_id (field 1)");
  s.streamId = streamId;
  return s;
}

/** A frame type as read (a negative enum value arrives as a huge varint: unknown, -1). */
function frameTypeOf(v: number): number {
  return v > 0x7fffffff ? -1 : v;
}

/** Decodes a `StreamFrameMeta` at `b[start, end)`; throws `ProtocolError`. */
export function decodeStreamFrameMeta(b: Uint8Array, start: number, end: number): StreamFrameMeta {
  const r = new Reader(b, start, end, "StreamFrameMeta");
  let streamId: Int64 | undefined;
  const m: StreamFrameMeta = { streamId: 0, frameType: 0, hasContinuation: false };
  while (r.pos < r.end) {
    const tag = r.num() % 0x100000000;
    const f = tag >>> 3, wt = tag & 7;
    if (f === 0) r.fail("field number 0");
    if (f === 1 && wt === 0) streamId = r.int64();
    else if (f === 2 && wt === 0) m.sourceStreamId = r.int64();
    else if (f === 3 && wt === 0) m.frameType = frameTypeOf(r.num());
    else if (f === 4 && wt === 0) m.hasContinuation = r.num() !== 0;
    else if (f === 5 && wt === 2) {
      const end = r.len();
      const fb = new Reader(b, r.pos, end, "StreamFrameMeta.feedback");
      m.consumedSize ??= 0;
      fb.fields((ff, fwt) => ff === 1 && fwt === 0 ? (m.consumedSize = fb.int64(), true) : false);
      r.pos = fb.end;
    } else r.skip(wt, f);
  }
  if (streamId === undefined) return r.fail("lacks required stream_id (field 1)");
  m.streamId = streamId;
  return m;
}

/** Encodes a `StreamFrameMeta`. */
export function encodeStreamFrameMeta(m: StreamFrameMeta): Uint8Array {
  return writeFrameMeta(m).bytes();
}

/** Writes `m` into the scratch writer. */
function writeFrameMeta(m: StreamFrameMeta): Writer {
  const w = scratch.reset().field(1, m.streamId);
  if (m.sourceStreamId !== undefined) w.field(2, m.sourceStreamId);
  w.field(3, m.frameType);
  if (m.frameType === FRAME_DATA) w.field(4, m.hasContinuation ? 1 : 0);
  if (m.consumedSize !== undefined) {
    w.varint((5 << 3) | 2).varint(1 + varintSize(m.consumedSize)).field(1, m.consumedSize);
  }
  return w;
}

/**
 * One whole stream frame: `"STRM"` header, the encoded meta, then `payload` (copied). The
 * returned buffer is the caller's.
 */
export function encodeStreamFrame(m: StreamFrameMeta, payload?: Uint8Array): Uint8Array {
  const n = FRAME_HEADER_SIZE + writeFrameMeta(m).pos + (payload?.length ?? 0);
  const out = new Uint8Array(n);
  putFrame(out, 0, payload);
  return out;
}

/**
 * Encodes one stream frame straight into `sink` (a connection's output slab): no buffer of its
 * own. `payload` is copied; the caller keeps it.
 */
export function encodeStreamFrameTo(
  sink: FrameSink,
  m: StreamFrameMeta,
  payload?: Uint8Array,
): void {
  const n = FRAME_HEADER_SIZE + writeFrameMeta(m).pos + (payload?.length ?? 0);
  const at = sink.reserve(n);
  putFrame(sink.writeBuffer, at, payload);
  sink.commit(n);
}

/** Writes the header, the meta in the scratch writer and `payload` at `out[at..]`. */
function putFrame(out: Uint8Array, at: number, payload: Uint8Array | undefined): void {
  const w = scratch;
  const metaSize = w.pos;
  const n = payload?.length ?? 0;
  const body = metaSize + n;
  out[at] = 0x53; // "STRM"
  out[at + 1] = 0x54;
  out[at + 2] = 0x52;
  out[at + 3] = 0x4d;
  out[at + 4] = body >>> 24;
  out[at + 5] = (body >>> 16) & 0xff;
  out[at + 6] = (body >>> 8) & 0xff;
  out[at + 7] = body & 0xff;
  out[at + 8] = out[at + 9] = out[at + 10] = 0;
  out[at + 11] = metaSize; // a meta is < 256 bytes
  const m = at + FRAME_HEADER_SIZE;
  for (let i = 0; i < metaSize; i++) out[m + i] = w.buf[i];
  if (n > 0) out.set(payload!, m + metaSize);
}
