/**
 * {@link FabricStreams}: the brpc streams of one fabric session (shm, verbs, URMA), carried by a
 * stream pipe in the session's regions instead of the TCP connection. Each region holds the
 * inbound ring of one direction (`rpc/region/layout.ts`, `streamRing`); the pipe is a byte stream
 * of the very `"STRM"` frames TCP carries — and of the baidu_std frames of the calls that open
 * the streams ({@link PipeCalls}: an open costs no TCP round trip) — so the same
 * {@link StreamTable} (ids, routing, RST for unknown streams) and the same {@link FrameParser}
 * (frames split across the ring's wrap or across rounds) serve both:
 * ```
 *   writer's region                               reader's region
 *   control page                                  control page
 *     52 streamCredit ◄── u32 write (reader) ──┐    48 streamTail ◄── u32 write (writer, last)
 *                                              │
 *   Stream.write → StreamTable.sendFrame       │  stream ring (256 KiB, positions mod size)
 *     → encoded once into this pipe's scratch  │  ┌──────────────────────────────────────┐
 *     → one or two one-sided writes ──────────────►│ …STRM frame│STRM fr│ame│…           │
 *       at tail mod size (wraps), then the     │  └──────────────────────────────────────┘
 *       tail word; one flush + kick per turn   │     head (reader)        tail (writer)
 *                                              │
 *                          reader's pump: tail − head bytes copied out in one slice, parsed,
 *                          routed; head returned as credit ────────────────┘
 * ```
 * Flow control is two-level, as on TCP: each stream keeps brpc's window (`maxBufSize`, FEEDBACK
 * frames: a reader that stops reading stops its writer), and the pipe itself has the ring's
 * credit: a frame that does not fit waits in this pipe's queue, and `writeBlocked` holds every
 * writer of the session until the reader's credit drained it (so at most one message per stream
 * waits there). The reader copies out what arrived every round (one allocation per round, not
 * per message), so the ring never fills with unread messages; what a stream holds unread is
 * bounded by its `maxUnreadBytes` and the session's unread budget, exactly as on TCP.
 *
 * A peer that publishes a tail more than a ring ahead, a credit beyond what was written, or bytes
 * that are not stream frames breaks the pipe: every stream of the session ends (kind "protocol")
 * and `onViolation` fails the session (its calls move to TCP). When the session fails or closes
 * its streams end with kind "connection": frames already in a ring cannot be moved to TCP (brpc's
 * stream frames carry no sequence numbers to resume from), so a stream never silently loses or
 * repeats data; streams opened after the drop ride the TCP connection.
 *
 * Threading: the JS thread of the session; the session's engine step calls {@link pump}.
 * @module
 */
import type { FabricEndpoint } from "../../transport/fabric.ts";
import { FAILED, OK } from "../../transport/fabric.ts";
import { ProtocolError } from "../../errors.ts";
import { FrameParser } from "../protocol/frame_parser.ts";
import type { Area, RegionLayout } from "../region/layout.ts";
import { CONTROL } from "../region/layout.ts";
import { type AnswerSink, type StreamConn, StreamTable } from "./stream_table.ts";
import { StreamError } from "./stream_error.ts";
import { PipeCalls } from "./pipe_calls.ts";

/** Where the pipe lies: the local inbound ring, the peer's, and both control pages. */
export interface StreamRingPlace {
  /** This side's inbound ring (in `endpoint.local`). */
  readonly localRing: Area;
  /** This side's control page offset (in `endpoint.local`). */
  readonly localControl: number;
  /** The peer's inbound ring (remote offsets). */
  readonly remoteRing: Area;
  /** The peer's control page offset. */
  readonly remoteControl: number;
}

/** Counters of a pipe (updated in place; tests and `verbus call --stream-count`). */
export interface StreamRingStats {
  /** Bytes appended to the peer's ring. */
  bytesOut: number;
  /** Bytes taken from this side's ring. */
  bytesIn: number;
  /** Times a frame waited in the queue (for the reader's credit, or room in the send queue). */
  creditWaits: number;
}

