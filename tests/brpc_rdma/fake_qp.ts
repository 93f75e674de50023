/**
 * Test fixture: an in-memory {@link BrpcQp} with a real RC QP's rules where brpc's protocol
 * depends on them — a SEND consumes one posted receive of the peer (none posted: the sender's
 * QP fails, as with `rnr_retry` 0), a SEND longer than the peer's receive block fails both
 * sides (local length error), the send queue holds at most `sqSize` unreaped work requests
 * (unsignalled ones are reaped by a later signalled completion), completions come in order.
 * QPs find each other by QP number, as over the wire.
 *
 * Memory as a NIC sees it: a send's bytes are read from the send region when it is transmitted —
 * at once, or with {@link FakeQp.lateSends} only when {@link FakeQp.pump} runs (a NIC that reads
 * late: anything that rewrote those bytes before the completion corrupts the data). Receive
 * blocks are a fixed pool, reused: after each receive's call its block is overwritten with
 * {@link POISON} (anything that kept a view of it sees garbage).
 */
import type { BrpcHello } from "../../transport/brpc_rdma/hello.ts";
import type { ReadinessToken } from "../../transport/readiness.ts";
import type { BrpcRdmaOptions } from "../../transport/brpc_rdma/options.ts";
import {
  type BrpcCompletionSink,
  type BrpcQp,
  SEND_SIGNALED,
} from "../../transport/brpc_rdma/qp_port.ts";
import { setImmediate } from "node:timers";

/** Waits with no macrotask in between that mean a starved event loop ({@link FakeQp.starved}). */
const STARVED_AFTER = 200_000;

type Cqe = { send: true; wrId: number; status: number } | {
  send: false;
  data: Uint8Array;
  imm: number;
  status: number;
};

type Staged = {
  offset: number;
  len: number;
  imm: number;
  flags: number;
  wrId: number;
  /** {@link FakeQp.lateSends}: the bytes as they were at the post. */
  posted?: Uint8Array;
};

const byQpn = new Map<number, FakeQp>();
let nextQpn = 0x100;

/** Every send a fake QP posted (tests read the wire). */
export interface WireRecord {
  from: number;
  len: number;
  imm: number;
  flags: number;
  wrId: number;
}

/** Sends one {@link FakeQp.pump} transmits. */
const LATE_BATCH = 4;

/** The byte a receive block is filled with once its receive's call returned. */
export const POISON = 0xdd;

/** Statuses the fake uses (ibv_wc_status values). */
export const LOC_LEN_ERR = 1, WR_FLUSH_ERR = 5, RNR_RETRY_EXC_ERR = 13;

/** One in-memory QP. */
export class FakeQp implements BrpcQp {
  readonly deviceName = "fake0";
  readonly lid = 0;
  readonly gid = new Uint8Array(16).fill(0xfe);
  readonly qpNum = nextQpn++;
  readonly sqSize: number;
  readonly rqSize: number;
  readonly blockSize: number;
  /** Every send this QP posted. */
  readonly wire: WireRecord[] = [];
  /** Most receives this QP ever had posted and unused at once (never above rqSize). */
  posted = 0;
  peer: FakeQp | null = null;
  closed = false;
  #cq: Cqe[] = [];
  #region = new Uint8Array(0);
  #staged: Staged[] = [];
  /** Posted sends not transmitted yet ({@link lateSends}). */
  #late: Staged[] = [];
  #blocks: Uint8Array[] = [];
  #nextBlock = 0;
  /**
   * Sends are transmitted — their bytes read from the send region, their completions queued —
   * only when {@link pump} runs (scheduled 1 ms after a post), not at the post.
   */
  lateSends = false;
  /** Late sends whose bytes changed between their post and their transmission (a bug). */
  overwritten = 0;
  #inSq = 0;
  #unsignaled = 0;
  #waiter: (() => void) | null = null;
  #error = false;
  /** Own-loop waits (a QP driven through a shared source never waits itself). */
  waits = 0;
  /** Shared mode: the source its completions are announced on, and what drains them there. */
  readonly readiness?: ReadinessToken;
  readonly #shared: SharedCq | null;
  sink: BrpcCompletionSink | null = null;
  announce = false;
  /** Shared mode: driven by the engine unless the options ask for event mode (a fake device is
   * a hardware one for `usePolling: "auto"`). */
  readonly polling: boolean;

  constructor(o: BrpcRdmaOptions, shared: SharedCq | null = null) {
    this.polling = o.usePolling !== false;
    this.sqSize = o.sqSize;
    this.rqSize = o.rqSize;
    this.blockSize = o.blockSize;
    byQpn.set(this.qpNum, this);
    this.#shared = shared;
    if (shared !== null) this.readiness = { source: shared.source, token: shared.join(this) };
  }

  /** Shared mode: completions go to `sink` during the shared CQ's drain. */
  attach(sink: BrpcCompletionSink, announce: boolean): void {
    this.sink = sink;
    this.announce = announce;
  }

  flushReceives(): number {
    return 0;
  }

  /** Completions waiting in this QP's queue. */
  get queued(): number {
    return this.#cq.length;
  }

  bringUp(remote: BrpcHello, sendBytes: number): void {
    const p = byQpn.get(remote.qpNum);
    if (p === undefined) throw new Error(`no QP ${remote.qpNum} (RTR: bad dest_qp_num)`);
    this.peer = p;
    this.posted = this.rqSize;
    this.#region = new Uint8Array(sendBytes);
    this.#blocks = Array.from({ length: this.rqSize }, () => new Uint8Array(this.blockSize));
  }

  get sendRegion(): Uint8Array {
    return this.#region;
  }

