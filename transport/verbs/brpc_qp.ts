/**
 * The verbs side of brpc's RDMA mode (`transport/brpc_rdma/`): one connection's RC queue pair,
 * brought up without rdma_cm from the peer's hello (GID, LID, QP number; PSN 0, path MTU 1024,
 * ACK timeout 14, retry 7, no RNR retry — brpc's `BringUpQp`), on the process's verbs hub (one
 * completion channel and ONE CQ for every QP of the process on the device, verbus sessions and
 * brpc connections alike: `hub.ts`), with its own PD, a registered block pool of `rq_size`
 * receive blocks posted before RTR and reposted as they drain, and the registered send region
 * (the connection's output ring, `brpc_rdma/send_ring.ts`: frames are encoded into it and sent
 * from where they lie).
 * ```
 *  recv MR  [ block 0 | block 1 | … | block rq-1 ]      wr_id = RECV_WR_BASE + block
 *  send MR  [ ring of (sq-3) peer blocks + slack   ]      wr_id = sends freed (0: an ACK)
 * ```
 * QPs are prepared ahead (`brpc_device.ts`: created, registered, joined to the hub), so a
 * handshake takes one and only brings it up. Completions reach the connection during the hub's
 * drain (whoever drains: the progress engine, or the connection's own loop) through
 * {@link BrpcQp.attach}.
 *
 * Threading: one JS thread; `wait` sleeps off-thread (the hub's one parked wait).
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
import { RESERVED_WRS } from "../brpc_rdma/hello.ts";
import { type BrpcRdmaOptions, MAX_SEND_SLOT } from "../brpc_rdma/options.ts";
import { sendRingBytes } from "../brpc_rdma/send_ring.ts";
import type { BrpcCompletionSink, BrpcQp } from "../brpc_rdma/qp_port.ts";
import type { ReadinessToken } from "../readiness.ts";
import {
  type BrpcDevicePick,
  pickBrpcDevice,
  prepareBrpcDevice,
  refillPool,
  takePrepared,
} from "./brpc_device.ts";
import { wcStatusStr } from "./cq.ts";
import type { HubMember } from "./hub.ts";
import type { MemoryRegion } from "./mr.ts";
import type { ProtectionDomain } from "./pd.ts";
import type { QueuePair } from "./qp.ts";
import { FULL, SendBatch } from "./send_batch.ts";
import type { WcReader } from "./wc_reader.ts";

/** Receive wr_ids start here (send wr_ids are slot counts, far below). */
const RECV_WR_BASE = 2 ** 40;
/** brpc's QP settings (rdma_endpoint.cpp). */
const BRPC_QP = { pathMtu: 3, timeout: 14, retryCnt: 7, rnrRetry: 0, minRnrTimer: 0, hopLimit: 16 };

const TWO32 = 0x1_0000_0000;

/** Writes a u64 (< 2^53, as a number: no BigInt on the data path) little-endian. */
function setU64(d: DataView, off: number, v: number): void {
  const hi = Math.floor(v / TWO32);
  d.setUint32(off, v - hi * TWO32, true);
  d.setUint32(off + 4, hi, true);
}

/** Opens a QP for one brpc RDMA connection (C_ALLOC_QPCQ / S_ALLOC_QPCQ): a prepared one if any. */
export async function openBrpcQp(o: BrpcRdmaOptions, local: NetAddress): Promise<BrpcQp> {
  const pick = await pickBrpcDevice(o, local.host);
  const shape = { sqSize: o.sqSize, rqSize: o.rqSize, blockSize: o.blockSize };
  const make = () => new VerbsBrpcQp(pick, o);
  const qp = takePrepared<VerbsBrpcQp>(pick, shape) ?? make();
  qp.settled = () => refillPool(pick, shape, o.preparedQps, make);
  qp.polling = o.usePolling === "auto" ? !pick.software : o.usePolling;
  return qp;
}

/**
 * Opens the device for `o` now (libibverbs, context, hub, GID for `host`) and prepares
 * `o.preparedQps` QPs. Resolves with the device name once both are done; rejects with
 * NoRdmaError when this host cannot.
 */
export async function prepareBrpcQps(o: BrpcRdmaOptions, host: string): Promise<string> {
  const pick = await prepareBrpcDevice(o, host, (p) => new VerbsBrpcQp(p, o));
  return pick.hub.ctx.deviceName;
}

class VerbsBrpcQp implements BrpcQp, HubMember {
  readonly deviceName: string;
  readonly gid: Uint8Array;
  readonly lid: number;
  readonly gidIndex: number;
  readonly qpNum: number;
  readonly sqSize: number;
  readonly rqSize: number;
  readonly blockSize: number;
  readonly readiness: ReadinessToken;
  readonly ownImm = true;
  announce = false;
  /** Set by {@link openBrpcQp} from the options and the device (see `BrpcQp.polling`). */
  polling = true;
  /** Called once when the handshake that took it ended (established: attached; or closed). */
  settled: (() => void) | null = null;
  /** The device port (brpc `-rdma_port`). */
  readonly port: number;
  readonly #pick: BrpcDevicePick;
  readonly #pd: ProtectionDomain;
  readonly #qp: QueuePair;
  readonly #recvMr: MemoryRegion;
  #sendMr: MemoryRegion;
  readonly #batch = new SendBatch(64, 64);
  readonly #rdesc: Uint8Array;
  readonly #rsge: Uint8Array;
  readonly #rdv: DataView;
  readonly #rsv: DataView;
  readonly #bad = new Uint32Array(1);
  #sink: BrpcCompletionSink | null = null;
  /**
   * Completions dispatched before a sink was attached (the QP is RTR once brought up, and another
   * member's drain of the shared CQ may reap its first receives before the connection exists):
   * kept, blocks not reposted, and handed over at {@link attach}. Bounded by the queues' depths.
   */
  #early: { recv: boolean; wrId: number; len: number; imm: number; status: number }[] | null = null;
  #reposts = 0;
  #joined = false;
  #closed = false;

