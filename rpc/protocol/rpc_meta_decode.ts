/**
 * RpcMeta decoder (see `rpc_meta.ts` for the message and field numbers): a module-level cursor
 * over the caller's bytes, no reader object; short ASCII strings (service and method names) come
 * from a small cache, and a request meta byte-identical to the previous one is handed out again
 * (frozen) instead of being decoded.
 *
 * Threading: module-level state; call from one JS thread.
 * @module
 */
import { ProtocolError } from "../../errors.ts";
import {
  type ErrorDetail,
  FIELD_ERROR_DETAILS,
  FIELD_TRAILERS,
  type Int64,
  type RpcMeta,
  type RpcRequestMeta,
  type RpcResponseMeta,
} from "./rpc_meta.ts";

const EMPTY = new Uint8Array(0);
let rbuf: Uint8Array = EMPTY;
let rpos = 0;
let lo = 0;
let hi = 0;
const decoder = new TextDecoder();

function fail(what: string): never {
  rbuf = EMPTY; // do not retain the caller's bytes
  throw new ProtocolError(`undecodable RpcMeta: ${what} (at byte ${rpos})`);
}

/** Reads a varint into `lo`/`hi` (low and high 32 bits, unsigned). */
function readVarint(end: number): void {
  let b = 0, shift = 0;
  lo = 0;
  hi = 0;
  for (; shift < 28; shift += 7) {
    if (rpos >= end) fail("varint runs past the end");
    b = rbuf[rpos++];
    lo |= (b & 0x7f) << shift;
    if (b < 0x80) {
      lo >>>= 0;
      return;
    }
  }
  if (rpos >= end) fail("varint runs past the end");
  b = rbuf[rpos++];
  lo = (lo | ((b & 0x0f) << 28)) >>> 0;
  hi = (b & 0x70) >> 4;
  if (b < 0x80) return;
  for (shift = 3; shift < 32; shift += 7) {
    if (rpos >= end) fail("varint runs past the end");
    b = rbuf[rpos++];
    hi |= (b & 0x7f) << shift;
    if (b < 0x80) {
      hi >>>= 0;
      return;
    }
  }
  fail("varint longer than 10 bytes");
}

function readInt32(end: number): number {
  readVarint(end);
  return lo | 0;
}

function readInt64(end: number): Int64 {
  readVarint(end);
  if (hi < 0x200000) return hi * 0x100000000 + lo;
  if (hi >= 0xffe00001) return (hi - 0x100000000) * 0x100000000 + lo;
  return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo));
}

/** Reads a length prefix; returns the end of the delimited value. */
function readLen(end: number): number {
  readVarint(end);
  if (hi !== 0 || lo > end - rpos) {
    fail(`length ${hi ? "> 2^32" : lo} exceeds the remaining ${end - rpos} bytes`);
  }
  return rpos + lo;
}

/** Recently decoded short ASCII strings (service and method names repeat on every call). */
const strCache: (string | undefined)[] = new Array(64).fill(undefined);

function readString(end: number): string {
  const e = readLen(end);
  const start = rpos;
  const n = e - start;
  rpos = e;
  if (n === 0) return "";
  if (n > 48) {
    return n <= 1024 ? asciiOrUtf8(rbuf, start, e) : decoder.decode(rbuf.subarray(start, e));
  }
  const b = rbuf;
  const h = (n * 31 + b[start] * 7 + b[e - 1] * 3 + b[start + (n >> 1)]) & 63;
  const c = strCache[h];
  if (c !== undefined && c.length === n) {
    let i = 0;
    while (i < n && c.charCodeAt(i) === b[start + i]) i++;
    if (i === n) return c;
  }
  let s = "";
  for (let i = start; i < e; i++) {
    const x = b[i];
    if (x >= 0x80) return decoder.decode(b.subarray(start, e));
    s += String.fromCharCode(x);
  }
  strCache[h] = s;
  return s;
}

/**
 * `b[start, end)` as a string: ASCII (a header value, a trace id) without the TextDecoder's
 * call (an op call on Deno, dear next to a loop over a few bytes), anything else through it.
 */
function asciiOrUtf8(b: Uint8Array, start: number, end: number): string {
  for (let i = start; i < end; i++) if (b[i] >= 0x80) return decoder.decode(b.subarray(start, end));
  return String.fromCharCode.apply(null, b.subarray(start, end) as unknown as number[]);
}

function readBytes(end: number): Uint8Array {
  const e = readLen(end);
  const out = rbuf.slice(rpos, e);
  rpos = e;
  return out;
}

