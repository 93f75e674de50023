/**
 * {@link BrpcRdmaConn}: the byte stream of one brpc RDMA connection, behind the same
 * {@link TcpConn} interface as a TCP connection (it is a {@link ConnBase}: the same write queue,
 * handlers, limits and close logic), so the baidu_std channel and server run on it unchanged.
 *
 * Out: the registered send region is the connection's output ring (`send_ring.ts`): the channel
 * and server encode frames straight into it (ConnBase's ring mode) and they leave from where they
 * lie, in pieces of at most one peer block, each one SEND_WITH_IMM whose immediate returns the
 * receive credits this side owes (brpc's flow control, `credits.ts`); ring bytes are reused only
 * after the completion that frees their send. Bytes queued outside the ring (writes too big for
 * it, output while it was full) are copied into it piece by piece as they leave: one copy.
 * Sending stops when the peer's receive window, the send queue window or the ring is full and goes
 * on when credits or send completions come back.
 * In: a receive's block is lent to the data handler (the baidu_std parser copies only what it
 * keeps; a handler that does not take lent chunks gets a copy) and reposted once the delivery
 * returned; its credit goes back to the peer (on the next data send, or in a standalone ACK past
 * half the window). While reading is paused, received bytes are copied out and held and their
 * credits withheld, so the peer stops at its window: memory held is bounded by the receive queue.
 * {@link BrpcRdmaCounters} count the bytes sent in place and copied, in each direction.
 *
 * The TCP connection of the handshake stays open and carries nothing: its close ends this
 * connection (as brpc watches its fd for EOF), and any byte on it is a protocol error. A failed
 * completion (the QP went to error) closes the connection like a TCP reset.
 *
 * Completions: a QP on a shared CQ (the verbs hub, `qp.readiness` set) is driven by the
 * process's driver when one is set ({@link setBrpcRdmaDriver}; rpc/ sets the progress engine):
 * the drain hands this connection its completions and announces its token, and the driver calls
 * {@link BrpcRdmaConn.step} (receive blocks reposted, credits returned, queued bytes sent).
 * Otherwise — no driver, or a QP in event mode (`qp.polling` false: brpc's `usePolling` option,
 * by default on a software device such as Soft-RoCE) — the connection runs its own loop: poll
 * until nothing comes, arm, wait off-thread (on a shared CQ: the hub's one parked wait), no spin.
 *
 * Threading: the JS thread that created it; completions are waited for off-thread.
 * @module
 */
import { setImmediate } from "node:timers";
import { ConnectionClosedError, type VerbusError } from "../../errors.ts";
import { ConnBase } from "../tcp/conn_base.ts";
import { COPY_LIMIT } from "../tcp/conn_output.ts";
import type { NetAddress, TcpConn } from "../tcp/tcp.ts";
import { CreditWindow } from "./credits.ts";
import type { BrpcHello } from "./hello.ts";
import { type BrpcRdmaCounters, newCounters } from "./counters.ts";
import { type BrpcCompletionSink, type BrpcQp, SEND_SIGNALED, SEND_SOLICITED } from "./qp_port.ts";
import { SendRing, slotSizeFor } from "./send_ring.ts";

/** Longest off-thread sleep of the completion loop (bounds how long close() keeps resources). */
const WAIT_MS = 100;
/** Sends staged before one doorbell. */
const POST_BATCH = 32;
/** Busy poll rounds between two macrotask yields (timers and sockets get their turn). */
const ROUNDS_PER_YIELD = 64;

/**
 * Drives a connection whose QP is on a shared readiness source: gives it turns ({@link
 * BrpcRdmaConn.step}) when its token is announced; returns what ends that at its close.
 */
export type BrpcRdmaDriver = (conn: BrpcRdmaConn) => () => void;

let driver: BrpcRdmaDriver | null = null;

/** Sets (or with null clears) the process's driver of shared-CQ connections (rpc/ sets it). */
export function setBrpcRdmaDriver(d: BrpcRdmaDriver | null): void {
  driver = d;
}

/** One established brpc RDMA connection. */
export class BrpcRdmaConn extends ConnBase implements BrpcCompletionSink {
  readonly remoteAddress: NetAddress;
  readonly localAddress: NetAddress;
  /** Counters (read-only for callers). */
  readonly counters: BrpcRdmaCounters = newCounters();
  /** The credit state (read-only for callers: tests check the arithmetic). */
  readonly window: CreditWindow;
  /** Bytes of each send at most: min(peer's block size, `MAX_SEND_SLOT`). */
  readonly slotSize: number;
  readonly #tcp: TcpConn;
  readonly #qp: BrpcQp;
  readonly #ring: SendRing;
  #staged = 0;
  /** Receives reposted in this poll whose credits are still to be returned. */
  #reposted = 0;
  #paused = false;
  #held: Uint8Array[] | null = null;
  #failed = false;
  /** Completions handed to this connection since its last {@link step}. */
  #completions = 0;
  /** Set while a driver drives it (ends the driving at close). */
  #undrive: (() => void) | null = null;