const INITIAL_SCRATCH = 64 * 1024;

/**
 * Largest one-sided write the pipe posts: every fabric takes writes of this size (verbs and URMA
 * copy a write through a bounce ring of at least 256 KiB and refuse one past half of it).
 */
const MAX_WRITE = 64 * 1024;

/** The stream pipe of one fabric session. See the module documentation. */
export class FabricStreams implements StreamConn {
  /** The session's streams (open them on this table). */
  readonly table: StreamTable;
  /** The calls that open streams, carried on this pipe (`pipe_calls.ts`). */
  readonly calls: PipeCalls;
  /** The fabric's name ("shm", "verbs", "urma", "urma (simulated)"), for reports. */
  readonly fabric: string;
  readonly stats: StreamRingStats = { bytesOut: 0, bytesIn: 0, creditWaits: 0 };
  readonly #ep: FabricEndpoint;
  readonly #place: StreamRingPlace;
  readonly #size: number;
  readonly #words: Uint32Array;
  readonly #parser: FrameParser;
  readonly #onViolation: (reason: string) => void;
  /** Producer: bytes appended to the peer's ring, and the credit last seen (mod 2^32). */
  #tail = 0;
  #credit = 0;
  /** Consumer: bytes taken from this side's ring (mod 2^32), returned as credit each round. */
  #head = 0;
  /** Frames (or their rests) waiting for credit, in order; `#queuedAt` into the first. */
  #queue: Uint8Array[] = [];
  #queuedAt = 0;
  #queuedBytes = 0;
  /** The tail was advanced but its word not yet posted (the post found the queue full). */
  #tailOwed = false;
  /** A post found the send queue full: the session wants another turn to retry. */
  #sendFull = false;
  /** The credit's write found the send queue full. */
  #creditOwed = false;
  #kickOwed = false;
  #scratch = new Uint8Array(INITIAL_SCRATCH);
  #ended: string | null = null;

  /**
   * `where` names the peer in errors; `answers` (client side) takes the answers of opening
   * calls; `onViolation` fails the session when the peer broke the pipe.
   */
  constructor(
    endpoint: FabricEndpoint,
    place: StreamRingPlace,
    where: string,
    onViolation: (reason: string) => void,
    answers?: AnswerSink,
  ) {
    this.#ep = endpoint;
    this.#place = place;
    this.#size = place.localRing.size;
    this.fabric = endpoint.simulated ? `${endpoint.kind} (simulated)` : endpoint.kind;
    const local = endpoint.local;
    this.#words = new Uint32Array(local.buffer, local.byteOffset + place.localControl, 16);
    this.#onViolation = onViolation;
    // Answers of opening calls: this pipe's own, else those of calls made over TCP (`answers`).
    const answer: AnswerSink = (m, p, a) => void (this.calls.answer(m, p, a) || answers?.(m, p, a));
    this.table = new StreamTable(this, `${where} over ${this.fabric}`, answer);
    this.table.carrier = this.fabric;
    this.calls = new PipeCalls(this, this.table, `${where} over ${this.fabric}`);
    this.#parser = new FrameParser((m, p, a) => {
      const why = this.calls.onFrame(m, p, a);
      if (why !== undefined) {
        throw new ProtocolError(`a baidu_std call frame in the stream ring: ${why}`);
      }
    }, { maxBodySize: this.#size * 64, onStreamFrame: (m, p) => this.table.onFrame(m, p) });
  }

  /**
   * The pipe of a session whose own region is laid out as `local` and the peer's as `remote`
   * (the inbound ring is `local.streamRing`, the outbound the peer's).
   */
  static between(
    endpoint: FabricEndpoint,
    local: RegionLayout,
    remote: RegionLayout,
    where: string,
    onViolation: (reason: string) => void,
    answers?: AnswerSink,
  ): FabricStreams {
    const place = {
      localRing: local.streamRing,
      localControl: local.control.offset,
      remoteRing: remote.streamRing,
      remoteControl: remote.control.offset,
    };
    return new FabricStreams(endpoint, place, where, onViolation, answers);
  }

