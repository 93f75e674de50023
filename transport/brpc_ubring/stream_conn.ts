/**
 * {@link BrpcUbringConn}: the byte stream of one brpc UBRing connection, behind the same
 * {@link TcpConn} interface as a TCP connection (a {@link ConnBase}: the same write queue,
 * handlers, limits and close logic), so the baidu_std channel and server run on it unchanged.
 *
 * Out: queued bytes are written straight into the peer's ring (ring.ts), as many as its free
 * blocks take; the rest waits for the peer's tail to move (the poller retries). In: the poller
 * takes what the peer wrote into this side's ring and delivers it. While reading is paused,
 * nothing is taken: the blocks stay in the ring and the peer stops at its flow control, so the
 * memory held is bounded by the ring.
 *
 * The TCP connection of the handshake stays open and carries nothing: its close ends this
 * connection (after what is in the ring was delivered), and any byte on it is a protocol error,
 * as in brpc. A peer that closes its ring (its receive flag CLOSED in this side's object) is
 * acknowledged and ends the connection; one that misses `heartbeatMisses` heartbeats in a row
 * too. A protocol violation in shared memory fails this connection only, naming it.
 *
 * Threading: the JS thread that created it.
 * @module
 */
import { ConnectionClosedError } from "../../errors.ts";
import { ConnBase } from "../tcp/conn_base.ts";
import type { NetAddress, TcpConn } from "../tcp/tcp.ts";
import type { ShmMapping } from "../shm/shm_object.ts";
import type { PeerObject } from "./objects.ts";
import type { BrpcUbringOptions } from "./options.ts";
import { type Pumpable, ubringPoller } from "./poller.ts";
import type { Helper } from "../../ffi/helper.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import { OBJ } from "./layout.ts";
import { UbringRings } from "./ring.ts";

/** Counters of one connection (tests, stats). */
export interface BrpcUbringCounters {
  /** Writes into the peer's ring (each ends with an EOF block). */
  writes: number;
  bytesOut: number;
  /** Reads that returned bytes. */
  reads: number;
  bytesIn: number;
  /** Times a write stopped because the peer's ring was full. */
  fullStalls: number;
  /** Heartbeats the peer missed (reset when one comes). */
  missedBeats: number;
}

/** One established brpc UBRing connection. */
export class BrpcUbringConn extends ConnBase implements Pumpable {
  readonly remoteAddress: NetAddress;
  readonly localAddress: NetAddress;
  readonly counters: BrpcUbringCounters = {
    writes: 0,
    bytesOut: 0,
    reads: 0,
    bytesIn: 0,
    fullStalls: 0,
    missedBeats: 0,
  };
  readonly spinMs: number;
  readonly idlePollMs: number;
  /** The rings (read-only for callers: tests look at their sizes). */
  readonly rings: UbringRings;
  readonly #tcp: TcpConn;
  readonly #own: ShmMapping;
  readonly #peer: PeerObject;
  readonly #beatMs: number;
  readonly #maxMisses: number;
  #nextBeat: number;
  #paused = false;
  #peerClosedFirst = false;
  /** The io_id word's value when the last pump began. */
  #ioSeen = 0;
  readonly #log: ((line: string) => void) | undefined;

