/**
 * Data path: a preallocated completion buffer in the helper's `vb_wc` format and accessors that
 * read one field of one record without allocating.
 * @module
 */
import { VB_WC } from "../../ffi/layouts/helper.ts";
import { VB_MAX_POLL } from "../../ffi/symbols/helper.ts";
import type { CompletionQueue } from "./cq.ts";

const TWO32 = 0x1_0000_0000;

/** Reusable completion records. Owned by one thread. */
export class WcReader {
  /** max × vb_wc, written by the helper. */
  readonly buffer: Uint8Array;
  #view: DataView;

  constructor(readonly max: number) {
    if (max < 1 || max > VB_MAX_POLL) throw new RangeError(`max must be 1..${VB_MAX_POLL}`);
    this.buffer = new Uint8Array(max * VB_WC.$size);
    this.#view = new DataView(this.buffer.buffer);
  }

  /** Polls up to `max` completions from `cq` into the buffer; returns how many. */
  poll(cq: CompletionQueue): number {
    return cq.poll(this.buffer, this.max);
  }

  /** wr_id of record `i`. */
  wrId(i: number): number {
    const o = i * VB_WC.$size + VB_WC.wr_id;
    return this.#view.getUint32(o, true) + this.#view.getUint32(o + 4, true) * TWO32;
  }
  /** Status of record `i` (0 = success). */
  status(i: number): number {
    return this.#view.getUint32(i * VB_WC.$size + VB_WC.status, true);
  }
  /** IBV_WC_* opcode of record `i`. */
  opcode(i: number): number {
    return this.#view.getUint32(i * VB_WC.$size + VB_WC.opcode, true);
  }
  /** Bytes transferred (receives, reads). */
  byteLen(i: number): number {
    return this.#view.getUint32(i * VB_WC.$size + VB_WC.byte_len, true);
  }
  /** Immediate data in host order (0 when the completion carries none). */
  imm(i: number): number {
    return this.#view.getUint32(i * VB_WC.$size + VB_WC.imm, true);
  }
  /** Local QP number of record `i`. */
  qpNum(i: number): number {
    return this.#view.getUint32(i * VB_WC.$size + VB_WC.qp_num, true);
  }
  /** Vendor error of record `i` (meaningful when its status is not 0). */
  vendorErr(i: number): number {
    return this.#view.getUint32(i * VB_WC.$size + VB_WC.vendor_err, true);
  }
  /** IBV_WC_* flags of record `i`. */
  wcFlags(i: number): number {
    return this.#view.getUint32(i * VB_WC.$size + VB_WC.wc_flags, true);
  }
}
