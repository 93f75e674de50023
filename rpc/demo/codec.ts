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
 * Image chunk header: u64 upload_id, u64 total_length, u64 offset, u32 chunk_length, u32 flags
 * (INIT 1, COMMIT 2, ABORT 4), u64 hash (client FNV-1a 64 of the whole file, on COMMIT),
 * u16 name_length (INIT only), u16 reserved = 0; then the name (UTF-8) and `chunk_length` bytes.
 * @module
 */
import { VerbusError } from "../../errors.ts";

export { decodeDynamicArray, decodeProfile, encodeDynamicArray, encodeProfile } from "./blob.ts";
export { decodeEchoMessage, encodeEchoMessage } from "./brpc_echo.ts";
export type { Profile } from "./blob.ts";

/** ImagePut flag: first chunk; carries the final name. */
export const UPLOAD_FLAG_INIT = 1;
/** ImagePut flag: last chunk; carries the client's hash of the whole file. */
export const UPLOAD_FLAG_COMMIT = 2;
/** ImagePut flag: drop the upload and its temp file. */
export const UPLOAD_FLAG_ABORT = 4;
/** ImagePut result state: the upload is open, more chunks expected. */
export const UPLOAD_STATE_OPEN = 0;
/** ImagePut result state: the file was verified and renamed to its final name. */
export const UPLOAD_STATE_COMMITTED = 1;
/** ImagePut result state: the upload was aborted. */
export const UPLOAD_STATE_ABORTED = 2;
/** Size of the fixed ImagePut chunk header. */
export const IMAGE_CHUNK_HEADER_BYTES = 44;

/** One ImagePut chunk, decoded. `data` is a view into the request. */
export interface ImageChunk {
  /** Client-chosen upload id (u64). */
  uploadId: bigint;
  /** Length of the whole file. */
  totalLength: number;
  /** Where this chunk starts in the file. */
  offset: number;
  /** `UPLOAD_FLAG_*` bits. */
  flags: number;
  /** Client's FNV-1a 64 of the whole file (meaningful on COMMIT, else 0n). */
  hash: bigint;
  /** Final file name (INIT only, else ""). */
  name: string;
  /** The chunk's bytes. */
  data: Uint8Array;
}

/** The server's answer to one chunk. */
export interface ImageChunkResult {
  /** Bytes of the upload received so far. */
  received: number;
  /** `UPLOAD_STATE_*`. */
  state: number;
  /** Server's rolling FNV-1a 64 over the bytes received so far. */
  serverHash: bigint;
}

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

const utf8_encoder = new TextEncoder();
const utf8_decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const U64_MAX = 0xffffffffffffffffn;

