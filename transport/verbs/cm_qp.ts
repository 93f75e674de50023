/**
 * Bringing up a verbus-owned RC QP over an rdma_cm connection. rdma_cm supplies what only it
 * knows (port, P_Key, GIDs and path, the peer's QP number and PSN) through `rdma_init_qp_attr`;
 * verbus then sets the attributes it chooses deliberately (access flags, min RNR timer, ACK
 * timeout, retry and RNR retry counts) on top, and moves the QP itself through its one
 * bring-up path (INIT → RTR → RTS, `QueuePair.bringUp`) once the peer is known. Control path.
 * @module
 */
import { IBV_QP_ATTR } from "../../ffi/layouts/verbs.ts";
import { RDMA_CONN_PARAM } from "../../ffi/layouts/rdmacm.ts";
import { IBV_ACCESS, IBV_QP_ATTR_MASK as M, IBV_QPS } from "../../ffi/symbols/libibverbs.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import { cmCheck, type CmLib } from "./cm_lib.ts";
import type { QpBringUpSteps, QpTuning, QueuePair } from "./qp.ts";

/** Access of every verbus session QP: the peer writes into and reads from the region. */
export const SESSION_QP_ACCESS = IBV_ACCESS.LOCAL_WRITE | IBV_ACCESS.REMOTE_WRITE |
  IBV_ACCESS.REMOTE_READ;

/**
 * The bring-up steps of a QP connected through the rdma_cm id `id`: for each state, the
 * attributes rdma_cm computes (`rdma_init_qp_attr`), plus verbus' own choices from `tuning`.
 */
export function cmQpSteps(
  lib: CmLib,
  id: NonNullPtr,
  qpNum: number,
  tuning: QpTuning,
): QpBringUpSteps {
  const mask = new Int32Array(1);
  return (state, attr) => {
    const d = new DataView(attr.buffer, attr.byteOffset, attr.length);
    cmCheck(
      lib,
      lib.cm.symbols.rdma_init_qp_attr(id, attr, mask),
      "rdma_init_qp_attr",
      `QP ${qpNum} → state ${state}`,
    );
    let m = mask[0];
    if (state === IBV_QPS.INIT) {
      d.setUint32(IBV_QP_ATTR.qp_access_flags, SESSION_QP_ACCESS, true);
      m |= M.ACCESS_FLAGS;
    } else if (state === IBV_QPS.RTR) {
      d.setUint8(IBV_QP_ATTR.min_rnr_timer, tuning.minRnrTimer);
      m |= M.MIN_RNR_TIMER;
    } else if (state === IBV_QPS.RTS) {
      d.setUint8(IBV_QP_ATTR.timeout, tuning.timeout);
      d.setUint8(IBV_QP_ATTR.retry_cnt, tuning.retryCnt);
      d.setUint8(IBV_QP_ATTR.rnr_retry, tuning.rnrRetry);
      m |= M.TIMEOUT | M.RETRY_CNT | M.RNR_RETRY;
    }
    return m;
  };
}

/** Brings `qp` up (INIT → RTR → RTS) towards the peer of the CM id `id`. */
export function cmBringUp(lib: CmLib, id: NonNullPtr, qp: QueuePair, tuning: QpTuning): void {
  qp.bringUp(cmQpSteps(lib, id, qp.qpNum, tuning));
}

/**
 * A `struct rdma_conn_param` for a verbus-owned QP: its number, the private data (kept
 * referenced by the returned holder until the call that uses it returns), the RDMA READ depths
 * and the retry counts of `tuning`.
 */
export function connParam(
  lib: CmLib,
  qp: QueuePair,
  privateData: Uint8Array,
  tuning: QpTuning,
): { param: Uint8Array; keep: Uint8Array } {
  const param = new Uint8Array(RDMA_CONN_PARAM.$size);
  const d = new DataView(param.buffer);
  const keep = privateData.length ? privateData.slice() : new Uint8Array(1);
  d.setBigUint64(
    RDMA_CONN_PARAM.private_data,
    privateData.length ? lib.ffi.address(lib.ffi.ptrOf(keep)) : 0n,
    true,
  );
  d.setUint8(RDMA_CONN_PARAM.private_data_len, privateData.length);
  d.setUint8(RDMA_CONN_PARAM.responder_resources, tuning.maxRdAtomic);
  d.setUint8(RDMA_CONN_PARAM.initiator_depth, tuning.maxRdAtomic);
  d.setUint8(RDMA_CONN_PARAM.flow_control, 1);
  d.setUint8(RDMA_CONN_PARAM.retry_count, Math.min(7, tuning.retryCnt));
  d.setUint8(RDMA_CONN_PARAM.rnr_retry_count, Math.min(7, tuning.rnrRetry));
  d.setUint32(RDMA_CONN_PARAM.qp_num, qp.qpNum, true);
  return { param, keep };
}
