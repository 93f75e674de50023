/**
 * Binary encodings of every demo-service operation (service `verbus.Demo`) plus brpc's echo
 * messages (service `example.EchoService`, re-exported from `brpc_echo.ts`; the result blobs are
 * re-exported from `blob.ts`). All integers are little-endian; variable parts follow
 * a fixed header and their lengths are checked against the message length exactly. Encoders return
 * a fresh buffer owned by the caller; decoders return views into the input where they say so (valid
 * while the caller keeps the input unchanged) and throw a {@link VerbusError} naming the field
 * (`PROTOCOL` malformed, `BOUNDS` a length or offset out of range) — never read outside the input.
 *
 * | method | request | response |
 * |---|---|---|
 * | Ping | empty, or u64 nonce | u64 nonce, u64 server_time_us |
 * | Echo | payload bytes | the same bytes (attachment echoed too) |
 * | KvPut, BigPut | u32 key_len, u32 value_len, key, value | u32 flags (bit 0 replaced), u32 0, u64 length |
 * | KvGet | u32 key_len, key | u32 found, u32 value_len, value |
 * | MGet | u32 count, count × (u32 key_len, key) | dynamic-array blob (see `blob.ts`) |
 * | Profile | u64 user id | composite-struct blob (see `blob.ts`) |
 * | LargeGet | u32 key_len, key | the object bytes |
 * | ImagePut | 44-byte chunk header, name, data | u64 received, u32 state, u32 0, u64 server hash |
 *
 * The ImagePut chunk codec lives in `image_codec.ts` (re-exported here).
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { asBytes, needLength, u64, viewOf } from "./codec_primitives.ts";

export { decodeDynamicArray, decodeProfile, encodeDynamicArray, encodeProfile } from "./blob.ts";
export { decodeEchoMessage, encodeEchoMessage } from "./brpc_echo.ts";
export type { Profile } from "./blob.ts";
export {
  decodeImageChunk,
  decodeImageChunkResult,
  encodeImageChunk,
  encodeImageChunkResult,
  IMAGE_CHUNK_HEADER_BYTES,
  UPLOAD_FLAG_ABORT,
  UPLOAD_FLAG_COMMIT,
  UPLOAD_FLAG_INIT,
  UPLOAD_STATE_ABORTED,
  UPLOAD_STATE_COMMITTED,
  UPLOAD_STATE_OPEN,
} from "./image_codec.ts";
export type { ImageChunk, ImageChunkResult } from "./image_codec.ts";

/** Result of KvPut / BigPut. */
export interface PutResult {
  /** Whether an older value was replaced. */
  replaced: boolean;
  /** Bytes stored. */
  length: number;
}

/** Result of Ping. */
export interface PingResult {
  /** The request's nonce (0n for an empty request). */
  nonce: bigint;
  /** Server wall clock in µs since the epoch. */
  serverTimeUs: bigint;
}

/** Encodes a Ping request carrying `nonce`. */
export function encodePingRequest(nonce: bigint): Uint8Array {
  const b = new Uint8Array(8);
  viewOf(b).setBigUint64(0, u64("ping nonce", nonce), true);
  return b;
}

/** Decodes a Ping request: empty means nonce 0n. */
export function decodePingRequest(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n;
  needLength("Ping request", bytes, 8, true);
  return viewOf(bytes).getBigUint64(0, true);
}

/** Encodes a Ping response. */
export function encodePingResponse(r: PingResult): Uint8Array {
  const b = new Uint8Array(16);
  const dv = viewOf(b);
  dv.setBigUint64(0, u64("ping nonce", r.nonce), true);
  dv.setBigUint64(8, u64("server time", r.serverTimeUs), true);
  return b;
}

/** Decodes a Ping response. */
export function decodePingResponse(bytes: Uint8Array): PingResult {
  needLength("Ping response", bytes, 16, true);
  const dv = viewOf(bytes);
  return { nonce: dv.getBigUint64(0, true), serverTimeUs: dv.getBigUint64(8, true) };
}

/** Encodes a request holding one key (KvGet, LargeGet). Strings are sent as UTF-8. */
export function encodeKeyRequest(key: string | Uint8Array): Uint8Array {
  const k = asBytes(key);
  const b = new Uint8Array(4 + k.length);
  viewOf(b).setUint32(0, k.length, true);
  b.set(k, 4);
  return b;
}

/** Decodes a one-key request; returns the key bytes as a view into `bytes`. */
export function decodeKeyRequest(bytes: Uint8Array, what = "key request"): Uint8Array {
  needLength(what, bytes, 4, false);
  const n = viewOf(bytes).getUint32(0, true);
  if (4 + n !== bytes.length) {
    throw new VerbusError(
      "PROTOCOL",
      `${what}: key_len ${n} does not match the ${bytes.length - 4} bytes after the header`,
    );
  }
  return bytes.subarray(4);
}

/** Encodes a KvPut / BigPut request (copies key and value). */
export function encodePutRequest(key: string | Uint8Array, value: Uint8Array): Uint8Array {
  const k = asBytes(key);
  const b = new Uint8Array(8 + k.length + value.length);
  const dv = viewOf(b);
  dv.setUint32(0, k.length, true);
  dv.setUint32(4, value.length, true);
  b.set(k, 8);
  b.set(value, 8 + k.length);
  return b;
}