  /**
   * Takes over `tcp` (its handlers are replaced) and both mapped objects (unmapped on close;
   * their names must already be unlinked) and joins this thread's poller; `helper` copies the
   * ring's blocks. A protocol violation of the peer is also told to `log` (the handshake's
   * once-per-cause log).
   */
  constructor(
    tcp: TcpConn,
    own: ShmMapping,
    peer: PeerObject,
    helper: Helper,
    options: BrpcUbringOptions,
    log?: (line: string) => void,
  ) {
    super();
    this.#log = log;
    this.#tcp = tcp;
    this.#own = own;
    this.#peer = peer;
    this.rings = new UbringRings(own.bytes, peer.bytes, helper);
    this.remoteAddress = tcp.remoteAddress;
    this.localAddress = tcp.localAddress;
    this.spinMs = options.spinMs;
    this.idlePollMs = options.idlePollMs;
    this.#beatMs = options.heartbeatMs;
    this.#maxMisses = options.heartbeatMisses;
    this.#nextBeat = performance.now() + this.#beatMs;
    tcp.onData((chunk) =>
      this.#fail(`${chunk.length} unexpected byte(s) on the TCP connection of a UBRing connection`)
    );
    tcp.onClose((err) => {
      if (this.closed) return;
      if (!this.#paused) this.#drain(); // what the peer wrote before it closed
      this.closed_(err ?? this.peerClosed("closed its TCP connection"));
    });
    ubringPoller.add(this);
  }

  wakeWord(): { pointer: NonNullPtr; seen: number } | null {
    if (this.closed) return null;
    return { pointer: this.#own.pointerAt(OBJ.RX_IO_ID), seen: this.#ioSeen };
  }

  pump(now: number): boolean {
    if (this.closed) return false;
    this.#ioSeen = this.rings.ioSeen;
    try {
      let moved = !this.#paused && this.#drain();
      if (this.closed) return moved;
      if (this.hasQueued) {
        const before = this.pendingWriteBytes;
        this.flushNow();
        if (this.pendingWriteBytes < before) moved = true;
      }
      if (this.closed) return moved;
      if (!moved && this.rings.peerClosed) {
        this.#peerClosedFirst = true;
        this.closed_(this.peerClosed("closed its ring"));
        return false;
      }
      if (now >= this.#nextBeat) this.#beat(now);
      return moved;
    } catch (e) {
      this.#fail(`poll: ${e instanceof Error ? e.message : String(e)}`);
      return false;
    }
  }

  #beat(now: number): void {
    this.#nextBeat = now + this.#beatMs;
    if (this.rings.beat()) {
      this.counters.missedBeats = 0;
      return;
    }
    if (++this.counters.missedBeats > this.#maxMisses) {
      this.#fail(
        `the peer missed ${this.counters.missedBeats} heartbeats of ${this.#beatMs} ms in a row`,
      );
    }
  }

  /** Delivers what is in this side's ring; true when anything came. */
  #drain(): boolean {
    let any = false;
    while (!this.closed && !this.#paused) {
      const chunk = this.rings.read();
      if (chunk === null) break;
      any = true;
      this.counters.reads++;
      this.counters.bytesIn += chunk.length;
      this.deliver(chunk);
    }
    if (this.rings.error !== null) this.#fail(this.rings.error);
    return any;
  }

  protected flushNow(): void {
    while (this.hasQueued && !this.closed) {
      const slab = this.runSlab;
      const src = slab !== null
        ? slab.subarray(this.runStart, this.runStart + this.pendingWriteBytes)
        : this.takeQueued();
      const n = this.rings.write(src, 0, src.length);
      if (n < 0) {
        if (slab === null) this.requeueFront(src);
        this.#fail(this.rings.error ?? "write failed");
        return;
      }
      if (n > 0) {
        this.counters.writes++;
        this.counters.bytesOut += n;
      }
      if (slab !== null) this.wroteRun(n);
      else {
        if (n < src.length) this.requeueFront(src.subarray(n));
        this.wrote(n);
      }
      if (n < src.length) {
        this.counters.fullStalls++;
        break;
      }
    }
    ubringPoller.kick(); // an answer (or the tail moving) is expected soon
  }

  protected closeSocket(): void {
    ubringPoller.remove(this);
    this.rings.close(this.#peerClosedFirst);
    this.rings.detach();
    this.#own.unlink();
    const own = this.#own;
    ubringPoller.release(this, () => own.close()); // an idle futex wait may still name it
    this.#peer.close();
    this.#tcp.close();
  }

  protected setSocketPaused(paused: boolean): void {
    this.#paused = paused;
    if (!paused) ubringPoller.kick();
  }

  #fail(reason: string): void {
    if (this.closed) return;
    const r = this.remoteAddress;
    const text = `brpc UBRing connection to ${r.host}:${r.port} failed: ${reason}`;
    this.#log?.(text);
    this.closed_(new ConnectionClosedError(text, { context: { remote: `${r.host}:${r.port}` } }));
  }
}
