/**
 * The verbs side of brpc's RDMA mode (`transport/brpc_rdma/`): one connection's RC queue pair,
 * brought up without rdma_cm from the peer's hello (GID, LID, QP number; PSN 0, path MTU 1024,
 * ACK timeout 14, retry 7, no RNR retry — brpc's `BringUpQp`), its own completion channel and CQ
 * (send and receive completions), a registered block pool of `rq_size` receive blocks posted
 * before RTR and reposted as they drain, and the registered send slots.
 * ```
 *  recv MR  [ block 0 | block 1 | … | block rq-1 ]      wr_id = RECV_WR_BASE + block
 *  send MR  [ slot 0  | slot 1  | … | slot sq-4  ]      wr_id = slots freed (0: an ACK)
 * ```
 * The device context is opened once per device and kept for the process; everything else is
 * per connection and released by close().
 *
 * Threading: one JS thread; `wait` sleeps off-thread (nonblocking FFI / Worker).
 * @module
 */
import { VB_RECV_DESC, VB_SGE } from "../../ffi/layouts/helper.ts";
import {
  IBV_ACCESS,
  IBV_QP_ATTR_MASK as M,
  IBV_QPS,
  IBV_WC_WITH_IMM,
  IBV_WR,
} from "../../ffi/symbols/libibverbs.ts";
import { IBV_AH_ATTR, IBV_GLOBAL_ROUTE, IBV_QP_ATTR } from "../../ffi/layouts/verbs.ts";
import type { NetAddress } from "../tcp/tcp.ts";
import type { BrpcHello } from "../brpc_rdma/hello.ts";
import type { BrpcRdmaOptions } from "../brpc_rdma/options.ts";
import type { BrpcCompletionSink, BrpcQp } from "../brpc_rdma/qp_port.ts";
import type { Context } from "./context.ts";
import { type CompletionChannel, type CompletionQueue, wcStatusStr } from "./cq.ts";
import { listDevices, openDevice } from "./device.ts";
import type { MemoryRegion } from "./mr.ts";
import type { ProtectionDomain } from "./pd.ts";
import type { QueuePair } from "./qp.ts";
import { FULL, SendBatch } from "./send_batch.ts";
import { loadVerbs, NoRdmaError, type VerbsLib } from "./verbs_lib.ts";
import { WcReader } from "./wc_reader.ts";

/** Receive wr_ids start here (send wr_ids are slot counts, far below). */
const RECV_WR_BASE = 2 ** 40;
const POLL_MAX = 32;
/** brpc's QP settings (rdma_endpoint.cpp). */
const BRPC_QP = { pathMtu: 3, timeout: 14, retryCnt: 7, rnrRetry: 0, minRnrTimer: 0, hopLimit: 16 };

const contexts = new Map<string, Context>();
const TWO32 = 0x1_0000_0000;

/** Writes a u64 (< 2^53, as a number: no BigInt on the data path) little-endian. */
function setU64(d: DataView, off: number, v: number): void {
  const hi = Math.floor(v / TWO32);
  d.setUint32(off, v - hi * TWO32, true);
  d.setUint32(off + 4, hi, true);
}

