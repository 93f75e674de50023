/**
 * {@link StreamTable}: the streams of one baidu_std connection (a server's accepted connection
 * or a client `Channel`'s). It hands out stream ids, routes every inbound `"STRM"` frame to its
 * stream, answers a DATA or CLOSE for an unknown stream with an RST to its source (as brpc does;
 * late FEEDBACK, RST and CLOSE frames of ended streams are dropped quietly), and ends every
 * stream when the connection ends. A stream frame whose meta cannot be decoded is dropped and
 * counted: it concerns one stream, not the connection's other calls.
 *
 * Threading: the JS thread of its connection.
 * @module
 */
import type { ProtocolError } from "../../errors.ts";
import type { FrameSink } from "../protocol/frame.ts";
import {
  decodeStreamFrameMeta,
  encodeStreamFrame,
  encodeStreamFrameTo,
  FRAME_FEEDBACK,
  FRAME_RST,
  type StreamFrameMeta,
  type StreamSettings,
} from "../protocol/stream_frame.ts";
import type { RpcMeta } from "../protocol/rpc_meta.ts";
import { Stream, type StreamLink } from "./stream.ts";
import type { UnreadBudget } from "./stream_inbox.ts";
import { StreamError } from "./stream_error.ts";
import { resolveStreamOptions, type StreamOptions } from "./stream_options.ts";

/** The connection under a table (frames are encoded into its output slab). */
export interface StreamConn extends FrameSink {
  /** Queues bytes (ownership moves). */
  write(bytes: Uint8Array): boolean;
  readonly writeBlocked: boolean;
  readonly closed: boolean;
}

/** Where a client's table hands the answer of a stream's opening call (its channel). */
export type AnswerSink = (meta: RpcMeta, payload: Uint8Array, attachment: Uint8Array) => void;

/** What all streams of one connection may hold unread together (past it: the stream is reset). */
export const MAX_UNREAD_PER_CONNECTION = 64 * 1024 * 1024;

/** Most streams open at once on one connection (a peer opening more is refused). */
export const MAX_STREAMS_PER_CONNECTION = 4096;

/** Counters of a table (updated in place). */
export interface StreamTableStats {
  opened: number;
  /** Frames for no stream of ours (answered with RST when they name a source). */
  unknown: number;
  /** Stream frames whose meta did not decode (dropped). */
  undecodable: number;
}

/** The streams of one connection. */
export class StreamTable implements StreamLink {
  readonly #conn: StreamConn;
  readonly #where: string;
  readonly #streams = new Map<number, Stream>();
  #nextId = 1;
  #ended: StreamError | null = null;
  readonly stats: StreamTableStats = { opened: 0, unknown: 0, undecodable: 0 };
  readonly budget: UnreadBudget = { used: 0, max: MAX_UNREAD_PER_CONNECTION };
  /** What carries the frames: "tcp", or a fabric session's kind (set by its stream pipe). */
  carrier = "tcp";
  /** Told after each stream is made (a fabric client's link then keeps its session driven). */
  onCreate: (() => void) | null = null;
  /** The last undecodable frame's error (for a log line by the owner). */
  lastError: ProtocolError | undefined = undefined;

  /**
   * `where` names the peer in errors ("10.0.0.1:8000"); `answers` (a client's channel) takes the
   * answers of opening calls, which arrive inside stream frames.
   */
  constructor(conn: StreamConn, where: string, readonly answers?: AnswerSink) {
    this.#conn = conn;
    this.#where = where;
  }

  /** Streams open now. */
  get size(): number {
    return this.#streams.size;
  }

  /**
   * A new stream with the next id. `remote`: the peer's settings when known (server side).
   * Throws StreamError when the connection ended or has too many streams, VerbusError
   * INVALID_OPTIONS for bad options.
   */
  create(options: StreamOptions | undefined, remote: StreamSettings | null): Stream {
    const opts = resolveStreamOptions(options);
    if (this.#ended !== null) throw this.#ended;
    if (this.#streams.size >= MAX_STREAMS_PER_CONNECTION) {
      throw new StreamError(
        "refused",
        `${this.#where}: ${MAX_STREAMS_PER_CONNECTION} streams are open on this connection already`,
      );
    }
    let id = this.#nextId;
    while (this.#streams.has(id)) id = id === 0x7fffffff ? 1 : id + 1; // after a wrap-around
    this.#nextId = id === 0x7fffffff ? 1 : id + 1;
    const s = new Stream(id, this, opts, remote);
    this.#streams.set(id, s);
    this.stats.opened++;
    this.onCreate?.();
    return s;
  }

  /** One inbound stream frame (views the table may keep). Never throws. */
  onFrame(metaBytes: Uint8Array, payload: Uint8Array): void {
    let meta;
    try {
      meta = decodeStreamFrameMeta(metaBytes, 0, metaBytes.length);
    } catch (e) {
      this.stats.undecodable++;
      this.lastError = e as ProtocolError;
      return;
    }
    const s = typeof meta.streamId === "number" ? this.#streams.get(meta.streamId) : undefined;
    const src = meta.sourceStreamId;
    if (s === undefined) {
      this.stats.unknown++;
      if (src !== undefined && meta.frameType !== FRAME_FEEDBACK && meta.frameType !== FRAME_RST) {
        this.send(
          encodeStreamFrame({ streamId: src, frameType: FRAME_RST, hasContinuation: false }),
        );
      }
      return;
    }
    // A frame naming another source than the stream's peer is not this stream's.
    const remote = s.remoteId;
    if (remote !== undefined && src !== undefined && src !== remote) {
      this.stats.unknown++;
      return;
    }
    s._onFrame(meta, payload);
  }

  /** The connection drained below its low-water mark: writers may go on. */
  writable(): void {
    for (const s of this.#streams.values()) s._wake();
  }

  /** The connection ended: every stream fails with kind "connection". Later creates throw. */
  closeAll(cause?: unknown): void {
    if (this.#ended !== null) return;
    const why = cause instanceof Error ? `: ${cause.message}` : "";
    const kind = cause instanceof StreamError ? cause.kind : "connection";
    this.#ended = new StreamError(kind, `${this.#where}: the connection ended${why}`, cause);
    for (const s of [...this.#streams.values()]) s._fail(this.#ended);
    this.#streams.clear();
  }

  // ---- StreamLink ----

  sendFrame(meta: StreamFrameMeta, payload?: Uint8Array): void {
    if (!this.#conn.closed) encodeStreamFrameTo(this.#conn, meta, payload);
  }

  /** Queues bytes already framed (ownership moves). */
  send(frame: Uint8Array): void {
    if (!this.#conn.closed) this.#conn.write(frame);
  }

  get writeBlocked(): boolean {
    return this.#conn.writeBlocked;
  }

  release(s: Stream): void {
    if (this.#streams.get(s.id) === s) this.#streams.delete(s.id);
  }

  describe(id: number): string {
    return `stream ${id} with ${this.#where}`;
  }
}