function skip(wireType: number, field: number, end: number): void {
  switch (wireType) {
    case 0:
      readVarint(end);
      return;
    case 1:
      if (end - rpos < 8) fail(`fixed64 field ${field} runs past the end`);
      rpos += 8;
      return;
    case 2:
      rpos = readLen(end);
      return;
    case 5:
      if (end - rpos < 4) fail(`fixed32 field ${field} runs past the end`);
      rpos += 4;
      return;
    case 3:
      for (;;) {
        if (rpos >= end) fail(`group ${field} has no end`);
        readVarint(end);
        const t = lo, wt = t & 7, f = t >>> 3;
        if (wt === 4) {
          if (f !== field) fail(`group ${field} closed by end-group ${f}`);
          return;
        }
        skip(wt, f, end);
      }
    default:
      fail(`field ${field} has invalid wire type ${wireType}`);
  }
}

// Consecutive requests usually carry byte-identical request metas (same service, method and
// timeout): the last one decoded is kept, frozen, and handed out again when the bytes match.
const lastReqBytes = new Uint8Array(256);
let lastReqLen = -1;
let lastReq: RpcRequestMeta | undefined;

function readRequestCached(end: number): RpcRequestMeta {
  const n = end - rpos;
  const b = rbuf, start = rpos;
  const c = lastReqBytes;
  if (n === lastReqLen) {
    let i = 0;
    while (i < n && c[i] === b[start + i]) i++;
    if (i === n) {
      rpos = end;
      return lastReq!;
    }
  }
  const r = Object.freeze(readRequest(end));
  if (n <= c.length) {
    for (let i = 0; i < n; i++) c[i] = b[start + i];
    lastReqLen = n;
    lastReq = r;
  } else {
    lastReqLen = -1;
  }
  return r;
}

function readRequest(end: number): RpcRequestMeta {
  const r: RpcRequestMeta = { serviceName: undefined!, methodName: undefined! };
  while (rpos < end) {
    readVarint(end);
    const f = lo >>> 3, wt = lo & 7;
    if (f === 1 && wt === 2) r.serviceName = readString(end);
    else if (f === 2 && wt === 2) r.methodName = readString(end);
    else if (f === 3 && wt === 0) r.logId = readInt64(end);
    else if (f === 4 && wt === 0) r.traceId = readInt64(end);
    else if (f === 5 && wt === 0) r.spanId = readInt64(end);
    else if (f === 6 && wt === 0) r.parentSpanId = readInt64(end);
    else if (f === 7 && wt === 2) r.requestId = readString(end);
    else if (f === 8 && wt === 0) r.timeoutMs = readInt32(end);
    else skip(wt, f, end);
  }
  if (r.serviceName === undefined) fail("RpcRequestMeta lacks required service_name (field 1)");
  if (r.methodName === undefined) fail("RpcRequestMeta lacks required method_name (field 2)");
  return r;
}

function readResponse(end: number): RpcResponseMeta {
  const r: RpcResponseMeta = {};
  while (rpos < end) {
    readVarint(end);
    const f = lo >>> 3, wt = lo & 7;
    if (f === 1 && wt === 0) r.errorCode = readInt32(end);
    else if (f === 2 && wt === 2) r.errorText = readString(end);
    else skip(wt, f, end);
  }
  return r;
}

function readMapEntry(end: number, into: Map<string, string>): void {
  let k = "", v = "";
  while (rpos < end) {
    readVarint(end);
    const f = lo >>> 3, wt = lo & 7;
    if (f === 1 && wt === 2) k = readString(end);
    else if (f === 2 && wt === 2) v = readString(end);
    else skip(wt, f, end);
  }
  into.set(k, v);
}

function readDetail(end: number): ErrorDetail {
  let type = "", value: Uint8Array = EMPTY;
  while (rpos < end) {
    readVarint(end);
    const f = lo >>> 3, wt = lo & 7;
    if (f === 1 && wt === 2) type = readString(end);
    else if (f === 2 && wt === 2) value = readBytes(end);
    else skip(wt, f, end);
  }
  return { type, value };
}

/**
 * Decodes `bytes[start, end)` as an RpcMeta. Throws `ProtocolError` naming the defect (truncated
 * varint, length past the end, bad wire type, missing required field). Byte fields are copies;
 * the input is not retained. `request` may be a frozen object shared with the previous decode
 * (when its bytes were identical).
 */
