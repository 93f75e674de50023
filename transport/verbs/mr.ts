/**
 * A memory region (`struct ibv_mr`): lkey/rkey and the buffer it pins.
 * @module
 */
import { NativeHandle } from "../../ffi/handle.ts";
import { IBV_MR } from "../../ffi/layouts/verbs.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { ProtectionDomain } from "./pd.ts";
import { checkRc } from "./verbs_lib.ts";

/** A registered buffer. The buffer stays referenced until close(). */
export class MemoryRegion extends NativeHandle {
  /** Local key, for SGEs. */
  readonly lkey: number;
  /** Remote key, for the peer's one-sided operations. */
  readonly rkey: number;
  /** Start address of the registration. */
  readonly addr: bigint;
  /** The same address as a number (user-space addresses fit in 53 bits), for the data path. */
  readonly address: number;
  /** Length in bytes. */
  readonly length: number;
  #buffer: Uint8Array | null;

  /** @internal use ProtectionDomain.registerBuffer(). */
  constructor(pd: ProtectionDomain, ptr: NonNullPtr, buffer: Uint8Array) {
    const lib = pd.context.lib;
    super(`ibv_mr ${buffer.byteLength} B`, ptr, pd, (p) => {
      checkRc(lib, lib.verbs.symbols.ibv_dereg_mr(p), "ibv_dereg_mr", `${buffer.byteLength} bytes`);
    });
    this.#buffer = buffer;
    this.lkey = lib.ffi.readU32(ptr, IBV_MR.lkey);
    this.rkey = lib.ffi.readU32(ptr, IBV_MR.rkey);
    this.addr = lib.ffi.readU64(ptr, IBV_MR.addr);
    this.address = Number(this.addr);
    this.length = Number(lib.ffi.readU64(ptr, IBV_MR.length));
  }

  /** The registered buffer (owned by this MR while it is open). */
  get buffer(): Uint8Array {
    return this.#buffer ?? new Uint8Array(0);
  }

  protected override beforeDestroy(): void {
    // The buffer is released only after ibv_dereg_mr returns (destroy runs right after this
    // hook, synchronously, while the closure above still references `buffer`).
    this.#buffer = null;
  }
}
