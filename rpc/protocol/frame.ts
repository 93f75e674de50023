/**
 * baidu_std framing: a 12-byte header — `"PRPC"`, `body_size` (u32 big-endian), `meta_size`
 * (u32 big-endian) — then the body: `meta_size` bytes of {@link RpcMeta}, the payload, and the
 * last `meta.attachment_size` bytes as attachment.
 *
 * {@link FrameEncoder} builds whole frames in one pass out of a slab (frames encoded back to back
 * are adjacent, so a connection writing them in one tick sends them without another copy).
 * The incremental parser is `frame_parser.ts` (re-exported here).
 *
 * Threading: both classes belong to the JS thread that created them.
 * @module
 */
import { ProtocolError } from "../../errors.ts";
import { RUNTIME } from "../../util/runtime.ts";
import { FRAME_HEADER_SIZE } from "./frame_parser.ts";
import { copyEncodedMeta, encodeRpcMetaToScratch, type RpcMeta } from "./rpc_meta.ts";

export {
  DEFAULT_MAX_BODY_SIZE,
  FRAME_HEADER_SIZE,
  type FrameHandler,
  FrameParser,
  type FrameParserOptions,
} from "./frame_parser.ts";

const EMPTY = new Uint8Array(0);

/** Default slab size of a {@link FrameEncoder}. */
const SLAB_SIZE = 256 * 1024;

/**
 * Where {@link encodeFrameTo} writes: reserve room, fill `writeBuffer`, commit. `TcpConn`
 * implements it (frames land directly in the connection's output slab); a fabric ring can too.
 */
export interface FrameSink {
  /** Returns the offset in `writeBuffer` of `n` free bytes. */
  reserve(n: number): number;
  /** The buffer the last `reserve` points into. */
  readonly writeBuffer: Uint8Array;
  /** Publishes the `n` bytes filled after `reserve`. */
  commit(n: number): void;
  /**
   * Optional: queues `bytes` after what was committed, taking ownership (no copy). A sink that
   * has it gets large answer payloads by reference (`encodeResponseFrameTo`).
   */
  write?(bytes: Uint8Array): boolean;
}

/**
 * Encodes one frame straight into `sink` (no intermediate buffer, no allocation for small
 * frames): header, `meta` (with `attachment_size` = `attachment.length`, omitted when 0),
 * `payload`, `attachment`. Payload and attachment are copied; the caller keeps them. Throws
 * `ProtocolError` when the body would not fit the u32 `body_size`.
 */
export function encodeFrameTo(
  sink: FrameSink,
  meta: RpcMeta,
  payload: Uint8Array,
  attachment: Uint8Array = EMPTY,
): void {
  const m = encodeRpcMetaToScratch(meta, attachment.length);
  const body = m + payload.length + attachment.length;
  if (body > 0xffffffff) {
    throw new ProtocolError(`frame body of ${body} bytes does not fit the u32 body_size field`);
  }
  const total = FRAME_HEADER_SIZE + body;
  let off = sink.reserve(total);
  const out = sink.writeBuffer;
  writeHeader(out, off, body, m);
  off += FRAME_HEADER_SIZE;
  copyEncodedMeta(out, off, m);
  off += m;
  copyInto(out, off, payload);
  off += payload.length;
  if (attachment.length > 0) copyInto(out, off, attachment);
  sink.commit(total);
}

/**
 * Encodes frames. Each returned frame is a fresh view that the encoder never writes again: the
 * caller owns it (typically hands it to `TcpConn.write`). Small frames are carved from a shared
 * slab; frames above a quarter slab get a buffer of their own.
 */
export class FrameEncoder {
  #slab: Uint8Array = new Uint8Array(0);
  #used = 0;
  readonly #slabSize: number;

  constructor(slabSize = SLAB_SIZE) {
    this.#slabSize = slabSize;
  }

  /**
   * Returns header + meta + `payload` + `attachment` as one buffer. `meta.attachmentSize` is set
   * on the wire from `attachment.length` (omitted when empty). Payload and attachment are copied;
   * the caller keeps them.
   */
  encode(meta: RpcMeta, payload: Uint8Array, attachment: Uint8Array = EMPTY): Uint8Array {
    const mlen = encodeRpcMetaToScratch(meta, attachment.length);
    const body = mlen + payload.length + attachment.length;
    if (body > 0xffffffff) {
      throw new ProtocolError(`frame body of ${body} bytes does not fit the u32 body_size field`);
    }
    const total = FRAME_HEADER_SIZE + body;
    let out: Uint8Array;
    if (total > this.#slabSize >>> 2) {
      out = new Uint8Array(total);
    } else {
      if (this.#used + total > this.#slab.length) {
        this.#slab = new Uint8Array(this.#slabSize);
        this.#used = 0;
      }
      out = this.#slab.subarray(this.#used, this.#used + total);
      this.#used += total;
    }
    writeHeader(out, 0, body, mlen);
    copyEncodedMeta(out, FRAME_HEADER_SIZE, mlen);
    let off = FRAME_HEADER_SIZE + mlen;
    if (payload.length > 0) {
      out.set(payload, off);
      off += payload.length;
    }
    if (attachment.length > 0) out.set(attachment, off);
    return out;
  }
}

/**
 * Up to this many bytes are copied by a loop, more by `set` (measured here: a 64-byte loop costs
 * ~3× `set` on V8, and `set` wins from ~32 bytes on JavaScriptCore).
 */
const LOOP_COPY = RUNTIME === "bun" ? 24 : 8;

/** Copies `src` to `out[off..]`: a plain loop for a few bytes (cheaper than a native call). */
export function copyInto(out: Uint8Array, off: number, src: Uint8Array): void {
  const n = src.length;
  if (n > LOOP_COPY) out.set(src, off);
  else for (let i = 0; i < n; i++) out[off + i] = src[i];
}

/** Writes the 12-byte header into `out[at, at + 12)`. */
export function writeHeader(out: Uint8Array, at: number, bodySize: number, metaSize: number): void {
  out[at] = 0x50;
  out[at + 1] = 0x52;
  out[at + 2] = 0x50;
  out[at + 3] = 0x43;
  out[at + 4] = bodySize >>> 24;
  out[at + 5] = (bodySize >>> 16) & 0xff;
  out[at + 6] = (bodySize >>> 8) & 0xff;
  out[at + 7] = bodySize & 0xff;
  out[at + 8] = metaSize >>> 24;
  out[at + 9] = (metaSize >>> 16) & 0xff;
  out[at + 10] = (metaSize >>> 8) & 0xff;
  out[at + 11] = metaSize & 0xff;
}

/** Encodes one frame into a fresh buffer (tests, one-off use). */
export function encodeFrame(
  meta: RpcMeta,
  payload: Uint8Array,
  attachment?: Uint8Array,
): Uint8Array {
  return new FrameEncoder(0).encode(meta, payload, attachment);
}