  constructor(pick: BrpcDevicePick, o: BrpcRdmaOptions) {
    const hub = pick.hub;
    this.#pick = pick;
    this.deviceName = hub.ctx.deviceName;
    this.gid = pick.gid;
    this.lid = pick.lid;
    this.gidIndex = pick.gidIndex;
    this.port = pick.port;
    this.blockSize = o.blockSize;
    this.sqSize = o.sqSize;
    this.rqSize = o.rqSize;
    // The send ring sized for a peer announcing the same block size as ours (brpc's default);
    // a bigger one gets it registered again at bring-up.
    const sendBytes = sendRingBytes(o.sqSize - RESERVED_WRS, Math.min(o.blockSize, MAX_SEND_SLOT));
    this.#pd = hub.ctx.allocPd();
    try {
      this.#qp = this.#pd.createQp({
        sendCq: hub.cq,
        recvCq: hub.cq,
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
      this.#sendMr = this.#pd.registerBuffer(
        new Uint8Array(sendBytes),
        IBV_ACCESS.LOCAL_WRITE,
      );
      this.qpNum = this.#qp.qpNum;
      this.readiness = { source: hub, token: hub.join(this, this.#cqes) };
      this.#joined = true;
    } catch (e) {
      this.close();
      throw e;
    }
    const n = Math.min(o.rqSize, 256);
    this.#rdesc = new Uint8Array(n * VB_RECV_DESC.$size);
    this.#rsge = new Uint8Array(n * VB_SGE.$size);
    this.#rdv = new DataView(this.#rdesc.buffer);
    this.#rsv = new DataView(this.#rsge.buffer);
  }

  /** Completions it may have outstanding in the hub's CQ. */
  get #cqes(): number {
    return this.sqSize + this.rqSize;
  }

  attach(sink: BrpcCompletionSink, announce: boolean): void {
    this.#sink = sink;
    this.announce = announce;
    const early = this.#early;
    this.#early = null;
    for (const c of early ?? []) {
      if (this.#closed) break;
      if (!c.recv) sink.onSend(c.wrId, c.status);
      else this.#received(sink, c.wrId, c.len, c.imm, c.status);
    }
    this.#settle();
  }

  #settle(): void {
    const f = this.settled;
    this.settled = null;
    f?.();
  }

  bringUp(remote: BrpcHello, sendBytes: number): void {
    if (sendBytes > this.#sendMr.buffer.length) {
      const old = this.#sendMr;
      this.#sendMr = this.#pd.registerBuffer(new Uint8Array(sendBytes), IBV_ACCESS.LOCAL_WRITE);
      old.close();
    }
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

  get sendRegion(): Uint8Array {
    return this.#sendMr.buffer;
  }

  stageSend(offset: number, len: number, imm: number, flags: number, wrId: number): void {
    const b = this.#batch;
    if (b.length === b.maxWr) this.postStaged();
    if (len > 0) {
      const mr = this.#sendMr;
      b.sge(mr.address + offset, len, mr.lkey);
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

  flushReceives(): number {
    return this.#closed ? 0 : this.#flushReposts(false);
  }

  /** Hub: a send completion of this QP. */
  onSend(wc: WcReader, k: number): void {
    if (this.#closed) return;
    const sink = this.#sink;
    if (sink !== null) sink.onSend(wc.wrId(k), wc.status(k));
    else {
      const c = { recv: false, wrId: wc.wrId(k), len: 0, imm: 0, status: wc.status(k) };
      (this.#early ??= []).push(c);
    }
  }

  /** Hub: a receive completion of this QP (its block is reposted after the sink's call). */
  onReceive(status: number, wc: WcReader, k: number): void {
    if (this.#closed) return;
    const imm = (wc.wcFlags(k) & IBV_WC_WITH_IMM) !== 0 ? wc.imm(k) : 0;
    const sink = this.#sink;
    if (sink !== null) this.#received(sink, wc.wrId(k), wc.byteLen(k), imm, status);
    else {(this.#early ??= []).push({
        recv: true,
        wrId: wc.wrId(k),
        len: wc.byteLen(k),
        imm,
        status,
      });}
  }

  #received(
    sink: BrpcCompletionSink,
    wrId: number,
    len: number,
    imm: number,
    status: number,
  ): void {
    const b = wrId - RECV_WR_BASE;
    const o = b * this.blockSize;
    sink.onRecv(this.#recvMr.buffer.subarray(o, o + this.blockSize), len, imm, status);
    if (status === 0 && !this.#closed) this.#repost(b);
  }

  /**
   * Own loop (no driver set): drains the hub (every member's completions go to its sink) and
   * reposts this QP's freed blocks. A block another connection's drain freed is reposted, and its
   * credit returned, at this connection's next poll — at most its wait's timeout later.
   */
  poll(sink: BrpcCompletionSink): number {
    if (this.#closed) return 0;
    if (this.#sink === null) this.attach(sink, false);
    const n = this.#pick.hub.drain();
    if (this.#flushReposts(false) !== 0) return -5;
    return n;
  }

  arm(): void {}

  wait(timeoutMs: number): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    return this.#pick.hub.waitOwn(timeoutMs);
  }

  statusText(status: number): string {
    return wcStatusStr(this.#pick.lib, status);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#sink = null;
    this.#settle();
    // Later completions of this QP are the hub's strays; the PD closes its QP and MRs.
    if (this.#joined) this.#pick.hub.leave(this, this.#cqes);
    this.#joined = false;
    try {
      this.#pd.close();
    } catch { /* already gone */ }
  }
}
