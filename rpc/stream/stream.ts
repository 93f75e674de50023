/**
 * {@link Stream}: one brpc Streaming RPC stream, either side, over one baidu_std connection or
 * a fabric session's stream pipe (`stream_ring.ts`).
 * Wire-compatible with stock brpc (`src/brpc/stream.cpp`): messages go out as `"STRM"` DATA
 * frames (split into segments with `has_continuation`), the reader reports the bytes it consumed
 * in FEEDBACK frames, the writer keeps at most `maxBufSize` bytes unconsumed (brpc's
 * `max_buf_size`), CLOSE ends a stream, RST resets it.
 *
 * The API: `await stream.write(bytes)` (waits while the window is full: a reader that stops
 * reading stops the writer), `read()` or `for await (const m of stream)` (leaving it early
 * closes the stream; `messages({ keepOpen: true })` does not), `close()` (graceful:
 * what was written still arrives), `reset()` (abrupt). Memory is bounded both ways: the window
 * on the writer, `maxUnreadBytes` and `maxMessageSize` on the reader (a peer past them has its
 * stream reset, the connection's other calls and streams go on).
 *
 * Before the stream is connected (a server's stream until its call is answered, a client's
 * until the answer arrives) writes within the window are held and sent in order after the
 * answer, as brpc does.
 *
 * Threading: the JS thread of its connection.
 * @module
 */
import type { Int64 } from "../protocol/rpc_meta.ts";
import {
  FRAME_CLOSE,
  FRAME_DATA,
  FRAME_FEEDBACK,
  FRAME_RST,
  type StreamFrameMeta,
  type StreamSettings,
} from "../protocol/stream_frame.ts";
import { StreamError } from "./stream_error.ts";
import { StreamInbox, type UnreadBudget } from "./stream_inbox.ts";
import type { ResolvedStreamOptions } from "./stream_options.ts";

/** What a stream needs of its connection (its `StreamTable`). */
export interface StreamLink {
  /** Queues one stream frame on the connection (`payload` copied; the caller keeps it). */
  sendFrame(meta: StreamFrameMeta, payload?: Uint8Array): void;
  /** The connection's output is over its high-water mark (writers wait). */
  readonly writeBlocked: boolean;
  /** The stream ended: its id is free. */
  release(s: Stream): void;
  /** What the connection's streams may hold unread together. */
  readonly budget: UnreadBudget;
  /** Where the stream is, for messages ("stream 3 to 10.0.0.1:8000"). */
  describe(id: number): string;
  /** What carries its frames: "tcp", or the fabric of the session ("shm", "verbs", "urma"). */
  readonly carrier: string;
}

/** Most bytes held before connecting by a stream without a window (`maxBufSize` 0). */
const HELD_WITHOUT_WINDOW = 2 * 1024 * 1024;

/** A reader that keeps reading reports what it consumed at least every this many bytes. */
const FEEDBACK_EVERY = 64 * 1024;

/** Largest DATA segment sent (a message above it goes as several, `has_continuation`). */
export const SEGMENT_SIZE = 1024 * 1024;

const RESOLVED = Promise.resolve();

interface Waiter {
  msg: Uint8Array;
  resolve(): void;
  reject(e: unknown): void;
}

