/**
 * The records a producer and the agent exchange in a ring slot (`transport/agent_ring/mod.ts` moves
 * them as opaque bytes). The agent treats every request as hostile: each length is checked
 * against the record's real size before any byte is read, and a bad record is answered with an
 * error response naming what was wrong.
 *
 * Request (little-endian):
 * ```
 *   0 u8 version   1 u8 forced path (0 none, 1 EAGER, 2 LAZY, 3 BULK, 4 TCP_FALLBACK)
 *   2 u16 service bytes   4 u16 method bytes   6 u16 0
 *   8 u32 request bytes  12 u32 attachment bytes  16 u32 timeout ms (0: the agent's default)
 *  20 u32 expected response bytes  24 u64 log id
 *  32 service | method | request | attachment
 * ```
 * Response:
 * ```
 *   0 u8 status (0 OK, 1 RPC_ERROR, 2 other error)  1 u8 path (0 EAGER … 3 TCP_FALLBACK)
 *   2 u16 fabric bytes   4 u32 response bytes   8 u32 attachment bytes  12 i32 brpc error code
 *  16 u16 error-code bytes  18 u16 error-text bytes  20 u32 0
 *  24 fabric | response | attachment | error code | error text
 * ```
 * Threading: any; encoders write into the caller's area and keep the bytes of the last names they
 * encoded (allocating only when a name changes); decoders keep the last names they decoded (per
 * module instance, so per thread).
 * @module
 */
import { VerbusError, type VerbusErrorCode } from "../../errors.ts";
import { RpcError } from "../errors.ts";
import type { Int64 } from "../protocol/rpc_meta.ts";
import type { CallPath } from "../client/selector.ts";
import { copyOut } from "../session/copy_out.ts";

const VERSION = 1;
/** Bytes of a request record's fixed part. */
export const REQUEST_HEADER = 32;
/** Bytes of a response record's fixed part. */
export const RESPONSE_HEADER = 24;
const PATHS: readonly CallPath[] = ["EAGER", "LAZY", "BULK", "TCP_FALLBACK"];
/** The empty attachment of a request that has none (read-only: nobody writes zero bytes). */
const NO_BYTES = new Uint8Array(0);
const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });
const lossy = new TextDecoder();

/**
 * The last strings decoded from bytes, kept with a copy of those bytes: a record naming the same
 * service and method (or fabric) as the one before — nearly every record — costs a byte compare
 * instead of a decoder call and a string.
 */
class LastText {
  #bytes = new Uint8Array(0);
  #text = "";
  /** The string of `rec[at, at + n)` (decoded by `decode` unless those bytes repeat the last). */
  get(rec: Uint8Array, at: number, n: number, decode: (b: Uint8Array) => string): string {
    const last = this.#bytes;
    if (n === last.length) {
      let i = 0;
      while (i < n && rec[at + i] === last[i]) i++;
      if (i === n) return this.#text;
    }
    const b = rec.slice(at, at + n);
    const text = decode(b);
    this.#bytes = b;
    this.#text = text;
    return text;
  }
}
const lastService = new LastText(), lastMethod = new LastText(), lastFabric = new LastText();
const strict = (b: Uint8Array) => dec.decode(b);
const loose = (b: Uint8Array) => lossy.decode(b);

/** A request as the agent decoded it (views into the slot: valid until it answers). */
export interface AgentRequest {
  service: string;
  method: string;
  request: Uint8Array;
  attachment: Uint8Array;
  timeoutMs: number;
  forcePath: CallPath | undefined;
  expectedResponseBytes: number;
  logId: Int64;
}

/** A call's fields as a producer sends them. */
export interface RequestFields {
  service: string;
  method: string;
  request: Uint8Array;
  attachment: Uint8Array;
  timeoutMs: number;
  forcePath?: CallPath;
  expectedResponseBytes?: number;
  logId?: Int64;
}

/** Bytes the request record of `f` takes (service and method counted as UTF-8 upper bounds). */
export function requestBytes(f: RequestFields): number {
  return REQUEST_HEADER + (f.service.length + f.method.length) * 3 + f.request.length +
    f.attachment.length;
}

/**
 * The bytes of the last string encoded, kept: a record naming the same service and method (or
 * fabric) as the one before — nearly every record — copies them instead of calling the encoder.
 */