  // ---- StreamConn (the table's output) ----

  get closed(): boolean {
    return this.#ended !== null;
  }

  /** Frames wait for the reader's credit: writers hold until it drained. */
  get writeBlocked(): boolean {
    return this.#queuedBytes > 0;
  }

  get writeBuffer(): Uint8Array {
    return this.#scratch;
  }

  reserve(n: number): number {
    if (n > this.#scratch.length) {
      this.#scratch = new Uint8Array(Math.max(n, this.#scratch.length * 2));
    }
    return 0;
  }

  commit(n: number): void {
    this.#append(this.#scratch, n, true);
  }

  write(bytes: Uint8Array): boolean {
    this.#append(bytes, bytes.length, false);
    return true;
  }

  // ---- driven by the session ----

  /**
   * One round: takes what arrived in this side's ring and routes it, returns credit, posts what
   * waited for credit. Returns the work done (0: nothing). Never throws.
   */
  pump(): number {
    if (this.#ended !== null) return 0;
    let work = 0;
    const tail = this.#words[CONTROL.streamTail >> 2];
    const avail = (tail - this.#head) >>> 0;
    if (avail > this.#size) {
      this.#violate(
        `the peer's stream tail is ${avail} bytes ahead, past the ${this.#size}-byte ring`,
      );
      return 1;
    }
    if (avail > 0) {
      work++;
      this.#take(avail);
      if (this.#ended !== null) return work;
    }
    const credit = this.#words[CONTROL.streamCredit >> 2];
    if (credit !== this.#credit) {
      const gained = (credit - this.#credit) >>> 0;
      if (gained > ((this.#tail - this.#credit) >>> 0)) {
        this.#violate(`the peer returned credit for ${gained} bytes, more than were written`);
        return 1;
      }
      this.#credit = credit;
      work++;
    }
    this.#sendFull = false;
    if (this.#creditOwed) (this.#creditOwed = false, this.#returnCredit());
    if (this.#queuedBytes > 0 || this.#tailOwed) {
      this.#drain();
      if (this.#queuedBytes === 0) this.table.writable();
    }
    return work;
  }

  /** A post found the send queue full: drive the session again soon (nothing will announce it). */
  get wantsTurn(): boolean {
    return this.#sendFull && this.#ended === null;
  }

  /** Wants the engine's turns: streams are open (the session must be driven while idle of calls). */
  get active(): boolean {
    return this.table.size > 0 || this.#queuedBytes > 0;
  }

  /**
   * The session ended: every stream fails with `kind` ("connection" unless the peer broke the
   * pipe) naming `reason`. Safe twice.
   */
  end(reason: string, kind: "connection" | "protocol" = "connection"): void {
    if (this.#ended !== null) return;
    this.#ended = reason;
    this.#queue = [];
    this.#queuedBytes = 0;
    this.calls.end(reason);
    this.table.closeAll(
      new StreamError(
        kind,
        `the ${this.fabric} session ended (${reason}); a stream on it cannot move to TCP`,
      ),
    );
  }

  // ---- internals ----

  /** Copies `avail` bytes out of this side's ring (one slice), parses them, returns credit. */
  #take(avail: number): void {
    const local = this.#ep.local, base = this.#place.localRing.offset, size = this.#size;
    const at = this.#head & (size - 1);
    const first = Math.min(avail, size - at);
    let chunk: Uint8Array;
    if (first === avail) chunk = local.slice(base + at, base + at + avail);
    else {
      chunk = new Uint8Array(avail);
      chunk.set(local.subarray(base + at, base + size));
      chunk.set(local.subarray(base, base + avail - first), first);
    }
    this.#head = (this.#head + avail) >>> 0;
    this.stats.bytesIn += avail;
    try {
      this.#parser.push(chunk);
    } catch (e) {
      this.#violate(`the stream ring holds no stream frames: ${(e as Error).message}`);
      return;
    }
    // Credit back every round that took something (one u32 write; the kick is shared).
    this.#returnCredit();
  }

  #returnCredit(): void {
    const st = this.#ep.writeU32(
      0,
      this.#place.remoteControl + CONTROL.streamCredit,
      this.#head,
      0,
    );
    if (st === FAILED) return this.end(this.#refused("the credit's write"));
    if (st === OK) this.#oweKick();
    else this.#creditOwed = this.#sendFull = true;
  }

  /** Appends `n` bytes of `src` (a whole frame) to the pipe, or queues them (copied when scratch). */
  #append(src: Uint8Array, n: number, scratch: boolean): void {
    if (this.#ended !== null) return;
    let off = 0;
    if (this.#queuedBytes === 0) off = this.#post(src, 0, n);
    if (off < n) {
      const rest = scratch || off > 0 ? src.slice(off, n) : src.subarray(0, n);
      if (this.#queuedBytes === 0) this.stats.creditWaits++;
      this.#queue.push(rest);
      this.#queuedBytes += rest.length;
    }
  }

  /** Posts the queued bytes that fit now, in order. */
  #drain(): void {
    while (this.#queue.length > 0 && this.#ended === null) {
      const b = this.#queue[0];
      const done = this.#post(b, this.#queuedAt, b.length);
      this.#queuedBytes -= done - this.#queuedAt;
      if (done < b.length) {
        this.#queuedAt = done;
        break;
      }
      this.#queue.shift();
      this.#queuedAt = 0;
    }
    if (this.#tailOwed) this.#publish();
  }

  /** Writes as much of `src[from, to)` as the credit allows; returns where it stopped. */
  #post(src: Uint8Array, from: number, to: number): number {
    const size = this.#size, base = this.#place.remoteRing.offset;
    let p = from;
    while (p < to) {
      const free = size - ((this.#tail - this.#credit) >>> 0);
      if (free === 0) break;
      const at = this.#tail & (size - 1);
      const n = Math.min(to - p, free, size - at, MAX_WRITE);
      const st = this.#ep.write(0, base + at, src.subarray(p, p + n), 0);
      if (st !== OK) {
        if (st === FAILED) this.end(this.#refused(`a write of ${n} bytes`));
        else this.#sendFull = true; // the send queue: room comes back with completions
        break;
      }
      this.#tail = (this.#tail + n) >>> 0;
      this.stats.bytesOut += n;
      p += n;
      this.#tailOwed = true;
    }
    if (this.#tailOwed) this.#publish();
    return p;
  }

  /** Publishes the tail (ordered after the bytes it covers). */
  #publish(): void {
    const st = this.#ep.writeU32(0, this.#place.remoteControl + CONTROL.streamTail, this.#tail, 0);
    if (st === FAILED) return this.end(this.#refused("the tail's write"));
    if (st !== OK) this.#sendFull = true;
    else {
      this.#tailOwed = false;
      this.#oweKick();
    }
  }

  /** One flush and kick for everything posted in this turn. */
  #oweKick(): void {
    if (this.#kickOwed) return;
    this.#kickOwed = true;
    queueMicrotask(this.#kick);
  }

  /** Why the pipe ended after the fabric refused `what`. */
  #refused(what: string): string {
    const why = this.#ep.failureReason;
    return `the ${this.fabric} fabric refused ${what}${why ? `: ${why}` : ""}`;
  }

  readonly #kick = (): void => {
    this.#kickOwed = false;
    if (this.#ep.failed) return;
    this.#ep.flush();
    this.#ep.kick();
  };

  #violate(reason: string): void {
    this.end(`the peer broke the stream pipe: ${reason}`, "protocol");
    this.#onViolation(reason);
  }
}