/** One stream. Create with `openStream` (client) or `acceptStream` (server handler). */
export class Stream implements AsyncIterable<Uint8Array> {
  /** This side's stream id (what the peer addresses its frames to). */
  readonly id: number;
  readonly #link: StreamLink;
  readonly #opts: ResolvedStreamOptions;
  readonly #inbox: StreamInbox;
  #remote: StreamSettings | null;
  #connected = false;
  /** Why it ended (writes fail with it); null while open. */
  #ended: StreamError | null = null;
  #closeOwed = false;
  #produced = 0;
  #sent = 0;
  #remoteConsumed = 0;
  #held: Uint8Array[] = [];
  #writers: Waiter[] = [];
  #feedbackOwed = false;
  /** The consumed size last reported to the peer. */
  #reported = 0;
  #answer: ((message: Uint8Array) => void) | null = null;
  #done!: (e: StreamError | undefined) => void;
  /** Resolves when the stream ended: undefined after a clean close (either side), else why. */
  readonly ended: Promise<StreamError | undefined> = new Promise((r) => (this.#done = r));

  /** @internal Made by a `StreamTable`. `remote` is known at once on the server side. */
  constructor(
    id: number,
    link: StreamLink,
    opts: ResolvedStreamOptions,
    remote: StreamSettings | null,
  ) {
    this.id = id;
    this.#link = link;
    this.#opts = opts;
    this.#remote = remote;
    const { maxUnreadBytes, maxMessageSize } = opts;
    this.#inbox = new StreamInbox(maxUnreadBytes, maxMessageSize, this.#oweFeedback, link.budget);
  }

  /** This side's settings, for the meta of the opening call or of its answer. */
  settings(): StreamSettings {
    return {
      streamId: this.id,
      needFeedback: this.#opts.maxBufSize > 0,
      writable: true,
      extraStreamIds: [],
    };
  }

  /** What carries its frames: "tcp", or its session's fabric ("shm", "verbs", "urma"). */
  get carrier(): string {
    return this.#link.carrier;
  }

  /** The peer's stream id, once known. */
  get remoteId(): Int64 | undefined {
    return this.#remote?.streamId;
  }

  /** @internal The peer's settings, once known. */
  get remoteSettings(): StreamSettings | null {
    return this.#remote;
  }

  /** Ended (either side closed or reset it, or its connection ended) or close() was called. */
  get closed(): boolean {
    return this.#ended !== null || this.#closeOwed;
  }

  /** Connected (the opening call was answered) and not ended. */
  get open(): boolean {
    return this.#connected && this.#ended === null;
  }

  /** Bytes written and not yet reported consumed by the peer. */
  get unconsumedBytes(): number {
    return this.#produced - this.#remoteConsumed;
  }

  /** Bytes received and not read yet. */
  get unreadBytes(): number {
    return this.#inbox.unreadBytes;
  }

  /**
   * Sends one message. Resolves once it is within the window (sent, or held until the stream
   * is connected); waits while the window is full or the connection's output is blocked. The
   * caller must not change `message` until the promise resolves. Rejects with a
   * {@link StreamError} once the stream ended.
   */
  write(message: Uint8Array): Promise<void> {
    if (this.#ended !== null) return Promise.reject(this.#ended);
    if (this.#closeOwed) return Promise.reject(this.#error("closed", "written after close()"));
    if (this.#remote !== null && !this.#remote.writable) {
      return Promise.reject(
        this.#error("refused", "the peer reads nothing on it (writable=false)"),
      );
    }
    if (this.#writers.length === 0 && this.#hasRoom()) {
      this.#put(message);
      return RESOLVED;
    }
    return new Promise((resolve, reject) => this.#writers.push({ msg: message, resolve, reject }));
  }

  /** The next message (the caller's), or undefined once the stream ended cleanly. */
  read(): Promise<Uint8Array | undefined> {
    return this.#inbox.read();
  }

  /**
   * Every message until the end. Leaving the loop early (`break`, `return`, a throw) closes the
   * stream, as leaving a `for await` over a Node or web stream cancels it: the peer gets the
   * CLOSE and its writes fail at once instead of holding its writer. To stop reading and keep
   * the stream, iterate {@link messages} with `keepOpen`.
   */
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this.messages();
  }

  /** Every message until the end; leaving the loop early closes the stream unless `keepOpen`. */
  async *messages(options: { keepOpen?: boolean } = {}): AsyncGenerator<Uint8Array, void> {
    let finished = false;
    try {
      for (let m = await this.read(); m !== undefined; m = await this.read()) yield m;
      finished = true;
    } finally {
      if (!finished && !options.keepOpen) this.close();
    }
  }

  /**
   * Ends the stream gracefully: messages already written still reach the peer (before a
   * connected stream, after its answer), then a CLOSE; unread messages are dropped, reads end.
   */
  close(): void {
    if (this.#ended !== null || this.#closeOwed) return;
    this.#closeOwed = true;
    this.#rejectWriters(this.#error("closed", "closed before the write was taken"));
    this.#inbox.end(null, true);
    if (this.#connected) this.#finish();
  }

  /** Ends the stream abruptly: an RST to the peer (its reads fail with kind "reset"). */
  reset(reason = "reset by this side"): void {
    if (this.#ended !== null) return;
    if (this.#remote !== null) this.#sendRst();
    this._fail(this.#error("reset", reason));
  }

  // ---- driven by the StreamTable ----

  /** @internal The opening call was answered: flush held writes (and a close owed). */
  _connect(remote: StreamSettings): void {
    if (this.#ended !== null || this.#connected) return;
    this.#remote = remote;
    this.#connected = true;
    const held = this.#held;
    this.#held = [];
    for (const m of held) this.#sendData(m);
    if (this.#closeOwed) return this.#finish();
    if (this.#inbox.consumed > 0) this.#oweFeedback();
    this._wake();
  }

  /** @internal The first message is the wrapped answer of the opening call (client side). */
  _expectAnswer(onAnswer: (message: Uint8Array) => void): void {
    this.#answer = onAnswer;
  }

  /** @internal One inbound frame addressed to this stream. */
  _onFrame(meta: StreamFrameMeta, payload: Uint8Array): void {
    if (this.#ended !== null) return;
    switch (meta.frameType) {
      case FRAME_DATA: {
        const answer = this.#answer;
        const r = this.#inbox.push(payload, !meta.hasContinuation, answer === null);
        if (typeof r === "string") return this.#overrun(r);
        if (r !== undefined && answer !== null) (this.#answer = null, answer(r));
        return;
      }
      case FRAME_FEEDBACK:
        return this.#onFeedback(meta.consumedSize ?? 0);
      case FRAME_CLOSE:
        this.#ended = this.#error("closed", "closed by the peer");
        this.#rejectWriters(this.#ended);
        this.#inbox.end(null, false);
        return this.#release(undefined);
      case FRAME_RST:
        return this._fail(this.#error("reset", "reset by the peer"));
    }
  }

  /** @internal Ends it with `error` locally (no frame sent). */
  _fail(error: StreamError): void {
    if (this.#ended !== null) return;
    this.#ended = error;
    this.#held = [];
    this.#rejectWriters(error);
    this.#inbox.end(error, true);
    this.#release(error);
  }

  /** @internal Wakes writers waiting for room (feedback arrived, connection drained). */
  _wake(): void {
    while (this.#writers.length > 0 && this.#hasRoom() && this.#ended === null) {
      const w = this.#writers.shift()!;
      this.#put(w.msg);
      w.resolve();
    }
  }

  // ---- internals ----

  #hasRoom(): boolean {
    const b = this.#opts.maxBufSize;
    if (b > 0 && this.#produced >= this.#remoteConsumed + b) return false;
    // Without a window, what is held before the stream is connected is bounded all the same.
    if (b === 0 && !this.#connected && this.#produced >= HELD_WITHOUT_WINDOW) return false;
    return !(this.#connected && this.#link.writeBlocked);
  }

  #put(msg: Uint8Array): void {
    this.#produced += msg.length;
    if (this.#connected) this.#sendData(msg);
    else this.#held.push(msg.slice());
  }

  #sendData(msg: Uint8Array): void {
    const to = this.#remote!.streamId;
    let off = 0;
    do {
      const end = Math.min(msg.length, off + SEGMENT_SIZE);
      const more = end < msg.length;
      const meta = {
        streamId: to,
        sourceStreamId: this.id,
        frameType: FRAME_DATA,
        hasContinuation: more,
      };
      this.#link.sendFrame(meta, msg.subarray(off, end));
      off = end;
    } while (off < msg.length);
    this.#sent += msg.length;
  }

  /** Sends the CLOSE of a graceful close and ends the stream. */
  #finish(): void {
    const meta = {
      streamId: this.#remote!.streamId,
      sourceStreamId: this.id,
      frameType: FRAME_CLOSE,
      hasContinuation: false,
    };
    this.#link.sendFrame(meta);
    this.#ended = this.#error("closed", "closed by this side");
    this.#release(undefined);
  }

  #sendRst(): void {
    const meta = { streamId: this.#remote!.streamId, frameType: FRAME_RST, hasContinuation: false };
    this.#link.sendFrame(meta);
  }

  #onFeedback(consumed: Int64): void {
    if (typeof consumed !== "number" || consumed < 0 || consumed > this.#sent) {
      this.#sendRst();
      return this._fail(
        this.#error(
          "protocol",
          `the peer's feedback says ${consumed} bytes consumed, only ${this.#sent} were sent`,
        ),
      );
    }
    if (consumed <= this.#remoteConsumed) return; // stale or repeated: brpc ignores it too
    this.#remoteConsumed = consumed;
    this._wake();
  }

  #overrun(why: string): void {
    if (this.#remote !== null) this.#sendRst();
    this._fail(this.#error("overrun", `the peer sent ${why}; stream reset`));
  }

  /**
   * After a read: the writer is told what was consumed once the reader caught up (nothing left
   * unread: it may be waiting for the window) or FEEDBACK_EVERY bytes were read since the last
   * report — not after every message (a report per message doubled the frames of small ones).
   * The writer's window is at least what it sent unreported, so it never waits on a reader that
   * has nothing left to read.
   */
  readonly #oweFeedback = (): void => {
    if (this.#feedbackOwed || !this.#connected || !this.#remote!.needFeedback) return;
    const inbox = this.#inbox;
    if (inbox.unreadBytes > 0 && inbox.consumed - this.#reported < FEEDBACK_EVERY) return;
    this.#feedbackOwed = true;
    queueMicrotask(this.#sendFeedback);
  };

  readonly #sendFeedback = (): void => {
    this.#feedbackOwed = false;
    if (this.#ended !== null || this.#inbox.consumed === this.#reported) return;
    this.#reported = this.#inbox.consumed;
    const meta = {
      streamId: this.#remote!.streamId,
      sourceStreamId: this.id,
      frameType: FRAME_FEEDBACK,
      hasContinuation: false,
      consumedSize: this.#inbox.consumed,
    };
    this.#link.sendFrame(meta);
  };

  #rejectWriters(e: StreamError): void {
    const ws = this.#writers;
    this.#writers = [];
    for (const w of ws) w.reject(e);
  }

  #release(e: StreamError | undefined): void {
    this.#link.release(this);
    this.#done(e);
  }

  #error(kind: StreamError["kind"], what: string): StreamError {
    return new StreamError(kind, `${this.#link.describe(this.id)}: ${what}`);
  }
}