class LastBytes {
  #text = "";
  #bytes = new Uint8Array(0);
  /** Writes `text` as UTF-8 at `area[at..]`; returns the bytes written (−1: no room). */
  put(text: string, area: Uint8Array, at: number): number {
    if (text !== this.#text) {
      const b = enc.encode(text);
      this.#text = text;
      this.#bytes = b;
    }
    const b = this.#bytes;
    if (at + b.length > area.length) return -1;
    copyBytes(area, at, b, 0, b.length);
    return b.length;
  }
}
const putService = new LastBytes(), putMethod = new LastBytes(), putFabric = new LastBytes();

/** Little-endian stores and loads on a byte array (no DataView per record). */
function set16(a: Uint8Array, at: number, v: number): void {
  a[at] = v;
  a[at + 1] = v >>> 8;
}
function set32(a: Uint8Array, at: number, v: number): void {
  a[at] = v;
  a[at + 1] = v >>> 8;
  a[at + 2] = v >>> 16;
  a[at + 3] = v >>> 24;
}
const get16 = (a: Uint8Array, at: number) => a[at] | (a[at + 1] << 8);
const get32 = (a: Uint8Array, at: number) =>
  (a[at] | (a[at + 1] << 8) | (a[at + 2] << 16) | (a[at + 3] << 24)) >>> 0;

/**
 * Writes the request record of `f` into `area`; returns its length, or −1 when it does not fit
 * (or a name passes 65535 bytes). Allocates nothing while the names repeat.
 */
export function encodeRequest(area: Uint8Array, f: RequestFields): number {
  if (requestBytes(f) > area.length) return -1;
  let at = REQUEST_HEADER;
  const s = putService.put(f.service, area, at);
  if (s < 0) return -1;
  at += s;
  const m = putMethod.put(f.method, area, at);
  if (m < 0) return -1;
  at += m;
  if (s > 0xffff || m > 0xffff) return -1;
  copyBytes(area, at, f.request, 0, f.request.length);
  at += f.request.length;
  if (f.attachment.length > 0) copyBytes(area, at, f.attachment, 0, f.attachment.length);
  at += f.attachment.length;
  const logId = f.logId ?? 0;
  area[0] = VERSION;
  area[1] = f.forcePath ? PATHS.indexOf(f.forcePath) + 1 : 0;
  set16(area, 2, s);
  set16(area, 4, m);
  set16(area, 6, 0);
  set32(area, 8, f.request.length);
  set32(area, 12, f.attachment.length);
  set32(area, 16, f.timeoutMs >>> 0);
  set32(area, 20, (f.expectedResponseBytes ?? 0) >>> 0);
  if (typeof logId === "number" && logId >= 0 && logId < 2 ** 32) {
    set32(area, 24, logId); // the common case, without a BigInt
    set32(area, 28, 0);
  } else {
    new DataView(area.buffer, area.byteOffset, REQUEST_HEADER)
      .setBigUint64(24, BigInt.asUintN(64, BigInt(logId)), true);
  }
  return at;
}

/** An empty request record to decode into (one shape for every record). */
export function newAgentRequest(): AgentRequest {
  return {
    service: "",
    method: "",
    request: NO_BYTES,
    attachment: NO_BYTES,
    timeoutMs: 0,
    forcePath: undefined,
    expectedResponseBytes: 0,
    logId: 0,
  };
}

/**
 * Decodes the request record in the first `length` bytes of `rec` (default: all of it) into
 * `into` (default: a new record) and returns it; throws BOUNDS / PROTOCOL naming the bad field.
 * The request and attachment are views into `rec`.
 */
