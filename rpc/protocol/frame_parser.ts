/**
 * {@link FrameParser}: the incremental baidu_std frame parser (header `"PRPC"`, `body_size` u32
 * BE, `meta_size` u32 BE, then meta + payload + attachment; with `onStreamFrame`, brpc's stream
 * frames too: the same header with `"STRM"`, then a `StreamFrameMeta` and the payload). Frames split across reads, many
 * frames per read; every complete frame of a chunk is parsed in one pass, and a frame that arrives
 * whole is handed out as views of the received chunk (zero copy). A frame split across reads is
 * gathered into a buffer that grows with what actually arrived (never the declared size up front),
 * so a peer that announces a large body and sends little costs little.
 *
 * Lent chunks (`push(chunk, true)`: a registered receive block of brpc's RDMA mode, valid only
 * during the call): nothing handed out or kept is a view of them, and each of their bytes is
 * copied once. The frames that lie whole in the chunk, one after the other, are copied out in one
 * buffer and handed out as views of it (one allocation per block: copying each payload on its own
 * measured up to 4× slower for small frames on Deno, `bench/brpc_rdma/copy_micro.ts`); a frame
 * split across chunks is gathered by copying straight from them, into a buffer of its announced
 * size up to {@link LENT_BODY_START} (bigger bodies grow from there, as above); bytes kept while
 * paused or stopped are copied. {@link FrameParser.copiedBytes} counts every byte it copied.
 *
 * Threading: a parser belongs to the JS thread that created it.
 * @module
 */
import { ProtocolError } from "../../errors.ts";
import { RUNTIME } from "../../util/runtime.ts";
import { decodeAnswerMeta, decodeRequestMetaFast } from "./rpc_meta_decode.ts";
import { decodeRpcMeta, type RpcMeta } from "./rpc_meta.ts";

/** Size of the frame header. */
export const FRAME_HEADER_SIZE = 12;
/** Default largest accepted body (meta + payload + attachment): 64 MiB, as brpc. */
export const DEFAULT_MAX_BODY_SIZE = 64 * 1024 * 1024;
/** The magic bytes `"PRPC"`. */
const FRAME_MAGIC: Readonly<Uint8Array> = new Uint8Array([0x50, 0x52, 0x50, 0x43]);
/** The magic bytes `"STRM"` of brpc's stream frames. */
const STREAM_MAGIC: Readonly<Uint8Array> = new Uint8Array([0x53, 0x54, 0x52, 0x4d]);
/** First buffer for a body split across reads (grown by doubling up to the body size). */
const BODY_START = 64 * 1024;
/**
 * The same for lent chunks: bodies up to this size get their whole buffer at once, so each of
 * their bytes is copied exactly once (the peer's credit window bounds what it sends unread).
 */
export const LENT_BODY_START = 1024 * 1024;

const EMPTY = new Uint8Array(0);

/**
 * Receives one decoded frame. `payload` and `attachment` are views the handler owns (the parser
 * never reuses them). Must not throw: an exception propagates out of {@link FrameParser.push}
 * and the rest of that chunk is lost.
 */
export type FrameHandler = (meta: RpcMeta, payload: Uint8Array, attachment: Uint8Array) => void;

/**
 * Receives one stream frame undecoded: its `StreamFrameMeta` bytes and its payload, views the
 * handler owns. Decoding is the handler's (a bad stream meta concerns one stream, not the
 * connection). Must not throw.
 */
export type StreamFrameHandler = (meta: Uint8Array, payload: Uint8Array) => void;

/** Options of {@link FrameParser}. */
export interface FrameParserOptions {
  /** Largest accepted `body_size`; default {@link DEFAULT_MAX_BODY_SIZE}. */
  maxBodySize?: number;
  /**
   * Plain answers (meta = `correlation_id` [+ `attachment_size`]) get one shared meta object,
   * valid only until the handler returns (a client that reads the id and forgets the meta).
   */
  reuseAnswerMeta?: boolean;
  /** Where `"STRM"` frames go; without it such a frame is a bad magic. */
  onStreamFrame?: StreamFrameHandler;
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join(" ");
}

function printable(b: Uint8Array): string {
  return Array.from(b, (x) => (x >= 0x20 && x < 0x7f ? String.fromCharCode(x) : ".")).join("");
}

/**
 * Incremental baidu_std frame parser. Feed it received chunks (owned: the parser may keep views
 * of them; or lent, see the module doc) with {@link push}; it calls the handler once per complete
 * frame, in order. The first
 * violation throws a {@link ProtocolError} naming it, and the parser stays failed (every later
 * push throws the same error): the connection must be closed.
 */
export class FrameParser {
  readonly #onFrame: FrameHandler;
  readonly #maxBodySize: number;
  readonly #hdr = new Uint8Array(FRAME_HEADER_SIZE);
  #hdrHave = 0;
  #body: Uint8Array | null = null;
  #bodyHave = 0;
  #bodySize = 0;
  #metaSize = 0;
  #failed: ProtocolError | null = null;
  #stopped = false;
  #paused = false;
  /** Bytes received after a stop or pause, not parsed yet. */
  #rest: Uint8Array = EMPTY;
  #frames = 0;
  readonly #answerMeta: RpcMeta | null;
  readonly #onStream: StreamFrameHandler | undefined;
  /** The frame being read is a stream frame. */
  #stream = false;
  /** The chunk being parsed is lent (see the module doc). */
  #lent = false;
  #copied = 0;