  /**
   * Takes over `tcp` (its handlers are replaced) and `qp` (brought up with a send region of
   * `sendBytesFor` (`send_ring.ts`) bytes) and starts the completion loop.
   */
  constructor(tcp: TcpConn, qp: BrpcQp, remote: BrpcHello) {
    super();
    this.#tcp = tcp;
    this.#qp = qp;
    this.remoteAddress = tcp.remoteAddress;
    this.localAddress = tcp.localAddress;
    this.window = new CreditWindow(qp.sqSize, qp.rqSize, remote.sqSize, remote.rqSize);
    this.slotSize = slotSizeFor(remote);
    this.#ring = new SendRing(qp.sendRegion, this.window.localCapacity);
    this.useOutputRing(this.#ring);
    tcp.onData((chunk) =>
      this.#fail(`${chunk.length} unexpected byte(s) on the TCP connection of an RDMA connection`)
    );
    tcp.onClose((err) => this.closed_(err ?? this.peerClosed("closed its TCP connection")));
    if (
      qp.readiness !== undefined && qp.attach !== undefined && driver !== null &&
      qp.polling !== false
    ) {
      qp.attach(this, true);
      this.#undrive = driver(this);
    } else void this.#loop();
  }

  /** Where its completions are announced (shared CQ), else undefined. */
  get readiness(): BrpcQp["readiness"] {
    return this.#qp.readiness;
  }

  /**
   * One turn under a driver: reposts the receive blocks its completions freed, returns their
   * credits and sends what the windows allow. Returns the completions handled since the last
   * turn (0: nothing). Never throws.
   */
  step(): number {
    const n = this.#completions;
    this.#completions = 0;
    if (this.closed) return n;
    const rc = this.#qp.flushReceives?.() ?? 0;
    if (rc !== 0) this.#fail(`ibv_post_recv failed (errno ${rc})`);
    else this.#afterPoll();
    return n;
  }

  protected override closed_(error: VerbusError | undefined): void {
    super.closed_(error);
    const undrive = this.#undrive;
    if (undrive === null) return; // its own loop releases the QP when it ends
    this.#undrive = null;
    undrive();
    this.#qp.close();
  }

  async #loop(): Promise<void> {
    const qp = this.#qp;
    let rounds = 0;
    try {
      while (!this.closed) {
        let n = qp.poll(this);
        if (n === 0 && !this.closed) {
          qp.arm();
          n = qp.poll(this); // what completed before the arm raises no event
        }
        if (n < 0) {
          this.#fail(`ibv_poll_cq failed (errno ${-n})`);
          break;
        }
        if (this.closed) break;
        this.#afterPoll();
        // A macrotask now and then whatever the poll found: a wait that returns at once (the
        // completions went to another member of a shared CQ) must not starve timers and sockets.
        if (++rounds % ROUNDS_PER_YIELD === 0) await new Promise((r) => setImmediate(r));
        if (n > 0) {
          await null; // let the handlers' microtasks (their answers) run
          continue;
        }
        await qp.wait(WAIT_MS);
      }
    } catch (e) {
      this.#fail(`completion loop: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      qp.close();
    }
  }

  /** Returns the credits of the blocks reposted in the last poll, then sends what it can. */
  #afterPoll(): void {
    if (this.#paused) return;
    const n = this.#reposted;
    this.#reposted = 0;
    this.#returnCredits(n);
    if (this.hasQueued && this.window.canSend) this.flushNow();
  }