export function decodeRequest(
  rec: Uint8Array,
  length: number = rec.length,
  into: AgentRequest = newAgentRequest(),
): AgentRequest {
  if (length > rec.length) {
    throw new VerbusError(
      "BOUNDS",
      `request record of ${length} bytes in a ${rec.length}-byte area`,
    );
  }
  if (length < REQUEST_HEADER) {
    throw new VerbusError(
      "BOUNDS",
      `request record of ${length} bytes (header is ${REQUEST_HEADER})`,
    );
  }
  if (rec[0] !== VERSION) {
    throw new VerbusError("PROTOCOL", `request record version ${rec[0]} (expected ${VERSION})`);
  }
  const fp = rec[1];
  if (fp > PATHS.length) throw new VerbusError("PROTOCOL", `request record forced path ${fp}`);
  const s = get16(rec, 2), m = get16(rec, 4);
  const r = get32(rec, 8), a = get32(rec, 12);
  const total = REQUEST_HEADER + s + m + r + a;
  if (total !== length) {
    throw new VerbusError(
      "BOUNDS",
      `request record lengths (service ${s}, method ${m}, request ${r}, attachment ${a}) sum to ${total}, the record has ${length}`,
    );
  }
  const at = REQUEST_HEADER;
  into.service = nameAt(rec, at, s, "service", lastService);
  into.method = nameAt(rec, at + s, m, "method", lastMethod);
  const body = at + s + m;
  into.request = rec.subarray(body, body + r);
  into.attachment = a === 0 ? NO_BYTES : rec.subarray(body + r, body + r + a);
  into.timeoutMs = get32(rec, 16);
  into.forcePath = fp === 0 ? undefined : PATHS[fp - 1];
  into.expectedResponseBytes = get32(rec, 20);
  into.logId = get32(rec, 28) === 0
    ? get32(rec, 24)
    : new DataView(rec.buffer, rec.byteOffset, REQUEST_HEADER).getBigInt64(24, true);
  return into;
}

/** The name in `rec[at, at + n)` (PROTOCOL naming `what` when it is not UTF-8). */
function nameAt(rec: Uint8Array, at: number, n: number, what: string, last: LastText): string {
  try {
    return last.get(rec, at, n, strict);
  } catch {
    throw new VerbusError("PROTOCOL", `request record ${what} is not UTF-8`);
  }
}

/** Bytes the response record of `r` takes at most (the fabric name counted as UTF-8 bound). */
export function responseBytes(
  r: { response: Uint8Array; attachment?: Uint8Array; fabric: string },
): number {
  return RESPONSE_HEADER + r.fabric.length * 3 + r.response.length + (r.attachment?.length ?? 0);
}

/** A successful answer, or −1 when it does not fit `area`. Allocates nothing while the fabric repeats. */
export function encodeResponse(
  area: Uint8Array,
  r: { response: Uint8Array; attachment?: Uint8Array; path: CallPath; fabric: string },
): number {
  const att = r.attachment?.length ?? 0;
  if (responseBytes(r) > area.length) return -1;
  let at = RESPONSE_HEADER;
  const f = putFabric.put(r.fabric, area, at);
  if (f < 0) return -1;
  at += f;
  area.set(r.response, at);
  at += r.response.length;
  if (att > 0) area.set(r.attachment!, at);
  at += att;
  area[0] = 0;
  area[1] = PATHS.indexOf(r.path);
  set16(area, 2, f);
  set32(area, 4, r.response.length);
  set32(area, 8, att);
  set32(area, 12, 0);
  set32(area, 16, 0);
  set32(area, 20, 0);
  return at;
}

/**
 * A successful answer whose response is `src[off, off + len)` and attachment the `att` bytes
 * after it (a remote session's slot: copied once, straight into `area`), or −1 when it does not
 * fit `area`. Allocates nothing while the fabric repeats.
 */
export function encodeResponseFrom(
  area: Uint8Array,
  src: Uint8Array,
  off: number,
  len: number,
  att: number,
  path: CallPath,
  fabric: string,
): number {
  if (RESPONSE_HEADER + fabric.length * 3 + len + att > area.length) return -1;
  let at = RESPONSE_HEADER;
  const f = putFabric.put(fabric, area, at);
  if (f < 0) return -1;
  at += f;
  copyBytes(area, at, src, off, len + att);
  at += len + att;
  area[0] = 0;
  area[1] = PATHS.indexOf(path);
  set16(area, 2, f);
  set32(area, 4, len);
  set32(area, 8, att);
  set32(area, 12, 0);
  set32(area, 16, 0);
  set32(area, 20, 0);
  return at;
}

/**
 * Copies `src[off, off + n)` to `dst[at..]`: a small one byte by byte (no view made, no call
 * into the runtime: `set` of 11 + 16 bytes costs ~51 ns on Deno and ~39 ns on Bun here, the
 * loops ~27 and ~23), a larger one with `set`.
 */
