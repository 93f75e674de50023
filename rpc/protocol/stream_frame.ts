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

/** Builds protobuf bytes (small messages; allocation is fine off the hot path). */
class Writer {
  readonly bytes: number[] = [];
  varint(v: Int64): this {
    let u = BigInt.asUintN(64, BigInt(v));
    while (u > 0x7fn) {
      this.bytes.push(Number(u & 0x7fn) | 0x80);
      u >>= 7n;
    }
    this.bytes.push(Number(u));
    return this;
  }
  field(n: number, v: Int64): this {
    return this.varint(n << 3).varint(v);
  }
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
    const v = BigInt.asIntN(64, this.varint());
    return v >= -0x1fffffffffffffn && v <= 0x1fffffffffffffn ? Number(v) : v;
  }
  len(): number {
    const n = this.varint();
    if (n > BigInt(this.end - this.pos)) this.fail(`length ${n} exceeds the remaining bytes`);
    return this.pos + Number(n);
  }
  skip(wireType: number, field: number): void {
    if (wireType === 0) this.varint();
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
      const tag = Number(this.varint() & 0xffffffffn);
      const f = tag >>> 3, wt = tag & 7;
      if (f === 0) this.fail("field number 0");
      if (!each(f, wt)) this.skip(wt, f);
    }
  }
}

/** Encodes `StreamSettings` (the bytes for `RpcMeta.streamSettings`). */
export function encodeStreamSettings(s: StreamSettings): Uint8Array {
  const w = new Writer().field(1, s.streamId);
  if (s.needFeedback) w.field(2, 1);
  if (s.writable) w.field(3, 1);
  for (const id of s.extraStreamIds) w.field(4, id);
  return Uint8Array.from(w.bytes);
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
    else if (f === 2 && wt === 0) s.needFeedback = r.varint() !== 0n;
    else if (f === 3 && wt === 0) s.writable = r.varint() !== 0n;
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

/** Decodes a `StreamFrameMeta` at `b[start, end)`; throws `ProtocolError`. */
export function decodeStreamFrameMeta(b: Uint8Array, start: number, end: number): StreamFrameMeta {
  const r = new Reader(b, start, end, "StreamFrameMeta");
  let streamId: Int64 | undefined;
  const m: StreamFrameMeta = { streamId: 0, frameType: 0, hasContinuation: false };
  r.fields((f, wt) => {
    if (f === 1 && wt === 0) streamId = r.int64();
    else if (f === 2 && wt === 0) m.sourceStreamId = r.int64();
    else if (f === 3 && wt === 0) m.frameType = Number(BigInt.asIntN(32, r.varint()));
    else if (f === 4 && wt === 0) m.hasContinuation = r.varint() !== 0n;
    else if (f === 5 && wt === 2) {
      const end = r.len();
      const fb = new Reader(b, r.pos, end, "StreamFrameMeta.feedback");
      m.consumedSize ??= 0;
      fb.fields((ff, fwt) => ff === 1 && fwt === 0 ? (m.consumedSize = fb.int64(), true) : false);
      r.pos = fb.end;
    } else return false;
    return true;
  });
  if (streamId === undefined) return r.fail("lacks required stream_id (field 1)");
  m.streamId = streamId;
  return m;
}

/** Encodes a `StreamFrameMeta`. */
export function encodeStreamFrameMeta(m: StreamFrameMeta): Uint8Array {
  const w = new Writer().field(1, m.streamId);
  if (m.sourceStreamId !== undefined) w.field(2, m.sourceStreamId);
  w.field(3, m.frameType);
  if (m.frameType === FRAME_DATA) w.field(4, m.hasContinuation ? 1 : 0);
  if (m.consumedSize !== undefined) {
    const fb = new Writer().field(1, m.consumedSize);
    w.varint((5 << 3) | 2).varint(fb.bytes.length);
    w.bytes.push(...fb.bytes);
  }
  return Uint8Array.from(w.bytes);
}

/**
 * One whole stream frame: `"STRM"` header, the encoded meta, then `payload` (copied). The
 * returned buffer is the caller's.
 */
export function encodeStreamFrame(m: StreamFrameMeta, payload?: Uint8Array): Uint8Array {
  const meta = encodeStreamFrameMeta(m);
  const n = payload?.length ?? 0;
  const body = meta.length + n;
  const out = new Uint8Array(FRAME_HEADER_SIZE + body);
  const v = new DataView(out.buffer);
  out.set([0x53, 0x54, 0x52, 0x4d]); // "STRM"
  v.setUint32(4, body);
  v.setUint32(8, meta.length);
  out.set(meta, FRAME_HEADER_SIZE);
  if (n > 0) out.set(payload!, FRAME_HEADER_SIZE + meta.length);
  return out;
}