/** The IPv4-mapped GID of `ip` ("::ffff:a.b.c.d"), or null when `ip` is not IPv4. */
function ipv4Gid(ip: string): Uint8Array | null {
  const m = /^(?:::ffff:)?(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  if (!m) return null;
  const g = new Uint8Array(16);
  g[10] = g[11] = 0xff;
  for (let i = 0; i < 4; i++) g[12 + i] = Number(m[i + 1]);
  return g;
}

const same = (a: Uint8Array, b: Uint8Array) => a.every((x, i) => x === b[i]);

/** The GID index of `gid` on `ctx`'s port, or -1. */
function findGid(ctx: Context, port: number, gid: Uint8Array): number {
  const n = ctx.queryPort(port).gidTblLen;
  for (let i = 0; i < n; i++) {
    try {
      if (same(ctx.queryGid(port, i), gid)) return i;
    } catch { /* empty entry */ }
  }
  return -1;
}

/** brpc's default GID: the last one whose interface id (bytes 8..15) is not zero. */
function lastGid(ctx: Context, port: number): number {
  for (let i = ctx.queryPort(port).gidTblLen - 1; i >= 0; i--) {
    try {
      if (ctx.queryGid(port, i).subarray(8).some((x) => x !== 0)) return i;
    } catch { /* empty entry */ }
  }
  throw new NoRdmaError(19, `${ctx.deviceName} port ${port} has no usable GID`);
}

function context(v: VerbsLib, name: string): Context {
  let c = contexts.get(name);
  if (c === undefined) contexts.set(name, c = openDevice(v, name));
  return c;
}

/** Picks the device and GID index: the options, else the device holding the local IPv4 GID. */
function pick(
  v: VerbsLib,
  o: BrpcRdmaOptions,
  local: NetAddress,
): { ctx: Context; gidIndex: number } {
  const want = ipv4Gid(local.host);
  const names = o.device !== undefined ? [o.device] : listDevices(v).map((d) => d.name);
  if (names.length === 0) throw new NoRdmaError(19, "no RDMA devices");
  if (o.device === undefined && want !== null) {
    for (const name of names) {
      const ctx = context(v, name);
      const i = findGid(ctx, o.port, want);
      if (i >= 0) return { ctx, gidIndex: o.gidIndex >= 0 ? o.gidIndex : i };
    }
  }
  const ctx = context(v, names[0]);
  if (o.gidIndex >= 0) return { ctx, gidIndex: o.gidIndex };
  const i = want === null ? -1 : findGid(ctx, o.port, want);
  return { ctx, gidIndex: i >= 0 ? i : lastGid(ctx, o.port) };
}

/** Opens a QP for one brpc RDMA connection (C_ALLOC_QPCQ / S_ALLOC_QPCQ). */
export async function openBrpcQp(o: BrpcRdmaOptions, local: NetAddress): Promise<BrpcQp> {
  const v = await loadVerbs();
  const { ctx, gidIndex } = pick(v, o, local);
  const port = ctx.queryPort(o.port);
  if (port.state !== "ACTIVE") {
    throw new NoRdmaError(100, `${ctx.deviceName} port ${o.port} is ${port.state}, not ACTIVE`);
  }
  return new VerbsBrpcQp(v, ctx, o, gidIndex, port.lid);
}

class VerbsBrpcQp implements BrpcQp {
  readonly deviceName: string;
  readonly gid: Uint8Array;
  readonly qpNum: number;
  readonly sqSize: number;
  readonly rqSize: number;
  readonly blockSize: number;
  /** The device port (brpc `-rdma_port`). */
  readonly port: number;
  readonly #v: VerbsLib;
  readonly #pd: ProtectionDomain;
  readonly #channel: CompletionChannel;
  readonly #cq: CompletionQueue;
  readonly #qp: QueuePair;
  readonly #recvMr: MemoryRegion;
  #sendMr: MemoryRegion | null = null;
  #slotSize = 0;
  readonly #wc = new WcReader(POLL_MAX);
  readonly #batch = new SendBatch(64, 64);
  readonly #rdesc: Uint8Array;
  readonly #rsge: Uint8Array;
  readonly #rdv: DataView;
  readonly #rsv: DataView;
  readonly #bad = new Uint32Array(1);
  #reposts = 0;
  #waiting = false;
  #closed = false;

  constructor(
    v: VerbsLib,
    ctx: Context,
    o: BrpcRdmaOptions,
    readonly gidIndex: number,
    readonly lid: number,
  ) {
    this.#v = v;
    this.deviceName = ctx.deviceName;
    this.gid = ctx.queryGid(o.port, gidIndex);
    this.blockSize = o.blockSize;
    this.#pd = ctx.allocPd();
    try {
      this.#channel = ctx.createCompChannel();
      this.#cq = ctx.createCq(o.sqSize + o.rqSize, this.#channel);
      this.#qp = this.#pd.createQp({
        sendCq: this.#cq,
        recvCq: this.#cq,
        maxSendWr: o.sqSize,
        maxRecvWr: o.rqSize,
        maxSendSge: 1,
        maxRecvSge: 1,
        maxInlineData: 0,
      });
      this.#recvMr = this.#pd.registerBuffer(
        new Uint8Array(o.rqSize * o.blockSize),
        IBV_ACCESS.LOCAL_WRITE,
      );
    } catch (e) {
      this.close();
      throw e;
    }
    this.qpNum = this.#qp.qpNum;
    this.sqSize = o.sqSize;
    this.rqSize = o.rqSize;
    const n = Math.min(o.rqSize, 256);
    this.#rdesc = new Uint8Array(n * VB_RECV_DESC.$size);
    this.#rsge = new Uint8Array(n * VB_SGE.$size);
    this.#rdv = new DataView(this.#rdesc.buffer);
    this.#rsv = new DataView(this.#rsge.buffer);
    this.port = o.port;
  }

  bringUp(remote: BrpcHello, slots: number, slotSize: number): void {
    this.#slotSize = slotSize;
    this.#sendMr = this.#pd.registerBuffer(
      new Uint8Array(slots * slotSize),
      IBV_ACCESS.LOCAL_WRITE,
    );
    this.#qp.bringUp((state, attr) => {
      const d = new DataView(attr.buffer, attr.byteOffset, attr.length);
      if (state === IBV_QPS.INIT) {
        d.setUint8(IBV_QP_ATTR.port_num, this.port);
        d.setUint32(IBV_QP_ATTR.qp_access_flags, IBV_ACCESS.REMOTE_WRITE, true);
        return M.PKEY_INDEX | M.PORT | M.ACCESS_FLAGS;
      }
      if (state === IBV_QPS.RTR) {
        // Called while the QP is in INIT: the receive blocks are posted before RTR, as in brpc.
        for (let b = 0; b < this.rqSize; b++) this.#repost(b);
        this.#flushReposts(true);
        d.setUint32(IBV_QP_ATTR.path_mtu, BRPC_QP.pathMtu, true);
        d.setUint32(IBV_QP_ATTR.dest_qp_num, remote.qpNum, true);
        d.setUint8(IBV_QP_ATTR.min_rnr_timer, BRPC_QP.minRnrTimer);
        const ah = IBV_QP_ATTR.ah_attr, grh = ah + IBV_AH_ATTR.grh;
        d.setUint16(ah + IBV_AH_ATTR.dlid, remote.lid, true);
        d.setUint8(ah + IBV_AH_ATTR.port_num, this.port);
        d.setUint8(ah + IBV_AH_ATTR.is_global, 1);
        attr.set(remote.gid, grh + IBV_GLOBAL_ROUTE.dgid);
        d.setUint8(grh + IBV_GLOBAL_ROUTE.sgid_index, this.gidIndex);
        d.setUint8(grh + IBV_GLOBAL_ROUTE.hop_limit, BRPC_QP.hopLimit);
        return M.AV | M.PATH_MTU | M.DEST_QPN | M.RQ_PSN | M.MAX_DEST_RD_ATOMIC | M.MIN_RNR_TIMER;
      }
      d.setUint8(IBV_QP_ATTR.timeout, BRPC_QP.timeout);
      d.setUint8(IBV_QP_ATTR.retry_cnt, BRPC_QP.retryCnt);
      d.setUint8(IBV_QP_ATTR.rnr_retry, BRPC_QP.rnrRetry);
      return M.SQ_PSN | M.TIMEOUT | M.RETRY_CNT | M.RNR_RETRY | M.MAX_QP_RD_ATOMIC;
    });
  }

  sendSlot(i: number): Uint8Array {
    const o = i * this.#slotSize;
    return this.#sendMr!.buffer.subarray(o, o + this.#slotSize);
  }

  stageSend(slot: number, len: number, imm: number, flags: number, wrId: number): void {
    const b = this.#batch;
    if (b.length === b.maxWr) this.postStaged();
    if (len > 0) {
      const mr = this.#sendMr!;
      b.sge(mr.address + slot * this.#slotSize, len, mr.lkey);
    }
    if (b.wr(IBV_WR.SEND_WITH_IMM, flags, wrId, 0, 0, imm) === FULL) {
      throw new Error("send batch full");
    }
  }

  postStaged(): number {
    const rc = this.#batch.post(this.#qp);
    this.#batch.reset();
    return rc;
  }

  #repost(block: number): void {
    const i = this.#reposts++;
    const d = this.#rdv, s = this.#rsv, mr = this.#recvMr;
    const od = i * VB_RECV_DESC.$size, os = i * VB_SGE.$size;
    setU64(d, od + VB_RECV_DESC.wr_id, RECV_WR_BASE + block);
    d.setUint32(od + VB_RECV_DESC.sge_index, i, true);
    d.setUint32(od + VB_RECV_DESC.num_sge, 1, true);
    setU64(s, os + VB_SGE.addr, mr.address + block * this.blockSize);
    s.setUint32(os + VB_SGE.length, this.blockSize, true);
    s.setUint32(os + VB_SGE.lkey, mr.lkey, true);
    if (this.#reposts * VB_RECV_DESC.$size === this.#rdesc.length) this.#flushReposts(true);
  }

  #flushReposts(fatal: boolean): number {
    const n = this.#reposts;
    this.#reposts = 0;
    if (n === 0) return 0;
    const rc = this.#qp.postRecv(this.#rdesc, this.#rsge, n, this.#bad);
    if (rc !== 0 && fatal) throw new Error(`ibv_post_recv failed (errno ${rc})`);
    return rc;
  }

  poll(sink: BrpcCompletionSink): number {
    if (this.#closed) return 0;
    const wc = this.#wc;
    const n = wc.poll(this.#cq);
    let failed = false;
    for (let i = 0; i < n; i++) {
      const id = wc.wrId(i), status = wc.status(i);
      if (status !== 0) failed = true;
      if (id >= RECV_WR_BASE) {
        const b = id - RECV_WR_BASE;
        const o = b * this.blockSize;
        const imm = (wc.wcFlags(i) & IBV_WC_WITH_IMM) !== 0 ? wc.imm(i) : 0;
        sink.onRecv(
          this.#recvMr.buffer.subarray(o, o + this.blockSize),
          wc.byteLen(i),
          imm,
          status,
        );
        if (status === 0) this.#repost(b);
      } else sink.onSend(id, status);
      if (this.#closed) return n;
    }
    if (!failed && this.#flushReposts(false) !== 0) return -5;
    return n;
  }

  arm(): void {
    if (!this.#closed) this.#cq.reqNotify(false);
  }

  async wait(timeoutMs: number): Promise<boolean> {
    if (this.#closed) return false;
    this.#waiting = true;
    try {
      return await this.#channel.waitEvent(timeoutMs);
    } finally {
      this.#waiting = false;
      if (this.#closed) this.#release();
    }
  }

  statusText(status: number): string {
    return wcStatusStr(this.#v, status);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#waiting) this.#release();
  }

  #release(): void {
    // The channel closes its CQ (and the CQ its QP); the PD closes the MRs.
    try {
      this.#channel?.close();
    } catch { /* already gone */ }
    try {
      this.#pd.close();
    } catch { /* already gone */ }
  }
}