export function decodeRpcMeta(bytes: Uint8Array, start = 0, end = bytes.length): RpcMeta {
  rbuf = bytes;
  rpos = start;
  const m: RpcMeta = {};
  while (rpos < end) {
    // every RpcMeta tag fits one byte; longer ones are unknown fields
    let t = rbuf[rpos];
    if (t < 0x80) rpos++;
    else (readVarint(end), t = lo);
    const f = t >>> 3, wt = t & 7;
    if (f === 0) fail("field number 0");
    if (f === 1 && wt === 2) m.request = readRequestCached(readLen(end));
    else if (f === 2 && wt === 2) m.response = readResponse(readLen(end));
    else if (f === 3 && wt === 0) m.compressType = readInt32(end);
    else if (f === 4 && wt === 0) m.correlationId = readInt64(end);
    else if (f === 5 && wt === 0) m.attachmentSize = readInt32(end);
    else if (f === 6 && wt === 2) m.chunkInfo = readBytes(end);
    else if (f === 7 && wt === 2) m.authenticationData = readBytes(end);
    else if (f === 8 && wt === 2) m.streamSettings = readBytes(end);
    else if (f === 9 && wt === 2) readMapEntry(readLen(end), m.userFields ??= new Map());
    else if (f === FIELD_TRAILERS && wt === 2) {
      readMapEntry(readLen(end), m.trailers ??= new Map());
    } else if (f === FIELD_ERROR_DETAILS && wt === 2) {
      (m.errorDetails ??= []).push(readDetail(readLen(end)));
    } else skip(wt, f, end);
  }
  rbuf = EMPTY; // do not retain the caller's bytes
  return m;
}

/**
 * Fast path for the meta of a plain request, the shape a verbus channel (and a brpc client) sends
 * call after call: `request` (field 1) byte-identical to the last request meta decoded here, then
 * `correlation_id` (< 2^49) and optionally a non-negative `attachment_size`, in field order,
 * nothing else. Returns a fresh {@link RpcMeta} (the caller's) whose `request` is the shared
 * frozen one, or `undefined` for any other shape — then use {@link decodeRpcMeta}, which also
 * makes that request the cached one. Reads `b[start, end)` only; keeps nothing.
 */
export function decodeRequestMetaFast(
  b: Uint8Array,
  start: number,
  end: number,
): RpcMeta | undefined {
  if (lastReqLen < 0 || end - start < 4 || b[start] !== 0x0a) return undefined;
  const n = smallVarint(b, start + 1, end);
  if (n !== lastReqLen) return undefined;
  let p = vpos;
  if (end - p < n + 2) return undefined;
  const c = lastReqBytes;
  for (let i = 0; i < n; i++) if (c[i] !== b[p + i]) return undefined;
  p += n;
  if (b[p] !== 0x20) return undefined;
  const id = smallVarint(b, p + 1, end);
  if (id < 0) return undefined;
  p = vpos;
  if (p === end) return { request: lastReq, correlationId: id };
  if (b[p] !== 0x28) return undefined;
  const att = smallVarint(b, p + 1, end);
  if (att < 0 || att > 0x7fffffff || vpos !== end) return undefined;
  return { request: lastReq, correlationId: id, attachmentSize: att };
}

/** Reads a varint of at most 7 bytes (< 2^49) at `b[p..end)`; sets `vpos`; -1 if not one. */
let vpos = 0;
function smallVarint(b: Uint8Array, p: number, end: number): number {
  let v = 0, mul = 1;
  for (let i = 0; i < 7 && p < end; i++, mul *= 128) {
    const x = b[p++];
    v += (x & 0x7f) * mul;
    if (x < 0x80) {
      vpos = p;
      return v;
    }
  }
  return -1;
}

/**
 * Fast path for the meta of a plain answer: exactly `correlation_id` (< 2^49) and optionally a
 * non-negative `attachment_size`, in field order. On a match it sets `into.correlationId` and
 * `into.attachmentSize` (undefined when absent) and returns `true`; the caller owns `into` and
 * must not have set other fields on it. Any other shape returns `false` (use
 * {@link decodeRpcMeta}). Reads `b[start, end)` only; keeps nothing.
 */
export function decodeAnswerMeta(
  b: Uint8Array,
  start: number,
  end: number,
  into: RpcMeta,
): boolean {
  if (end - start < 2 || b[start] !== 0x20) return false;
  const id = smallVarint(b, start + 1, end);
  if (id < 0) return false;
  let p = vpos, att: number | undefined;
  if (p < end) {
    if (b[p] !== 0x28) return false;
    att = smallVarint(b, p + 1, end);
    if (att < 0 || att > 0x7fffffff) return false;
    p = vpos;
  }
  if (p !== end) return false;
  into.correlationId = id;
  into.attachmentSize = att;
  return true;
}