  stageSend(offset: number, len: number, imm: number, flags: number, wrId: number): void {
    if (offset < 0 || offset + len > this.#region.length) {
      throw new Error(`send of ${len} B at ${offset} outside the ${this.#region.length} B region`);
    }
    this.#staged.push({ offset, len, imm, flags, wrId });
  }

  postStaged(): number {
    const staged = this.#staged;
    this.#staged = [];
    for (const s of staged) {
      if (this.#inSq >= this.sqSize) return 12; // ENOMEM: send queue full
      this.#inSq++;
      if (!this.lateSends) this.#send(s);
      else {
        s.posted = this.#region.slice(s.offset, s.offset + s.len);
        if (this.#late.push(s) === 1) setTimeout(() => this.pump(), 1);
      }
      if (this.#error) return 0;
    }
    return 0;
  }

  /**
   * Transmits a few of the sends posted so far ({@link lateSends}), reading their bytes now, and
   * schedules itself again while any is left: the connection meets completions of some sends
   * while later ones are still unread.
   */
  pump(): void {
    const late = this.#late;
    const n = Math.min(late.length, LATE_BATCH);
    for (let i = 0; i < n && !this.closed && !this.#error; i++) this.#send(late[i]);
    late.splice(0, n);
    if (late.length > 0 && !this.closed) setTimeout(() => this.pump(), 1);
  }

  #send(s: Staged): void {
    this.#unsignaled++;
    this.wire.push({ from: this.qpNum, len: s.len, imm: s.imm, flags: s.flags, wrId: s.wrId });
    const data = this.#region.slice(s.offset, s.offset + s.len);
    if (s.posted !== undefined && !sameBytes(s.posted, data)) this.overwritten++;
    this.#transmit(data, s);
    if (this.#error) return;
    if ((s.flags & SEND_SIGNALED) !== 0) {
      this.#inSq -= this.#unsignaled;
      this.#unsignaled = 0;
      this.#push({ send: true, wrId: s.wrId, status: 0 });
    }
  }

  #transmit(data: Uint8Array, s: { imm: number; wrId: number }): void {
    const p = this.peer!;
    if (p.closed || p.#error) return;
    if (p.posted === 0) return this.fail(RNR_RETRY_EXC_ERR, s.wrId);
    if (data.length > p.blockSize) {
      p.fail(LOC_LEN_ERR, 0);
      return this.fail(WR_FLUSH_ERR, s.wrId);
    }
    p.posted--;
    p.#push({ send: false, data, imm: s.imm, status: 0 });
  }

  /** Puts the QP in error: one failed completion (as a NIC reports it). */
  fail(status: number, wrId: number): void {
    if (this.#error) return;
    this.#error = true;
    this.#push({ send: true, wrId, status });
  }

  #push(c: Cqe): void {
    this.#cq.push(c);
    this.#shared?.completed();
    const w = this.#waiter;
    this.#waiter = null;
    w?.();
  }

  poll(sink: BrpcCompletionSink): number {
    let n = 0;
    while (n < 32 && this.#cq.length > 0 && !this.closed) {
      const c = this.#cq.shift()!;
      n++;
      if (c.send) sink.onSend(c.wrId, c.status);
      else {
        const block = this.#blocks[this.#nextBlock];
        if (++this.#nextBlock === this.#blocks.length) this.#nextBlock = 0;
        block.set(c.data);
        sink.onRecv(block, c.data.length, c.imm, c.status);
        block.fill(POISON); // reposted: the next receive may land in it
        if (c.status === 0) this.posted++;
      }
    }
    return n;
  }

  arm(): void {}

  /**
   * Event mode: when set, {@link wait} resolves at once, as a shared CQ's wait does while another
   * member's completions are queued for an engine. The connection's own loop must still give
   * timers and sockets a macrotask: the fake counts the waits between two macrotasks and, past
   * {@link STARVED_AFTER}, sets {@link starved} and waits for real (so a broken loop fails the
   * test instead of hanging the runner).
   */
  waitAtOnce = false;
  /** The connection's loop returned to this wait STARVED_AFTER times without a macrotask. */
  starved = false;
  #spins = 0;
  #tick = false;

  wait(timeoutMs: number): Promise<boolean> {
    this.waits++;
    if (this.#cq.length > 0) return Promise.resolve(true);
    if (this.waitAtOnce) {
      if (!this.#tick) {
        this.#tick = true;
        setImmediate(() => {
          this.#tick = false;
          this.#spins = 0;
        });
      }
      if (++this.#spins < STARVED_AFTER) return Promise.resolve(true);
      this.starved = true;
    }
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.#waiter = null;
        resolve(false);
      }, timeoutMs);
      this.#waiter = () => {
        clearTimeout(t);
        resolve(true);
      };
    });
  }

  statusText(status: number): string {
    return `fake status ${status}`;
  }

  close(): void {
    this.closed = true;
    byQpn.delete(this.qpNum);
    this.#shared?.leave(this);
  }
}

/** What a fake QP in shared mode needs of its shared CQ (`fake_shared_cq.ts`). */
export interface SharedCq {
  readonly source: ReadinessToken["source"];
  join(qp: FakeQp): number;
  leave(qp: FakeQp): void;
  /** A completion was queued on one of its QPs. */
  completed(): void;
}

/** A factory that records the QPs it made. */
export function fakeFactory(shared: SharedCq | null = null) {
  const made: FakeQp[] = [];
  return {
    made,
    factory: (o: BrpcRdmaOptions) => {
      const q = new FakeQp(o, shared);
      made.push(q);
      return Promise.resolve(q);
    },
  };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
