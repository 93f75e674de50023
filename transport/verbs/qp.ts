/**
 * A queue pair (`struct ibv_qp`): creation, its one bring-up path RESET → INIT → RTR → RTS
 * (attributes from rdma_cm, cm_qp.ts, or given directly, {@link directQpSteps}), and the batched
 * post calls through the helper.
 * @module
 */
import { NativeError, VerbusError } from "../../errors.ts";
import { NativeHandle } from "../../ffi/handle.ts";
import {
  IBV_AH_ATTR,
  IBV_GLOBAL_ROUTE,
  IBV_QP,
  IBV_QP_ATTR,
  IBV_QP_CAP,
  IBV_QP_INIT_ATTR,
} from "../../ffi/layouts/verbs.ts";
import { IBV_QP_ATTR_MASK as M, IBV_QPS, IBV_QPT } from "../../ffi/symbols/libibverbs.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { CompletionQueue } from "./cq.ts";
import type { ProtectionDomain } from "./pd.ts";
import { checkPtr, checkRc } from "./verbs_lib.ts";

/** QP creation parameters. */
export interface QpInit {
  sendCq: CompletionQueue;
  recvCq: CompletionQueue;
  maxSendWr: number;
  maxRecvWr: number;
  maxSendSge?: number;
  maxRecvSge?: number;
  maxInlineData?: number;
  /** Signal every send WR (default false: the caller signals every N). */
  sqSigAll?: boolean;
}

/** Where the remote QP is (RTR needs it). */
export interface QpRemote {
  qpNum: number;
  psn: number;
  gid: Uint8Array;
  lid?: number;
}

/** QP settings verbus chooses deliberately (doctor reports them). */
export interface QpTuning {
  /** Path MTU enum (IBV_MTU_1024 = 3). */
  pathMtu: number;
  /** Local ACK timeout: 4.096 µs × 2^timeout (14 ≈ 67 ms, brpc's default). */
  timeout: number;
  /** Transport retries (7 = brpc's default). */
  retryCnt: number;
  /** RNR retries (7 = infinite). */
  rnrRetry: number;
  /** Min RNR NAK timer enum (12 ≈ 0.64 ms). */
  minRnrTimer: number;
  /** Outstanding RDMA READs in each direction. */
  maxRdAtomic: number;
}

/**
 * Queue sizes verbus asks for per session QP (doctor reports them). The receive queue only
 * catches the peer's kicks (zero-length receives for WRITE_WITH_IMM); `rqDepth` plus
 * `signaledBudget` is the session's share of the process's one CQ (32,767 entries on rxe:
 * 682 sessions).
 */
export const VERBS_QP_CAPS = Object.freeze({
  sqDepth: 512,
  rqDepth: 16,
  signaledBudget: 32,
  maxSge: 4,
  maxInline: 128,
});

/** The states {@link QueuePair.bringUp} moves a QP through, in order. */
export const BRING_UP_STATES = [IBV_QPS.INIT, IBV_QPS.RTR, IBV_QPS.RTS] as const;
const STATE_NAME: Record<number, string> = {
  [IBV_QPS.RESET]: "RESET",
  [IBV_QPS.INIT]: "INIT",
  [IBV_QPS.RTR]: "RTR",
  [IBV_QPS.RTS]: "RTS",
};

/**
 * The attributes of one bring-up step: fills `attr` (an `ibv_qp_attr`, zeroed, `qp_state`
 * already set to `state`) and returns the attribute mask (IBV_QP_STATE is added).
 */
export type QpBringUpSteps = (state: number, attr: Uint8Array) => number;

/** The defaults verbus uses. */
export const DEFAULT_QP_TUNING: Readonly<QpTuning> = Object.freeze({
  pathMtu: 3,
  timeout: 14,
  retryCnt: 7,
  rnrRetry: 7,
  minRnrTimer: 12,
  maxRdAtomic: 16,
});

/** An RC queue pair. Call from the thread that created it. */
export class QueuePair extends NativeHandle {
  /** The QP number the peer addresses. */
  readonly qpNum: number;
  /** The capabilities the provider actually granted. */
  readonly cap: { maxSendWr: number; maxRecvWr: number; maxInlineData: number };
  readonly #pd: ProtectionDomain;
  /** Preallocated attr buffer for modify (setup path). */
  readonly #attr = new Uint8Array(IBV_QP_ATTR.$size);
  #broughtUp = false;
  #state: number = IBV_QPS.RESET;