function viewOf(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function asBytes(k: string | Uint8Array): Uint8Array {
  return typeof k === "string" ? utf8_encoder.encode(k) : k;
}

function needLength(what: string, bytes: Uint8Array, want: number, exact: boolean): void {
  if (exact ? bytes.length !== want : bytes.length < want) {
    throw new VerbusError(
      exact ? "PROTOCOL" : "BOUNDS",
      `${what}: ${bytes.length} bytes, expected ${exact ? "" : "at least "}${want}`,
    );
  }
}

function u64(what: string, v: bigint): bigint {
  if (v < 0n || v > U64_MAX) throw new VerbusError("BOUNDS", `${what} ${v} is not a u64`);
  return v;
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

/** Encodes one ImagePut chunk (copies name and data). */
export function encodeImageChunk(c: ImageChunk): Uint8Array {
  const name = utf8_encoder.encode(c.name);
  if (name.length > 0xffff) {
    throw new VerbusError("BOUNDS", `image chunk: name of ${name.length} bytes exceeds 65535`);
  }
  for (const [f, v] of [["total_length", c.totalLength], ["offset", c.offset]] as const) {
    if (!Number.isSafeInteger(v) || v < 0) {
      throw new VerbusError("BOUNDS", `image chunk: ${f} ${v} is not a safe u64`);
    }
  }
  const b = new Uint8Array(IMAGE_CHUNK_HEADER_BYTES + name.length + c.data.length);
  const dv = viewOf(b);
  dv.setBigUint64(0, u64("upload id", c.uploadId), true);
  dv.setBigUint64(8, BigInt(c.totalLength), true);
  dv.setBigUint64(16, BigInt(c.offset), true);
  dv.setUint32(24, c.data.length, true);
  dv.setUint32(28, c.flags, true);
  dv.setBigUint64(32, u64("hash", c.hash), true);
  dv.setUint16(40, name.length, true);
  b.set(name, IMAGE_CHUNK_HEADER_BYTES);
  b.set(c.data, IMAGE_CHUNK_HEADER_BYTES + name.length);
  return b;
}

function safeU64(what: string, dv: DataView, at: number): number {
  const v = dv.getBigUint64(at, true);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new VerbusError("BOUNDS", `image chunk: ${what} ${v} exceeds 2^53 - 1`);
  }
  return Number(v);
}

/** Decodes one ImagePut chunk; `data` is a view into `bytes`. */
export function decodeImageChunk(bytes: Uint8Array): ImageChunk {
  needLength("image chunk", bytes, IMAGE_CHUNK_HEADER_BYTES, false);
  const dv = viewOf(bytes);
  const chunk_len = dv.getUint32(24, true),
    flags = dv.getUint32(28, true),
    name_len = dv.getUint16(40, true);
  if ((flags & ~7) !== 0) {
    throw new VerbusError("PROTOCOL", `image chunk: unknown flags 0x${flags.toString(16)}`);
  }
  if (dv.getUint16(42, true) !== 0) {
    throw new VerbusError("PROTOCOL", "image chunk: reserved field is not 0");
  }
  if (IMAGE_CHUNK_HEADER_BYTES + name_len + chunk_len !== bytes.length) {
    throw new VerbusError(
      "PROTOCOL",
      `image chunk: name_length ${name_len} + chunk_length ${chunk_len} does not match the ${
        bytes.length - IMAGE_CHUNK_HEADER_BYTES
      } bytes after the header`,
    );
  }
  if (name_len > 0 && (flags & UPLOAD_FLAG_INIT) === 0) {
    throw new VerbusError("PROTOCOL", "image chunk: only an INIT chunk may carry a name");
  }
  let name: string;
  try {
    name = utf8_decoder.decode(
      bytes.subarray(IMAGE_CHUNK_HEADER_BYTES, IMAGE_CHUNK_HEADER_BYTES + name_len),
    );
  } catch (cause) {
    throw new VerbusError("PROTOCOL", "image chunk: name is not valid UTF-8", { cause });
  }
  return {
    uploadId: dv.getBigUint64(0, true),
    totalLength: safeU64("total_length", dv, 8),
    offset: safeU64("offset", dv, 16),
    flags,
    hash: dv.getBigUint64(32, true),
    name,
    data: bytes.subarray(IMAGE_CHUNK_HEADER_BYTES + name_len),
  };
}

/** Encodes the answer to one ImagePut chunk. */
export function encodeImageChunkResult(r: ImageChunkResult): Uint8Array {
  const b = new Uint8Array(24);
  const dv = viewOf(b);
  dv.setBigUint64(0, BigInt(r.received), true);
  dv.setUint32(8, r.state, true);
  dv.setBigUint64(16, u64("server hash", r.serverHash), true);
  return b;
}

/** Decodes the answer to one ImagePut chunk. */
export function decodeImageChunkResult(bytes: Uint8Array): ImageChunkResult {
  needLength("image chunk result", bytes, 24, true);
  const dv = viewOf(bytes);
  const received = dv.getBigUint64(0, true), state = dv.getUint32(8, true);
  if (received > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new VerbusError("BOUNDS", `image chunk result: received ${received} too large`);
  }
  if (state > UPLOAD_STATE_ABORTED) {
    throw new VerbusError("PROTOCOL", `image chunk result: unknown state ${state}`);
  }
  return { received: Number(received), state, serverHash: dv.getBigUint64(16, true) };
}