/** Decodes a KvPut / BigPut request; `key` and `value` are views into `bytes`. */
export function decodePutRequest(
  bytes: Uint8Array,
  what = "put request",
): { key: Uint8Array; value: Uint8Array } {
  needLength(what, bytes, 8, false);
  const dv = viewOf(bytes);
  const kn = dv.getUint32(0, true), vn = dv.getUint32(4, true);
  if (8 + kn + vn !== bytes.length) {
    throw new VerbusError(
      "PROTOCOL",
      `${what}: key_len ${kn} + value_len ${vn} does not match the ${
        bytes.length - 8
      } bytes after the header`,
    );
  }
  return { key: bytes.subarray(8, 8 + kn), value: bytes.subarray(8 + kn) };
}

/** Encodes a KvPut / BigPut response. */
export function encodePutResponse(r: PutResult): Uint8Array {
  const b = new Uint8Array(16);
  const dv = viewOf(b);
  dv.setUint32(0, r.replaced ? 1 : 0, true);
  dv.setBigUint64(8, BigInt(r.length), true);
  return b;
}

/** Decodes a KvPut / BigPut response. */
export function decodePutResponse(bytes: Uint8Array): PutResult {
  needLength("put response", bytes, 16, true);
  const dv = viewOf(bytes);
  const flags = dv.getUint32(0, true);
  if ((flags & ~1) !== 0) {
    throw new VerbusError("PROTOCOL", `put response: unknown flags 0x${flags.toString(16)}`);
  }
  const length = dv.getBigUint64(8, true);
  if (length > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new VerbusError("BOUNDS", `put response: length ${length} too large`);
  }
  return { replaced: flags === 1, length: Number(length) };
}

/** Encodes a KvGet response: `undefined` means not found. Copies `value`. */
export function encodeGetResponse(value: Uint8Array | undefined): Uint8Array {
  const b = new Uint8Array(8 + (value?.length ?? 0));
  const dv = viewOf(b);
  if (value !== undefined) {
    dv.setUint32(0, 1, true);
    dv.setUint32(4, value.length, true);
    b.set(value, 8);
  }
  return b;
}

/** Decodes a KvGet response: the value as a view into `bytes`, or `undefined` when not found. */
export function decodeGetResponse(bytes: Uint8Array): Uint8Array | undefined {
  needLength("get response", bytes, 8, false);
  const dv = viewOf(bytes);
  const found = dv.getUint32(0, true), n = dv.getUint32(4, true);
  if (found > 1) {
    throw new VerbusError("PROTOCOL", `get response: found flag ${found}, expected 0 or 1`);
  }
  if (8 + n !== bytes.length || (found === 0 && n !== 0)) {
    throw new VerbusError(
      "PROTOCOL",
      `get response: value_len ${n} does not match the ${bytes.length - 8} bytes after the header`,
    );
  }
  return found === 1 ? bytes.subarray(8) : undefined;
}

/** Encodes an MGet request (copies the keys). */
export function encodeMGetRequest(keys: readonly (string | Uint8Array)[]): Uint8Array {
  const ks = keys.map(asBytes);
  const b = new Uint8Array(4 + ks.reduce((s, k) => s + 4 + k.length, 0));
  const dv = viewOf(b);
  dv.setUint32(0, ks.length, true);
  let at = 4;
  for (const k of ks) {
    dv.setUint32(at, k.length, true);
    b.set(k, at + 4);
    at += 4 + k.length;
  }
  return b;
}

/** Decodes an MGet request; keys are views into `bytes`. At most `maxKeys` keys. */
export function decodeMGetRequest(bytes: Uint8Array, maxKeys = 4096): Uint8Array[] {
  needLength("MGet request", bytes, 4, false);
  const dv = viewOf(bytes);
  const count = dv.getUint32(0, true);
  if (count > maxKeys) {
    throw new VerbusError("BOUNDS", `MGet request: ${count} keys exceeds the limit of ${maxKeys}`);
  }
  if (count * 4 > bytes.length - 4) {
    throw new VerbusError(
      "BOUNDS",
      `MGet request: count ${count} needs more than the ${bytes.length} bytes sent`,
    );
  }
  const keys = new Array<Uint8Array>(count);
  let at = 4;
  for (let i = 0; i < count; i++) {
    if (at + 4 > bytes.length) {
      throw new VerbusError("BOUNDS", `MGet request: key ${i} length field is past the end`);
    }
    const n = dv.getUint32(at, true);
    if (n > bytes.length - at - 4) {
      throw new VerbusError(
        "BOUNDS",
        `MGet request: key ${i} of ${n} bytes runs past the end of the request`,
      );
    }
    keys[i] = bytes.subarray(at + 4, at + 4 + n);
    at += 4 + n;
  }
  if (at !== bytes.length) {
    throw new VerbusError("PROTOCOL", `MGet request: ${bytes.length - at} trailing bytes`);
  }
  return keys;
}

/** Encodes a Profile request. */
export function encodeProfileRequest(id: bigint): Uint8Array {
  const b = new Uint8Array(8);
  viewOf(b).setBigUint64(0, u64("profile id", id), true);
  return b;
}

/** Decodes a Profile request. */
export function decodeProfileRequest(bytes: Uint8Array): bigint {
  needLength("Profile request", bytes, 8, true);
  return viewOf(bytes).getBigUint64(0, true);
}