  #returnCredits(n: number): void {
    const w = this.window;
    // One block at a time, as brpc does: the half-window test runs after each.
    for (let i = 0; i <= n; i++) {
      const imm = w.returnCredits(i < n ? 1 : 0);
      if (imm > 0) this.#postAck(imm);
    }
  }

  #postAck(imm: number): void {
    this.counters.acks++;
    this.counters.creditsOut += imm;
    this.#qp.stageSend(0, 0, imm, SEND_SIGNALED | SEND_SOLICITED, 0);
    this.#post();
  }

  #post(): void {
    if (this.#failed) return;
    this.#staged = 0;
    const rc = this.#qp.postStaged();
    if (rc !== 0) this.#fail(`ibv_post_send failed (errno ${rc})`);
  }

  onSend(wrId: number, status: number): void {
    this.#completions++;
    if (this.closed) return;
    if (status !== 0) {
      this.#fail(`a send failed: ${this.#qp.statusText(status)} (the QP is in error)`);
      return;
    }
    if (!this.window.sendCompleted(wrId) || !this.#ring.completed(wrId)) {
      this.#fail(`a send completion freed ${wrId} slot(s), more than were in flight`);
      return;
    }
    if (wrId === 0) this.#returnCredits(0); // an ACK slot is free: credits may be waiting
  }

  onRecv(block: Uint8Array, len: number, imm: number, status: number): void {
    this.#completions++;
    if (this.closed) return;
    if (status !== 0) {
      this.#fail(`a receive failed: ${this.#qp.statusText(status)} (the QP is in error)`);
      return;
    }
    if (imm > 0) {
      if (!this.window.credited(imm)) {
        this.#fail(
          `the peer returned ${imm} credit(s) on top of ${this.window.remoteRq}, ` +
            `more than the window of ${this.window.localCapacity}`,
        );
        return;
      }
      this.counters.creditsIn += imm;
    }
    if (len === 0) return; // a standalone ACK: its block is reposted, no credit owed for it
    const c = this.counters;
    c.receives++;
    if (this.#paused) {
      (this.#held ??= []).push(block.slice(0, len));
      c.copiedOnReceive += len;
      return;
    }
    this.#reposted++;
    const copied = this.deliverLent(block.subarray(0, len));
    c.copiedOnReceive += copied;
    c.receivedLent += len - copied;
  }

  /** Counts what `write` copies into the output slab (the ring, or heap memory copied later). */
  override write(bytes: Uint8Array): boolean {
    if (bytes.length <= COPY_LIMIT && !this.closed) this.counters.copiedOnSend += bytes.length;
    return super.write(bytes);
  }

  protected flushNow(): void {
    const w = this.window;
    while (this.hasQueued && !this.closed) {
      if (!w.canSend) {
        this.counters.windowStalls++;
        break;
      }
      const slab = this.runSlab;
      const src = slab !== null
        ? slab.subarray(this.runStart, this.runStart + this.pendingWriteBytes)
        : this.takeHead();
      const inPlace = this.inRing(src);
      let off = 0;
      while (off < src.length && w.canSend) {
        const k = this.#sendPiece(src, off, slab !== null, inPlace);
        if (k === 0) break;
        off += k;
      }
      if (slab !== null) this.wroteRun(off);
      else {
        if (off < src.length) this.requeueFront(src.subarray(off));
        this.wrote(off);
      }
      if (off < src.length && w.canSend) {
        this.counters.ringStalls++; // no room to copy into: completions free it
        break;
      }
    }
    if (this.#staged > 0) this.#post();
  }

  /**
   * Stages the send of one peer block's worth of `src` from `off`: in place when `src` lies in
   * the send ring, else copied into it. Returns the bytes taken (0: no room in the ring).
   * `whole`: `src` is everything queued (else more may follow it in the queue). The last send of
   * a burst is SOLICITED: brpc arms its receive CQ for solicited completions only.
   */
  #sendPiece(src: Uint8Array, off: number, whole: boolean, inPlace: boolean): number {
    const w = this.window, ring = this.#ring, c = this.counters;
    const k = Math.min(this.slotSize, src.length - off);
    let at: number;
    if (inPlace) {
      at = src.byteOffset - ring.buffer.byteOffset + off;
      c.sentInPlace += k;
    } else {
      at = ring.reserve(k);
      if (at < 0) return 0;
      ring.buffer.set(src.subarray(off, off + k), at);
      ring.commit(k);
      c.copiedOnSend += k;
    }
    ring.posted(at + k);
    const edge = w.remoteRq === 1 || w.sqWindow === 1;
    const imm = w.takeSend();
    const last = off + k === src.length && (whole || !this.hasQueued);
    let flags = edge || last || this.#staged + 1 === POST_BATCH ? SEND_SOLICITED : 0;
    if (w.signalCount > 0) flags |= SEND_SIGNALED;
    this.#qp.stageSend(at, k, imm, flags, w.signalCount);
    c.dataSends++;
    c.creditsOut += imm;
    if (k > c.maxSend) c.maxSend = k;
    if (++this.#staged === POST_BATCH) this.#post();
    return k;
  }

  protected closeSocket(): void {
    this.#tcp.close();
  }

  protected setSocketPaused(paused: boolean): void {
    this.#paused = paused;
    if (!paused && this.#held !== null) queueMicrotask(this.#release);
  }

  /** Delivers what was held while paused and returns its credits. */
  readonly #release = (): void => {
    const held = this.#held;
    if (held === null || this.#paused || this.closed) return;
    this.#held = null;
    for (const c of held) this.deliver(c);
    this.#returnCredits(held.length);
    if (this.hasQueued && this.window.canSend) this.flushNow();
  };

  #fail(reason: string): void {
    if (this.#failed || this.closed) return;
    this.#failed = true;
    const r = this.remoteAddress;
    this.closed_(
      new ConnectionClosedError(
        `brpc RDMA connection to ${r.host}:${r.port} (${this.#qp.deviceName}) failed: ${reason}`,
        { context: { remote: `${r.host}:${r.port}` } },
      ),
    );
  }
}