function copyBytes(dst: Uint8Array, at: number, src: Uint8Array, off: number, n: number): void {
  if (n <= 64) {
    for (let i = 0; i < n; i++) dst[at + i] = src[off + i];
  } else dst.set(src.subarray(off, off + n), at);
}

/** An error answer (RpcError keeps its brpc code); texts are cut to fit. */
export function encodeError(area: Uint8Array, e: unknown): number {
  const rpc = e instanceof RpcError;
  const code = rpc ? "RPC_ERROR" : e instanceof VerbusError ? e.code : "FABRIC";
  const text = rpc ? e.errorText : e instanceof Error ? e.message : String(e);
  const v = new DataView(area.buffer, area.byteOffset, RESPONSE_HEADER);
  let at = RESPONSE_HEADER;
  const c = enc.encodeInto(code, area.subarray(at, at + 32)).written;
  at += c;
  const t = enc.encodeInto(text, area.subarray(at, Math.min(area.length, at + 4096))).written;
  at += t;
  v.setUint8(0, rpc ? 1 : 2);
  v.setUint8(1, 0);
  v.setUint16(2, 0, true);
  v.setUint32(4, 0, true);
  v.setUint32(8, 0, true);
  v.setInt32(12, rpc ? e.errorCode : 0, true);
  v.setUint16(16, c, true);
  v.setUint16(18, t, true);
  v.setUint32(20, 0, true);
  return at;
}

/** A decoded answer: the call's result (bytes copied out of the slot) or its error. */
export type AgentAnswer =
  | { ok: true; response: Uint8Array; attachment: Uint8Array; path: CallPath; fabric: string }
  | { ok: false; error: VerbusError };

/**
 * Decodes the response record in the first `length` bytes of `rec` (default: all of it), copying
 * its bytes out (`copyOut`: small ones from a pooled chunk on Deno); a malformed one becomes a
 * PROTOCOL error.
 */
export function decodeResponse(rec: Uint8Array, length: number = rec.length): AgentAnswer {
  const r = decodeAgentResult(rec, length);
  if (r instanceof VerbusError) return { ok: false, error: r };
  return {
    ok: true,
    response: r.response,
    attachment: r.attachment,
    path: r.path,
    fabric: r.fabric,
  };
}

/** What a producer's call through the agent resolves with. */
export interface AgentResult {
  response: Uint8Array;
  attachment: Uint8Array;
  path: CallPath;
  fabric: string;
  via: "agent";
}

/**
 * {@link decodeResponse} building the caller's result itself (no intermediate record, no closure;
 * an empty attachment is the shared empty array): the result, or the error the call fails with.
 */
export function decodeAgentResult(rec: Uint8Array, length: number): AgentResult | VerbusError {
  if (length === 0) return badResponse("is empty: the agent rejected the request record");
  if (length < RESPONSE_HEADER || length > rec.length) return badResponse(`of ${length} bytes`);
  const status = rec[0], path = rec[1], f = get16(rec, 2);
  const r = get32(rec, 4), a = get32(rec, 8);
  const c = get16(rec, 16), t = get16(rec, 18);
  if (RESPONSE_HEADER + f + r + a + c + t !== length || path >= PATHS.length || status > 2) {
    return badResponse("has inconsistent lengths");
  }
  let at = RESPONSE_HEADER;
  const fabric = lastFabric.get(rec, at, f, loose);
  at += f;
  if (status === 0) {
    return {
      response: copyOut(rec, at, r),
      attachment: a === 0 ? NO_BYTES : copyOut(rec, at + r, a),
      path: PATHS[path],
      fabric,
      via: "agent",
    };
  }
  at += r + a;
  const code = lossy.decode(rec.subarray(at, at + c));
  const message = lossy.decode(rec.subarray(at + c, at + c + t));
  if (status === 1) return new RpcError(get32(rec, 12) | 0, message);
  const known = /^[A-Z_]{1,32}$/.test(code) ? code as VerbusErrorCode : "FABRIC";
  return new VerbusError(known, `agent: ${message}`);
}

function badResponse(why: string): VerbusError {
  return new VerbusError("PROTOCOL", `agent response ${why}`);
}
