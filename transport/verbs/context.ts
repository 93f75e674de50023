/**
 * An open RDMA device (`struct ibv_context`): queries, and the parent of PDs, completion
 * channels and CQs. Closing it closes every child first.
 * @module
 */
import { NativeHandle } from "../../ffi/handle.ts";
import { IBV_DEVICE_ATTR, IBV_PORT_ATTR } from "../../ffi/layouts/verbs.ts";
import { fixedCString } from "../../ffi/strings.ts";
import { IBV_LINK_LAYER, IBV_MTU_BYTES, IBV_PORT_STATE } from "../../ffi/symbols/libibverbs.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import { CompletionChannel, CompletionQueue } from "./cq.ts";
import { ProtectionDomain } from "./pd.ts";
import { checkPtr, checkRc, type VerbsLib } from "./verbs_lib.ts";

/** What `ibv_query_device` says, in the fields verbus uses. */
export interface DeviceAttr {
  fwVer: string;
  vendorId: number;
  vendorPartId: number;
  hwVer: number;
  maxQp: number;
  maxQpWr: number;
  maxSge: number;
  maxCq: number;
  maxCqe: number;
  maxMr: number;
  maxPd: number;
  maxMrSize: bigint;
  physPortCnt: number;
}

/** What `ibv_query_port` says. */
export interface PortAttr {
  state: string;
  maxMtu: number;
  activeMtu: number;
  gidTblLen: number;
  lid: number;
  linkLayer: string;
  maxMsgSize: number;
}

/** An open device. Call from the thread that opened it. */
export class Context extends NativeHandle {
  /** @internal use openDevice(). */
  constructor(readonly lib: VerbsLib, ptr: NonNullPtr, readonly deviceName: string) {
    super(`ibv_context ${deviceName}`, ptr, null, (p) => {
      checkRc(
        lib,
        lib.verbs.symbols.ibv_close_device(p),
        "ibv_close_device",
        `close ${deviceName}`,
      );
    });
  }

  /** `ibv_query_device`. */
  query(): DeviceAttr {
    const b = new Uint8Array(IBV_DEVICE_ATTR.$size);
    checkRc(
      this.lib,
      this.lib.verbs.symbols.ibv_query_device(this.handle, b),
      "ibv_query_device",
      this.deviceName,
    );
    const d = new DataView(b.buffer);
    const A = IBV_DEVICE_ATTR;
    return {
      fwVer: fixedCString(b.subarray(A.fw_ver, A.fw_ver + 64)),
      vendorId: d.getUint32(A.vendor_id, true),
      vendorPartId: d.getUint32(A.vendor_part_id, true),
      hwVer: d.getUint32(A.hw_ver, true),
      maxQp: d.getInt32(A.max_qp, true),
      maxQpWr: d.getInt32(A.max_qp_wr, true),
      maxSge: d.getInt32(A.max_sge, true),
      maxCq: d.getInt32(A.max_cq, true),
      maxCqe: d.getInt32(A.max_cqe, true),
      maxMr: d.getInt32(A.max_mr, true),
      maxPd: d.getInt32(A.max_pd, true),
      maxMrSize: d.getBigUint64(A.max_mr_size, true),
      physPortCnt: d.getUint8(A.phys_port_cnt),
    };
  }

  /** `ibv_query_port` (through the helper: it is static inline in verbs.h). */
  queryPort(port: number): PortAttr {
    const b = new Uint8Array(IBV_PORT_ATTR.$size);
    checkRc(
      this.lib,
      this.lib.helper.lib.symbols.vb_query_port(this.handle, port, b),
      "ibv_query_port",
      `${this.deviceName} port ${port}`,
    );
    const d = new DataView(b.buffer);
    const P = IBV_PORT_ATTR;
    return {
      state: IBV_PORT_STATE[d.getUint32(P.state, true)] ?? `state ${d.getUint32(P.state, true)}`,
      maxMtu: IBV_MTU_BYTES[d.getUint32(P.max_mtu, true)] ?? 0,
      activeMtu: IBV_MTU_BYTES[d.getUint32(P.active_mtu, true)] ?? 0,
      gidTblLen: d.getInt32(P.gid_tbl_len, true),
      lid: d.getUint16(P.lid, true),
      linkLayer: IBV_LINK_LAYER[d.getUint8(P.link_layer)] ?? "unknown",
      maxMsgSize: d.getUint32(P.max_msg_sz, true),
    };
  }

  /** `ibv_query_gid`: the 16 raw bytes of GID `index` on `port`. */
  queryGid(port: number, index: number): Uint8Array {
    const gid = new Uint8Array(16);
    checkRc(
      this.lib,
      this.lib.verbs.symbols.ibv_query_gid(this.handle, port, index, gid),
      "ibv_query_gid",
      `${this.deviceName} port ${port} index ${index}`,
    );
    return gid;
  }

  /** `ibv_alloc_pd`. The PD is a child of this context. */
  allocPd(): ProtectionDomain {
    const p = checkPtr(
      this.lib,
      this.lib.verbs.symbols.ibv_alloc_pd(this.handle),
      "ibv_alloc_pd",
      this.deviceName,
    );
    return new ProtectionDomain(this, p);
  }

  /** `ibv_create_comp_channel`. */
  createCompChannel(): CompletionChannel {
    const p = checkPtr(
      this.lib,
      this.lib.verbs.symbols.ibv_create_comp_channel(this.handle),
      "ibv_create_comp_channel",
      this.deviceName,
    );
    return new CompletionChannel(this, p);
  }

  /** `ibv_create_cq` with `cqe` entries, optionally bound to a completion channel. */
  createCq(cqe: number, channel: CompletionChannel | null = null, compVector = 0): CompletionQueue {
    const p = checkPtr(
      this.lib,
      this.lib.verbs.symbols.ibv_create_cq(
        this.handle,
        cqe,
        null,
        channel ? channel.handle : null,
        compVector,
      ),
      "ibv_create_cq",
      `${this.deviceName}, ${cqe} entries`,
    );
    return new CompletionQueue(this, p, channel);
  }
}

/** Formats a raw GID like `fe80:0000:...` (as `ibv_devinfo -v` does). */
export function formatGid(gid: Uint8Array): string {
  const parts: string[] = [];
  for (let i = 0; i < 16; i += 2) {
    parts.push(((gid[i] << 8) | gid[i + 1]).toString(16).padStart(4, "0"));
  }
  return parts.join(":");
}