  private constructor(
    pd: ProtectionDomain,
    ptr: NonNullPtr,
    cap: QueuePair["cap"],
    cqs: CompletionQueue[],
  ) {
    const lib = pd.context.lib;
    super(`ibv_qp on ${pd.context.deviceName}`, ptr, [pd, ...cqs], (p) => {
      checkRc(lib, lib.verbs.symbols.ibv_destroy_qp(p), "ibv_destroy_qp", pd.context.deviceName);
    });
    this.#pd = pd;
    this.qpNum = lib.ffi.readU32(ptr, IBV_QP.qp_num);
    this.cap = cap;
  }

  /** @internal use ProtectionDomain.createQp(). */
  static create(pd: ProtectionDomain, init: QpInit): QueuePair {
    const lib = pd.context.lib;
    const b = new Uint8Array(IBV_QP_INIT_ATTR.$size);
    const d = new DataView(b.buffer);
    const a = lib.ffi.address(init.sendCq.handle), r = lib.ffi.address(init.recvCq.handle);
    d.setBigUint64(IBV_QP_INIT_ATTR.send_cq, a, true);
    d.setBigUint64(IBV_QP_INIT_ATTR.recv_cq, r, true);
    const cap = IBV_QP_INIT_ATTR.cap;
    d.setUint32(cap + IBV_QP_CAP.max_send_wr, init.maxSendWr, true);
    d.setUint32(cap + IBV_QP_CAP.max_recv_wr, init.maxRecvWr, true);
    d.setUint32(cap + IBV_QP_CAP.max_send_sge, init.maxSendSge ?? 4, true);
    d.setUint32(cap + IBV_QP_CAP.max_recv_sge, init.maxRecvSge ?? 1, true);
    d.setUint32(cap + IBV_QP_CAP.max_inline_data, init.maxInlineData ?? 64, true);
    d.setUint32(IBV_QP_INIT_ATTR.qp_type, IBV_QPT.RC, true);
    d.setInt32(IBV_QP_INIT_ATTR.sq_sig_all, init.sqSigAll ? 1 : 0, true);
    const p = checkPtr(
      lib,
      lib.verbs.symbols.ibv_create_qp(pd.handle, b),
      "ibv_create_qp",
      `RC QP, ${init.maxSendWr} send / ${init.maxRecvWr} recv WRs`,
    );
    // ibv_create_qp writes back the granted capabilities.
    return new QueuePair(pd, p, {
      maxSendWr: d.getUint32(cap + IBV_QP_CAP.max_send_wr, true),
      maxRecvWr: d.getUint32(cap + IBV_QP_CAP.max_recv_wr, true),
      maxInlineData: d.getUint32(cap + IBV_QP_CAP.max_inline_data, true),
    }, [init.sendCq, init.recvCq]);
  }

  /** The QP's current state as the kernel last reported it (reads `ibv_qp.state`). */
  get state(): number {
    return this.#pd.context.lib.ffi.readU32(this.handle, IBV_QP.state);
  }

  #modify(mask: number, what: string): void {
    const lib = this.#pd.context.lib;
    checkRc(
      lib,
      lib.verbs.symbols.ibv_modify_qp(this.handle, this.#attr, mask),
      "ibv_modify_qp",
      what,
      { qpNum: this.qpNum },
    );
  }

