/**
 * {@link BrpcRdmaConn}: the byte stream of one brpc RDMA connection, behind the same
 * {@link TcpConn} interface as a TCP connection (it is a {@link ConnBase}: the same write queue,
 * handlers, limits and close logic), so the baidu_std channel and server run on it unchanged.
 *
 * Out: queued bytes are copied into registered send slots, at most one peer block per slot, and
 * each slot leaves as one SEND_WITH_IMM whose immediate returns the receive credits this side
 * owes (brpc's flow control, `credits.ts`). Sending stops when the peer's receive window or the
 * send queue window is empty and goes on when credits or send completions come back.
 * In: every receive's bytes are copied out (the block is reposted at once) and delivered; its
 * credit goes back to the peer (on the next data send, or in a standalone ACK past half the
 * window). While reading is paused, received chunks are held and their credits withheld, so the
 * peer stops at its window: memory held is bounded by the receive queue.
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
import type { NetAddress, TcpConn } from "../tcp/tcp.ts";
import { CreditWindow } from "./credits.ts";
import { type BrpcHello, RESERVED_WRS } from "./hello.ts";
import { MAX_SEND_SLOT } from "./options.ts";
import { type BrpcCompletionSink, type BrpcQp, SEND_SIGNALED, SEND_SOLICITED } from "./qp_port.ts";

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

/** Counters of one connection (tests, stats). */
export interface BrpcRdmaCounters {
  /** Data SEND_WITH_IMMs posted. */
  dataSends: number;
  /** Standalone zero-length ACKs posted. */
  acks: number;
  /** Largest data send, in bytes (never above the peer's block size). */
  maxSend: number;
  /** Data receives. */
  receives: number;
  /** Credits the peer returned in immediates. */
  creditsIn: number;
  /** Credits this side returned (in data sends and ACKs). */
  creditsOut: number;
  /** Times sending stopped because a window was empty. */
  windowStalls: number;
}

/** One established brpc RDMA connection. */
export class BrpcRdmaConn extends ConnBase implements BrpcCompletionSink {
  readonly remoteAddress: NetAddress;
  readonly localAddress: NetAddress;
  /** Counters (read-only for callers). */
  readonly counters: BrpcRdmaCounters = {
    dataSends: 0,
    acks: 0,
    maxSend: 0,
    receives: 0,
    creditsIn: 0,
    creditsOut: 0,
    windowStalls: 0,
  };
  /** The credit state (read-only for callers: tests check the arithmetic). */
  readonly window: CreditWindow;
  /** Bytes of each send slot: min(peer's block size, {@link MAX_SEND_SLOT}). */
  readonly slotSize: number;
  readonly #tcp: TcpConn;
  readonly #qp: BrpcQp;
  readonly #slots: number;
  #sqCurrent = 0;
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
   * Takes over `tcp` (its handlers are replaced) and `qp` (brought up: {@link sendSlotsFor}
   * slots of {@link slotSizeFor} bytes) and starts the completion loop.
   */
  constructor(tcp: TcpConn, qp: BrpcQp, remote: BrpcHello) {
    super();
    this.#tcp = tcp;
    this.#qp = qp;
    this.remoteAddress = tcp.remoteAddress;
    this.localAddress = tcp.localAddress;
    this.window = new CreditWindow(qp.sqSize, qp.rqSize, remote.sqSize, remote.rqSize);
    this.slotSize = slotSizeFor(remote);
    this.#slots = sendSlotsFor(qp);
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
    if (!this.window.sendCompleted(wrId)) {
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
    this.counters.receives++;
    const chunk = block.slice(0, len);
    if (this.#paused) (this.#held ??= []).push(chunk);
    else {
      this.#reposted++;
      this.deliver(chunk);
    }
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
        : this.takeQueued();
      let off = 0;
      while (off < src.length && w.canSend) off += this.#sendPiece(src, off, slab !== null);
      if (slab !== null) this.wroteRun(off);
      else {
        if (off < src.length) this.requeueFront(src.subarray(off));
        this.wrote(off);
      }
    }
    if (this.#staged > 0) this.#post();
  }

  /**
   * Copies one slot's worth of `src` from `off` and stages its send; returns the bytes taken.
   * `whole`: `src` is everything queued (else more may follow it in the queue). The last send of
   * a burst is SOLICITED: brpc arms its receive CQ for solicited completions only.
   */
  #sendPiece(src: Uint8Array, off: number, whole: boolean): number {
    const w = this.window;
    const k = Math.min(this.slotSize, src.length - off);
    const slot = this.#sqCurrent;
    this.#qp.sendSlot(slot).set(src.subarray(off, off + k));
    if (++this.#sqCurrent === this.#slots) this.#sqCurrent = 0;
    const edge = w.remoteRq === 1 || w.sqWindow === 1;
    const imm = w.takeSend();
    const last = off + k === src.length && (whole || !this.hasQueued);
    let flags = edge || last || this.#staged + 1 === POST_BATCH ? SEND_SOLICITED : 0;
    if (w.signalCount > 0) flags |= SEND_SIGNALED;
    this.#qp.stageSend(slot, k, imm, flags, w.signalCount);
    const c = this.counters;
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

/** Bytes of each send slot for a peer: its block size, capped at {@link MAX_SEND_SLOT}. */
export function slotSizeFor(remote: BrpcHello): number {
  return Math.min(remote.blockSize, MAX_SEND_SLOT);
}

/** Send slots of a QP: its SQ minus the WRs reserved for ACKs. */
export function sendSlotsFor(qp: { sqSize: number }): number {
  return qp.sqSize - RESERVED_WRS;
}
