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
 * This file holds what both kinds share: the version, the path codes, the little-endian stores and
 * loads and the name caches; `request_record.ts` and `response_record.ts` encode and decode.
 *
 * Threading: any; the name caches are per module instance, so per thread.
 * @module
 */
import type { CallPath } from "../client/selector.ts";

/** Version byte of a request record. */
export const VERSION = 1;
/** Bytes of a request record's fixed part. */
export const REQUEST_HEADER = 32;
/** Bytes of a response record's fixed part. */
export const RESPONSE_HEADER = 24;
/** Path codes of both records, in order (a forced path is stored as its index + 1). */
export const PATHS: readonly CallPath[] = ["EAGER", "LAZY", "BULK", "TCP_FALLBACK"];
/** The empty attachment of a record that has none (read-only: nobody writes zero bytes). */
export const NO_BYTES = new Uint8Array(0);
/** The UTF-8 encoder both records use (names, and error texts encoded into the slot). */
export const utf8 = new TextEncoder();

/**
 * The last strings decoded from bytes, kept with a copy of those bytes: a record naming the same
 * service and method (or fabric) as the one before — nearly every record — costs a byte compare
 * instead of a decoder call and a string.
 */
export class LastText {
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
/**
 * The bytes of the last string encoded, kept: a record naming the same service and method (or
 * fabric) as the one before — nearly every record — copies them instead of calling the encoder.
 */
export class LastBytes {
  #text = "";
  #bytes = new Uint8Array(0);
  /** Writes `text` as UTF-8 at `area[at..]`; returns the bytes written (−1: no room). */
  put(text: string, area: Uint8Array, at: number): number {
    if (text !== this.#text) {
      const b = utf8.encode(text);
      this.#text = text;
      this.#bytes = b;
    }
    const b = this.#bytes;
    if (at + b.length > area.length) return -1;
    copyBytes(area, at, b, 0, b.length);
    return b.length;
  }
}
/** Little-endian stores and loads on a byte array (no DataView per record). */
export function set16(a: Uint8Array, at: number, v: number): void {
  a[at] = v;
  a[at + 1] = v >>> 8;
}
export function set32(a: Uint8Array, at: number, v: number): void {
  a[at] = v;
  a[at + 1] = v >>> 8;
  a[at + 2] = v >>> 16;
  a[at + 3] = v >>> 24;
}
export const get16 = (a: Uint8Array, at: number) => a[at] | (a[at + 1] << 8);
export const get32 = (a: Uint8Array, at: number) =>
  (a[at] | (a[at + 1] << 8) | (a[at + 2] << 16) | (a[at + 3] << 24)) >>> 0;

/**
 * Copies `src[off, off + n)` to `dst[at..]`: a small one byte by byte (no view made, no call
 * into the runtime: `set` of 11 + 16 bytes costs ~51 ns on Deno and ~39 ns on Bun here, the
 * loops ~27 and ~23), a larger one with `set`.
 */
export function copyBytes(
  dst: Uint8Array,
  at: number,
  src: Uint8Array,
  off: number,
  n: number,
): void {
  if (n <= 64) {
    for (let i = 0; i < n; i++) dst[at + i] = src[off + i];
  } else dst.set(src.subarray(off, off + n), at);
}
