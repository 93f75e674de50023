/**
 * RDMA devices: listing them and opening one. `ibv_get_device_list` returns NULL with ENOSYS
 * when the kernel has no RDMA support: that is reported as {@link NoRdmaError}, never a crash,
 * and `ibv_free_device_list` is never called with NULL (it crashes both runtimes).
 * @module
 */
import { errnoName } from "../../errors.ts";
import { errno } from "../../ffi/libc.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import { Context } from "./context.ts";
import { checkPtr, NoRdmaError, type VerbsLib } from "./verbs_lib.ts";

/** One RDMA device as listed by libibverbs. */
export interface DeviceInfo {
  /** Kernel name, e.g. "rxe0". */
  readonly name: string;
  /** Node GUID as 16 hex digits (network order as printed by ibv_devices). */
  readonly guid: string;
}

/** Why there may be no devices, in words a person can act on. */
export function noRdmaReason(e: number): string {
  if (e === 38) return "no RDMA support in this kernel (ibv_get_device_list: ENOSYS)";
  if (e === 2) return "no RDMA devices (ibv_get_device_list: ENOENT; is ib_uverbs loaded?)";
  if (e === 13 || e === 1) return `no permission to open RDMA devices (${errnoName(e)})`;
  return `ibv_get_device_list failed with ${errnoName(e)}`;
}

/** Calls `fn` with the live device list and frees it after; NULL → {@link NoRdmaError}. */
function withDeviceList<T>(v: VerbsLib, fn: (list: NonNullPtr, n: number) => T): T {
  const count = new Int32Array(1);
  const list = v.verbs.symbols.ibv_get_device_list(count);
  if (list === null) {
    const e = errno(v.libc);
    throw new NoRdmaError(e, noRdmaReason(e));
  }
  try {
    return fn(list, count[0]);
  } finally {
    v.verbs.symbols.ibv_free_device_list(list);
  }
}

/** Lists RDMA devices. Empty array when the kernel has RDMA but no device; throws NoRdmaError otherwise. */
export function listDevices(v: VerbsLib): DeviceInfo[] {
  return withDeviceList(v, (list, n) => {
    const out: DeviceInfo[] = [];
    for (let i = 0; i < n; i++) {
      const dev = v.ffi.readPtr(list, i * 8);
      if (dev === null) break;
      const name = v.verbs.symbols.ibv_get_device_name(dev);
      const guid = BigInt(v.verbs.symbols.ibv_get_device_guid(dev));
      // __be64 read as little-endian u64: swap to print in network order.
      const be = new DataView(new ArrayBuffer(8));
      be.setBigUint64(0, guid, true);
      out.push({
        name: name === null ? `device${i}` : v.ffi.cstring(name),
        guid: be.getBigUint64(0, false).toString(16).padStart(16, "0"),
      });
    }
    return out;
  });
}

/** Opens the device called `name` (or the first one). The caller owns the Context. */
export function openDevice(v: VerbsLib, name?: string): Context {
  return withDeviceList(v, (list, n) => {
    const names: string[] = [];
    for (let i = 0; i < n; i++) {
      const dev = v.ffi.readPtr(list, i * 8);
      if (dev === null) break;
      const np = v.verbs.symbols.ibv_get_device_name(dev);
      const devName = np === null ? "" : v.ffi.cstring(np);
      names.push(devName);
      if (name === undefined || name === devName) {
        const ctx = checkPtr(
          v,
          v.verbs.symbols.ibv_open_device(dev),
          "ibv_open_device",
          `open ${devName}`,
        );
        return new Context(v, ctx, devName);
      }
    }
    throw new NoRdmaError(
      19,
      name === undefined
        ? "no RDMA devices"
        : `no RDMA device named ${name} (have: ${names.join(", ") || "none"})`,
    );
  });
}