  constructor(onFrame: FrameHandler, options: FrameParserOptions = {}) {
    this.#onFrame = onFrame;
    this.#onStream = options.onStreamFrame;
    this.#maxBodySize = options.maxBodySize ?? DEFAULT_MAX_BODY_SIZE;
    this.#answerMeta = options.reuseAnswerMeta ? { correlationId: 0 } : null;
  }

  /** Bytes held for a frame not complete yet. */
  get bufferedBytes(): number {
    return this.#hdrHave + this.#bodyHave;
  }

  /** Bytes received while paused or stopped, waiting to be parsed. */
  get heldBytes(): number {
    return this.#rest.length;
  }

  /** Bytes copied so far: headers and bodies split across chunks, and out of lent chunks. */
  get copiedBytes(): number {
    return this.#copied;
  }

  /** Complete frames delivered so far. */
  get frames(): number {
    return this.#frames;
  }

  /** Whether {@link pause} is in effect. */
  get paused(): boolean {
    return this.#paused;
  }

  /**
   * Called from inside the frame handler: deliver no more frames; the bytes after the current
   * frame are kept for {@link takeRemaining} (hand-over of the byte stream to another protocol).
   */
  stop(): void {
    this.#stopped = true;
  }

  /** After {@link stop}: the received bytes that follow the last delivered frame. */
  takeRemaining(): Uint8Array {
    const r = this.#rest;
    this.#rest = EMPTY;
    return r;
  }

  /**
   * Deliver no more frames until {@link resume} (backpressure: the consumer cannot take more
   * now). Callable from inside the frame handler: the bytes after the current frame, and every
   * later push, are kept unparsed.
   */
  pause(): void {
    this.#paused = true;
  }

