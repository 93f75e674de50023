/**
 * RpcMeta encoder (see `rpc_meta.ts` for the message and field numbers): one pass into a
 * module-level scratch buffer, sub-message lengths patched afterwards, and the last plain request
 * meta's bytes reused when the next one is the same (the common case of a client).
 *
 * Threading: module-level scratch state; call from one JS thread.
 * @module
 */
import {
  FIELD_ERROR_DETAILS,
  FIELD_TRAILERS,
  type Int64,
  type RpcMeta,
  type RpcRequestMeta,
} from "./rpc_meta.ts";

let wbuf = new Uint8Array(4096);
let wpos = 0;
const encoder = new TextEncoder();

function ensure(n: number): void {
  if (wpos + n <= wbuf.length) return;
  let size = wbuf.length * 2;
  while (size < wpos + n) size *= 2;
  const next = new Uint8Array(size);
  next.set(wbuf.subarray(0, wpos));
  wbuf = next;
}

/** Unsigned varint of 0 <= v < 2^53. */
function putVarintNum(v: number): void {
  ensure(10);
  while (v > 0x7fffffff) {
    wbuf[wpos++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  while (v > 0x7f) {
    wbuf[wpos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  wbuf[wpos++] = v;
}

function putVarintBig(v: bigint): void {
  ensure(10);
  let u = BigInt.asUintN(64, v);
  while (u > 0x7fn) {
    wbuf[wpos++] = Number(u & 0x7fn) | 0x80;
    u >>= 7n;
  }
  wbuf[wpos++] = Number(u);
}

/** int32 field value: negative values are sign-extended to 10 bytes, as protobuf does. */
function putInt32(v: number): void {
  if (v >= 0) putVarintNum(v);
  else putVarintBig(BigInt(v | 0));
}

function putInt64(v: Int64): void {
  if (typeof v === "bigint") putVarintBig(v);
  else if (v >= 0) putVarintNum(v);
  else putVarintBig(BigInt(v));
}

function putTag(field: number, wireType: number): void {
  if (field >= 16) return putVarintNum(field * 8 + wireType); // the verbus extensions
  ensure(1);
  wbuf[wpos++] = (field << 3) | wireType;
}

/** Starts a length-delimited value; returns where its (1-byte, patched later) length goes. */
function beginLen(): number {
  ensure(1);
  return wpos++;
}

function endLen(at: number): void {
  const len = wpos - at - 1;
  if (len < 0x80) {
    wbuf[at] = len;
    return;
  }
  let k = 1;
  for (let x = len; x > 0x7f; x >>>= 7) k++;
  ensure(k - 1);
  wbuf.copyWithin(at + k, at + 1, wpos);
  let p = at;
  let x = len;
  while (x > 0x7f) {
    wbuf[p++] = (x & 0x7f) | 0x80;
    x >>>= 7;
  }
  wbuf[p] = x;
  wpos += k - 1;
}

function putString(field: number, s: string): void {
  putTag(field, 2);
  const at = beginLen();
  const n = s.length;
  ensure(n * 3);
  let p = wpos;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) {
      p = wpos + encoder.encodeInto(s, wbuf.subarray(wpos)).written;
      break;
    }
    wbuf[p++] = c;
  }
  wpos = p;
  endLen(at);
}

function putBytes(field: number, b: Uint8Array): void {
  putTag(field, 2);
  putVarintNum(b.length);
  ensure(b.length);
  wbuf.set(b, wpos);
  wpos += b.length;
}

/**
 * Encodes `meta` and returns a view of the encoded bytes in a module-level scratch buffer. The
 * view is valid only until the next call in this module: copy it before encoding again.
 * `attachmentSize` (when given) replaces `meta.attachmentSize` (0 = omit).
 */
export function encodeRpcMeta(meta: RpcMeta, attachmentSize?: number): Uint8Array {
  const n = encodeRpcMetaToScratch(meta, attachmentSize); // may grow (replace) the scratch buffer
  return wbuf.subarray(0, n);
}

/**
 * Allocation-free form of {@link encodeRpcMeta}: encodes into the scratch buffer and returns the
 * encoded length; {@link copyEncodedMeta} then copies it where it belongs.
 */
export function encodeRpcMetaToScratch(meta: RpcMeta, attachmentSize?: number): number {
  wpos = 0;
  const req = meta.request;
  if (req !== undefined) {
    if (
      req.serviceName === encService && req.methodName === encMethod &&
      req.timeoutMs === encTimeout && req.logId === undefined && req.requestId === undefined &&
      req.traceId === undefined && req.spanId === undefined && req.parentSpanId === undefined
    ) {
      // Same request meta as last time (the common case of a client): copy its bytes.
      const n = encReqLen;
      ensure(n);
      for (let i = 0; i < n; i++) wbuf[i] = encReqBytes[i];
      wpos = n;
    } else {
      putRequest(req);
    }
  }
  const res = meta.response;
  if (res !== undefined) {
    putTag(2, 2);
    const at = beginLen();
    if (res.errorCode !== undefined) (putTag(1, 0), putInt32(res.errorCode));
    if (res.errorText !== undefined) putString(2, res.errorText);
    endLen(at);
  }
  if (meta.compressType !== undefined) (putTag(3, 0), putInt32(meta.compressType));
  if (meta.correlationId !== undefined) (putTag(4, 0), putInt64(meta.correlationId));
  const att = attachmentSize ?? meta.attachmentSize;
  if (att !== undefined && (attachmentSize === undefined || att > 0)) (putTag(5, 0), putInt32(att));
  if (meta.chunkInfo !== undefined) putBytes(6, meta.chunkInfo);
  if (meta.authenticationData !== undefined) putBytes(7, meta.authenticationData);
  if (meta.streamSettings !== undefined) putBytes(8, meta.streamSettings);
  if (meta.userFields !== undefined) putMap(9, meta.userFields);
  if (meta.trailers !== undefined) putMap(FIELD_TRAILERS, meta.trailers);
  if (meta.errorDetails !== undefined) {
    for (const d of meta.errorDetails) {
      putTag(FIELD_ERROR_DETAILS, 2);
      const at = beginLen();
      putString(1, d.type);
      putBytes(2, d.value);
      endLen(at);
    }
  }
  return wpos;
}

function putMap(field: number, map: ReadonlyMap<string, string>): void {
  for (const [k, v] of map) {
    putTag(field, 2);
    const at = beginLen();
    putString(1, k);
    putString(2, v);
    endLen(at);
  }
}

// The last plain request meta encoded (no log/trace/request ids): its bytes, for reuse.
let encService: string | undefined;
let encMethod: string | undefined;
let encTimeout: number | undefined;
let encReqLen = 0;
const encReqBytes = new Uint8Array(256);

/** Encodes field 1 (the request meta) at the start of the scratch buffer; remembers plain ones. */
function putRequest(req: RpcRequestMeta): void {
  putTag(1, 2);
  const at = beginLen();
  putString(1, req.serviceName);
  putString(2, req.methodName);
  if (req.logId !== undefined) (putTag(3, 0), putInt64(req.logId));
  if (req.traceId !== undefined) (putTag(4, 0), putInt64(req.traceId));
  if (req.spanId !== undefined) (putTag(5, 0), putInt64(req.spanId));
  if (req.parentSpanId !== undefined) (putTag(6, 0), putInt64(req.parentSpanId));
  if (req.requestId !== undefined) putString(7, req.requestId);
  if (req.timeoutMs !== undefined) (putTag(8, 0), putInt32(req.timeoutMs));
  endLen(at);
  const plain = req.logId === undefined && req.requestId === undefined &&
    req.traceId === undefined && req.spanId === undefined && req.parentSpanId === undefined;
  if (plain && wpos <= encReqBytes.length) {
    encReqBytes.set(wbuf.subarray(0, wpos));
    encReqLen = wpos;
    encService = req.serviceName;
    encMethod = req.methodName;
    encTimeout = req.timeoutMs;
  } else {
    encService = encMethod = undefined;
  }
}

/** Copies the first `len` bytes of the last {@link encodeRpcMetaToScratch} result to `out[off..]`. */
export function copyEncodedMeta(out: Uint8Array, off: number, len: number): void {
  if (len > 64) {
    out.set(wbuf.subarray(0, len), off);
    return;
  }
  const b = wbuf;
  for (let i = 0; i < len; i++) out[off + i] = b[i];
}
