/**
 * A protection domain (`struct ibv_pd`): the parent of memory regions and queue pairs.
 * @module
 */
import { NativeHandle } from "../../ffi/handle.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { Context } from "./context.ts";
import { MemoryRegion } from "./mr.ts";
import { type QpInit, QueuePair } from "./qp.ts";
import { checkPtr, checkRc } from "./verbs_lib.ts";

/** A PD. Call from the thread that created it. */
export class ProtectionDomain extends NativeHandle {
  /** @internal use Context.allocPd(). */
  constructor(readonly context: Context, ptr: NonNullPtr) {
    const lib = context.lib;
    super(`ibv_pd on ${context.deviceName}`, ptr, context, (p) => {
      checkRc(lib, lib.verbs.symbols.ibv_dealloc_pd(p), "ibv_dealloc_pd", context.deviceName);
    });
  }

  /**
   * Registers `buffer` (`ibv_reg_mr`). The MR keeps `buffer` referenced until it is closed, so
   * the memory the NIC may touch is never collected while registered.
   */
  registerBuffer(buffer: Uint8Array, access: number): MemoryRegion {
    const lib = this.context.lib;
    const p = checkPtr(
      lib,
      lib.verbs.symbols.ibv_reg_mr(this.handle, lib.ffi.ptrOf(buffer), buffer.byteLength, access),
      "ibv_reg_mr",
      `${buffer.byteLength} bytes, access 0x${access.toString(16)}`,
    );
    return new MemoryRegion(this, p, buffer);
  }

  /** `ibv_create_qp`. Both CQs must belong to this PD's context. */
  createQp(init: QpInit): QueuePair {
    return QueuePair.create(this, init);
  }
}
