/**
 * {@link StreamInbox}: the receiving half of a stream — continuation segments reassembled into
 * messages, messages queued until read, one reader waiting at a time, and the bounds that keep a
 * peer from filling this process: unread bytes (`maxUnreadBytes`) and the size of one message
 * (`maxMessageSize`). It counts what was read (brpc's consumed size, reported back as feedback).
 *
 * Threading: the JS thread of its connection.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { StreamError } from "./stream_error.ts";

const EMPTY = new Uint8Array(0);

/**
 * What all streams of one connection may hold unread (and in partial messages) together: a
 * peer that opens many streams and fills each to its own bound still meets this one.
 */
export interface UnreadBudget {
  used: number;
  readonly max: number;
}

/** Why a push was refused (the stream must then be reset). */
export type InboxOverrun = string;

/** Received messages of one stream, in order. Messages handed out are the reader's. */
export class StreamInbox {
  #queue: Uint8Array[] = [];
  #head = 0;
  /** Bytes queued and not read. */
  #unread = 0;
  #segments: Uint8Array[] = [];
  #segmentBytes = 0;
  /** Bytes handed to the reader so far (brpc's consumed size). */
  consumed = 0;
  #waiter: { resolve(m: Uint8Array | undefined): void; reject(e: unknown): void } | null = null;
  /** undefined = open; null = ended cleanly; an error = ended with it. */
  #end: StreamError | null | undefined = undefined;

  constructor(
    private readonly maxUnread: number,
    private readonly maxMessage: number,
    /** Called when a read handed out bytes (to owe the peer a feedback). */
    private readonly onConsumed: () => void,
    /** The connection's budget, shared by its streams. */
    private readonly budget: UnreadBudget,
  ) {}

  /** Bytes received and not read yet. */
  get unreadBytes(): number {
    return this.#unread;
  }

  /**
   * Takes one received segment (a view the inbox may keep). Returns the whole message when
   * `last` completes one and it is not queued (`deliver` false), or undefined; returns an
   * overrun text when a bound was passed (nothing kept).
   */
  push(
    segment: Uint8Array,
    last: boolean,
    deliver: boolean,
  ): Uint8Array | InboxOverrun | undefined {
    if (this.#end !== undefined) return undefined;
    let msg = segment;
    if (!last || this.#segments.length > 0) {
      this.#segmentBytes += segment.length;
      if (this.#segmentBytes > this.maxMessage) {
        return `a message of more than ${this.maxMessage} bytes (maxMessageSize)`;
      }
      if (this.budget.used + segment.length > this.budget.max) return this.#overBudget();
      this.budget.used += segment.length;
      this.#segments.push(segment);
      if (!last) return undefined;
      msg = join(this.#segments, this.#segmentBytes);
      this.budget.used -= this.#segmentBytes;
      this.#segments = [];
      this.#segmentBytes = 0;
    }
    if (!deliver) return msg;
    const w = this.#waiter;
    if (w !== null) {
      this.#waiter = null;
      this.#take(msg.length);
      w.resolve(msg);
      return undefined;
    }
    if (this.#unread + msg.length > this.maxUnread) {
      return `${
        this.#unread + msg.length
      } unread bytes, more than maxUnreadBytes=${this.maxUnread}`;
    }
    if (this.budget.used + msg.length > this.budget.max) return this.#overBudget();
    this.budget.used += msg.length;
    this.#unread += msg.length;
    this.#queue.push(msg);
    return undefined;
  }

  #overBudget(): InboxOverrun {
    return `more than the connection's ${this.budget.max} unread bytes over all its streams`;
  }

  /** The next message; undefined once the stream ended cleanly and all were read. */
  read(): Promise<Uint8Array | undefined> {
    if (this.#head < this.#queue.length) {
      const m = this.#queue[this.#head];
      this.#queue[this.#head++] = EMPTY;
      if (this.#head === this.#queue.length) (this.#queue = [], this.#head = 0);
      this.#unread -= m.length;
      this.budget.used -= m.length;
      this.#take(m.length);
      return Promise.resolve(m);
    }
    if (this.#end === null) return Promise.resolve(undefined);
    if (this.#end !== undefined) return Promise.reject(this.#end);
    if (this.#waiter !== null) {
      return Promise.reject(
        new VerbusError("INVALID_ARGUMENT", "a stream has one reader: a read() is already waiting"),
      );
    }
    return new Promise((resolve, reject) => (this.#waiter = { resolve, reject }));
  }

  #take(n: number): void {
    this.consumed += n;
    this.onConsumed();
  }

  /**
   * Ends the inbox: `error` null = cleanly (queued messages stay readable), else with `error`
   * (`drop`: queued messages are discarded, the next read throws at once).
   */
  end(error: StreamError | null, drop: boolean): void {
    if (this.#end !== undefined) return;
    this.#end = error;
    this.#segments = [];
    this.budget.used -= this.#segmentBytes;
    this.#segmentBytes = 0;
    if (drop || error !== null) {
      this.#queue = [];
      this.#head = 0;
      this.budget.used -= this.#unread;
      this.#unread = 0;
    }
    const w = this.#waiter;
    this.#waiter = null;
    if (w !== null) error === null ? w.resolve(undefined) : w.reject(error);
  }
}

function join(parts: Uint8Array[], n: number): Uint8Array {
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) (out.set(p, off), off += p.length);
  return out;
}