  /**
   * The one way a QP becomes usable: RESET → INIT → RTR → RTS, each step once and in this
   * order, with the attributes `steps` gives for each (see {@link directQpSteps} and
   * cm_qp.ts). Throws a NativeError naming the failing step; a second call throws FABRIC.
   */
  bringUp(steps: QpBringUpSteps): void {
    if (this.#broughtUp) {
      throw new VerbusError("FABRIC", `QP ${this.qpNum} was already brought up`);
    }
    this.#broughtUp = true;
    const d = new DataView(this.#attr.buffer);
    for (const state of BRING_UP_STATES) {
      this.#attr.fill(0);
      d.setUint32(IBV_QP_ATTR.qp_state, state, true);
      const mask = steps(state, this.#attr);
      this.#modify(mask | M.STATE, `${STATE_NAME[this.#state]} → ${STATE_NAME[state]}`);
      this.#state = state;
    }
  }

  /** Moves the QP to ERR (flushes outstanding WRs). */
  toError(): void {
    this.#attr.fill(0);
    new DataView(this.#attr.buffer).setUint32(IBV_QP_ATTR.qp_state, IBV_QPS.ERR, true);
    this.#modify(M.STATE, "→ ERR");
  }

  /**
   * Posts `n` send WRs from `descs` (n × vb_send_desc) and `sges` (vb_sge array) with one
   * doorbell. Returns 0, or the errno; `badIndex[0]` then names the first WR not posted.
   * Data path: the caller owns all three buffers and keeps them alive until completion.
   */
  postSend(descs: Uint8Array, sges: Uint8Array, n: number, badIndex: Uint32Array): number {
    return this.#pd.context.lib.helper.lib.symbols.vb_post_send(
      this.handle,
      descs,
      sges,
      n,
      badIndex,
    );
  }

  /** Posts `n` receive WRs (n × vb_recv_desc). Same contract as {@link postSend}. */
  postRecv(descs: Uint8Array, sges: Uint8Array, n: number, badIndex: Uint32Array): number {
    return this.#pd.context.lib.helper.lib.symbols.vb_post_recv(
      this.handle,
      descs,
      sges,
      n,
      badIndex,
    );
  }

  /** Throws a NativeError for a failed post (for callers that treat it as fatal). */
  static postError(fn: "ibv_post_send" | "ibv_post_recv", rc: number, bad: number): NativeError {
    return new NativeError(fn, rc, `work request ${bad} was not posted`);
  }
}

/** Where a directly connected QP's peer is, and how to reach it (no rdma_cm). */
export interface DirectQpPeer {
  readonly remote: QpRemote;
  /** Local port (1-based). */
  readonly port: number;
  /** Local GID index (RoCE: global route). */
  readonly sgidIndex: number;
  /** My send PSN (the peer's `remote.psn` for me). */
  readonly psn: number;
  /** Access flags of the QP. */
  readonly access: number;
  readonly tuning?: QpTuning;
}

/** Bring-up steps of a QP connected without rdma_cm (QP numbers and GIDs exchanged directly). */
export function directQpSteps(peer: DirectQpPeer): QpBringUpSteps {
  const tuning = peer.tuning ?? DEFAULT_QP_TUNING;
  return (state, attr) => {
    const d = new DataView(attr.buffer, attr.byteOffset, attr.length);
    if (state === IBV_QPS.INIT) {
      d.setUint16(IBV_QP_ATTR.pkey_index, 0, true);
      d.setUint8(IBV_QP_ATTR.port_num, peer.port);
      d.setUint32(IBV_QP_ATTR.qp_access_flags, peer.access, true);
      return M.PKEY_INDEX | M.PORT | M.ACCESS_FLAGS;
    }
    if (state === IBV_QPS.RTR) {
      const { remote } = peer;
      d.setUint32(IBV_QP_ATTR.path_mtu, tuning.pathMtu, true);
      d.setUint32(IBV_QP_ATTR.dest_qp_num, remote.qpNum, true);
      d.setUint32(IBV_QP_ATTR.rq_psn, remote.psn, true);
      d.setUint8(IBV_QP_ATTR.max_dest_rd_atomic, tuning.maxRdAtomic);
      d.setUint8(IBV_QP_ATTR.min_rnr_timer, tuning.minRnrTimer);
      const ah = IBV_QP_ATTR.ah_attr;
      d.setUint16(ah + IBV_AH_ATTR.dlid, remote.lid ?? 0, true);
      d.setUint8(ah + IBV_AH_ATTR.port_num, peer.port);
      d.setUint8(ah + IBV_AH_ATTR.is_global, 1);
      attr.set(remote.gid.subarray(0, 16), ah + IBV_AH_ATTR.grh + IBV_GLOBAL_ROUTE.dgid);
      d.setUint8(ah + IBV_AH_ATTR.grh + IBV_GLOBAL_ROUTE.sgid_index, peer.sgidIndex);
      d.setUint8(ah + IBV_AH_ATTR.grh + IBV_GLOBAL_ROUTE.hop_limit, 1);
      return M.AV | M.PATH_MTU | M.DEST_QPN | M.RQ_PSN | M.MAX_DEST_RD_ATOMIC | M.MIN_RNR_TIMER;
    }
    d.setUint32(IBV_QP_ATTR.sq_psn, peer.psn, true);
    d.setUint8(IBV_QP_ATTR.timeout, tuning.timeout);
    d.setUint8(IBV_QP_ATTR.retry_cnt, tuning.retryCnt);
    d.setUint8(IBV_QP_ATTR.rnr_retry, tuning.rnrRetry);
    d.setUint8(IBV_QP_ATTR.max_rd_atomic, tuning.maxRdAtomic);
    return M.SQ_PSN | M.TIMEOUT | M.RETRY_CNT | M.RNR_RETRY | M.MAX_QP_RD_ATOMIC;
  };
}
