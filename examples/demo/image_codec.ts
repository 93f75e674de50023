/**
 * The ImagePut chunk codec (service `verbus.Demo`, method ImagePut): a 44-byte header, the name,
 * then the data. Header: u64 upload_id, u64 total_length, u64 offset, u32 chunk_length, u32 flags
 * (INIT 1, COMMIT 2, ABORT 4), u64 hash (client FNV-1a 64 of the whole file, on COMMIT),
 * u16 name_length (INIT only), u16 reserved = 0; then the name (UTF-8) and `chunk_length` bytes.
 * The answer: u64 received, u32 state, u32 0, u64 server hash. Encoders return a fresh buffer
 * owned by the caller; decoders return views into the input where they say so and throw a
 * {@link VerbusError} naming the field. Pure; any thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { needLength, u64, utf8Encoder, utf8StrictDecoder, viewOf } from "./codec_primitives.ts";

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

/** Encodes one ImagePut chunk (copies name and data). */
export function encodeImageChunk(c: ImageChunk): Uint8Array {
  const name = utf8Encoder.encode(c.name);
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
    name = utf8StrictDecoder.decode(
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