  /** Parses what was kept since {@link pause} (the handler may pause again). Throws like push. */
  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    const r = this.#rest;
    this.#rest = EMPTY;
    if (r.length > 0) this.push(r);
  }

  /**
   * Consumes `chunk`: owned by the parser from now on, or with `lent` only read during this call
   * (nothing handed out or kept is a view of it). Throws {@link ProtocolError}.
   */
  push(chunk: Uint8Array, lent = false): void {
    if (this.#failed !== null) throw this.#failed;
    if (this.#stopped || this.#paused) {
      this.#keep(chunk, lent);
      return;
    }
    const was = this.#lent;
    this.#lent = lent;
    try {
      this.#push(chunk);
    } catch (e) {
      if (e instanceof ProtocolError) this.#failed = e;
      throw e;
    } finally {
      this.#lent = was;
    }
  }

  /** Keeps `chunk` after what was kept unparsed (a copy when it is lent or joins other bytes). */
  #keep(chunk: Uint8Array, lent: boolean): void {
    const r = this.#rest;
    if (r.length === 0 && !lent) {
      this.#rest = chunk;
      return;
    }
    this.#copied += r.length + chunk.length;
    const out = new Uint8Array(r.length + chunk.length);
    out.set(r);
    out.set(chunk, r.length);
    this.#rest = out;
  }

  #push(chunk: Uint8Array): void {
    const n = chunk.length;
    let p = 0;
    while (p < n) {
      if (this.#stopped || this.#paused) {
        this.#keep(chunk.subarray(p), this.#lent);
        return;
      }
      if (this.#body !== null) {
        p = this.#gather(chunk, p);
        continue;
      }
      if (this.#hdrHave > 0 || n - p < FRAME_HEADER_SIZE) {
        const have = this.#hdrHave;
        const k = Math.min(FRAME_HEADER_SIZE - have, n - p);
        this.#hdr.set(chunk.subarray(p, p + k), have);
        this.#copied += k;
        this.#hdrHave = have + k;
        p += k;
        if (have < 4) this.#checkMagic(this.#hdr, 0, Math.min(4, have + k));
        if (this.#hdrHave < FRAME_HEADER_SIZE) return;
        this.#hdrHave = 0;
        this.#readSizes(this.#hdr, 0);
        if (this.#bodySize === 0) this.#emit(EMPTY, 0);
        else this.#startBody();
        continue;
      }
      this.#checkMagic(chunk, p, 4);
      this.#readSizes(chunk, p);
      const start = p + FRAME_HEADER_SIZE;
      const size = this.#bodySize;
      if (n - start >= size) {
        if (this.#lent) {
          p = this.#wholeRun(chunk, p);
          continue;
        }
        p = start + size;
        this.#emit(chunk, start);
      } else {
        this.#startBody();
        p = this.#gather(chunk, start);
      }
    }
  }

  /**
   * Lent chunk, a whole frame at `p`: copies it and the whole frames after it out in one buffer
   * and parses that (owned: views of it are handed out). Returns where the copied run ends.
   */
  #wholeRun(chunk: Uint8Array, p: number): number {
    const n = chunk.length;
    let q = p;
    while (n - q >= FRAME_HEADER_SIZE) {
      const body = u32(chunk, q + 4);
      if (body > this.#maxBodySize || n - q - FRAME_HEADER_SIZE < body) break;
      q += FRAME_HEADER_SIZE + body;
    }
    this.#copied += q - p;
    this.#lent = false;
    try {
      this.#push(chunk.slice(p, q));
    } finally {
      this.#lent = true;
    }
    return q;
  }

  /** A body that did not arrive whole: a buffer sized by what arrives, not what is announced. */
  #startBody(): void {
    this.#body = new Uint8Array(
      Math.min(this.#bodySize, this.#lent ? LENT_BODY_START : BODY_START),
    );
    this.#bodyHave = 0;
  }

  /** Appends body bytes from `chunk[p..]`; emits the frame when complete. Returns the new `p`. */
  #gather(chunk: Uint8Array, p: number): number {
    let body = this.#body!;
    const k = Math.min(this.#bodySize - this.#bodyHave, chunk.length - p);
    const need = this.#bodyHave + k;
    if (need > body.length) {
      const grown = new Uint8Array(Math.min(this.#bodySize, Math.max(need, 2 * body.length)));
      grown.set(body.subarray(0, this.#bodyHave));
      this.#copied += this.#bodyHave;
      this.#body = body = grown;
    }
    body.set(chunk.subarray(p, p + k), this.#bodyHave);
    this.#copied += k;
    this.#bodyHave = need;
    if (need === this.#bodySize) {
      this.#body = null;
      this.#bodyHave = 0;
      this.#emit(body, 0);
    }
    return p + k;
  }

  #checkMagic(b: Uint8Array, at: number, count: number): void {
    this.#stream = b[at] === 0x53 && this.#onStream !== undefined;
    const magic = this.#stream ? STREAM_MAGIC : FRAME_MAGIC;
    for (let i = 0; i < count; i++) {
      if (b[at + i] !== magic[i]) {
        const got = b.subarray(at, at + count);
        throw new ProtocolError(
          `bad magic: expected "PRPC" (50 52 50 43), got ${hex(got)} ("${printable(got)}")` +
            ` at the start of frame ${this.#frames + 1}`,
          { got: hex(got) },
        );
      }
    }
  }

  #readSizes(b: Uint8Array, at: number): void {
    const body = u32(b, at + 4), meta = u32(b, at + 8);
    if (body > this.#maxBodySize) {
      throw new ProtocolError(
        `oversize frame: body_size=${body} exceeds max_body_size=${this.#maxBodySize}`,
        { bodySize: body, maxBodySize: this.#maxBodySize },
      );
    }
    if (meta > body) {
      throw new ProtocolError(`bad sizes: meta_size=${meta} is bigger than body_size=${body}`, {
        bodySize: body,
        metaSize: meta,
      });
    }
    this.#bodySize = body;
    this.#metaSize = meta;
  }

  /** Decodes the meta of the body at `buf[start, start + bodySize)` (owned) and delivers the frame. */
  #emit(buf: Uint8Array, start: number): void {
    const bodySize = this.#bodySize, metaSize = this.#metaSize;
    const metaEnd = start + metaSize;
    if (this.#stream) {
      this.#frames++;
      this.#onStream!(buf.subarray(start, metaEnd), view(buf, metaEnd, start + bodySize));
      return;
    }
    const reuse = this.#answerMeta;
    // Plain answers (a client) and plain requests with the last request's meta (a server) take a
    // fast path; any other meta the full decoder.
    const meta = reuse !== null && decodeAnswerMeta(buf, start, metaEnd, reuse)
      ? reuse
      : decodeRequestMetaFast(buf, start, metaEnd) ?? decodeRpcMeta(buf, start, metaEnd);
    const rest = bodySize - metaSize;
    const att = meta.attachmentSize ?? 0;
    if (att < 0 || att > rest) {
      throw new ProtocolError(
        `bad attachment_size=${att}: only ${rest} bytes follow the ${metaSize}-byte meta ` +
          `(body_size=${bodySize})`,
        { attachmentSize: att, bodySize, metaSize },
      );
    }
    const payloadEnd = start + bodySize - att;
    this.#frames++;
    this.#onFrame(
      meta,
      view(buf, metaEnd, payloadEnd),
      att === 0 ? EMPTY : view(buf, payloadEnd, payloadEnd + att),
    );
  }
}

/** The big-endian u32 at `b[at]`. */
function u32(b: Uint8Array, at: number): number {
  return ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;
}

/**
 * Bytes `[start, end)` of `buf` for the handler. JavaScriptCore allocates small typed arrays
 * faster than it makes views, V8 the opposite: small slices are copied on Bun only.
 */
const SMALL_COPY = RUNTIME === "bun" ? 64 : 0;

function view(buf: Uint8Array, start: number, end: number): Uint8Array {
  const n = end - start;
  if (n > SMALL_COPY) return buf.subarray(start, end);
  if (n === 0) return EMPTY;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = buf[start + i];
  return out;
}
