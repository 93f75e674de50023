/**
 * librdmacm for the verbs fabric: loading it (once per process, next to libibverbs and the
 * helper), IPv4 socket addresses in the layout rdma_cm takes, and reading the fields of a CM id
 * that verbus needs (its device, its port). Control path only.
 * @module
 */
import { NativeError, VerbusError } from "../../errors.ts";
import { errno } from "../../ffi/libc.ts";
import { IBV_CONTEXT } from "../../ffi/layouts/verbs.ts";
import { RDMA_CM_ID, SOCKADDR_IN } from "../../ffi/layouts/rdmacm.ts";
import { type Library, loadLibrary } from "../../ffi/loader.ts";
import { LIBRDMACM_SPEC, type LIBRDMACM_SYMBOLS } from "../../ffi/symbols/librdmacm.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import { loadVerbs, type VerbsLib } from "./verbs_lib.ts";

/** libibverbs + helper + libc, and librdmacm. Process-wide. */
export interface CmLib extends VerbsLib {
  readonly cm: Library<typeof LIBRDMACM_SYMBOLS>;
}

let cached: Promise<CmLib> | null = null;

/** Loads (once) everything the verbs fabric needs. Rejects with LibraryLoadError / LayoutMismatchError. */
export function loadCm(): Promise<CmLib> {
  cached ??= (async () => {
    const v = await loadVerbs();
    const cm = await loadLibrary(LIBRDMACM_SPEC);
    return { ...v, cm };
  })();
  cached.catch(() => (cached = null));
  return cached;
}

/** AF_INET. */
const AF_INET = 2;
const IPV4_RE = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** True when `s` is a dotted-quad IPv4 address. */
export function isIPv4(s: string): boolean {
  return IPV4_RE.test(s);
}

/** `struct sockaddr_in` for `addr:port` (port 0 = any). Throws INVALID_ARGUMENT for a non-IPv4 address. */
export function sockaddrIn(addr: string, port: number): Uint8Array {
  if (!isIPv4(addr)) {
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `"${addr}" is not an IPv4 address (the verbs fabric binds and connects by IPv4 address)`,
    );
  }
  const b = new Uint8Array(SOCKADDR_IN.$size);
  const d = new DataView(b.buffer);
  d.setUint16(SOCKADDR_IN.sin_family, AF_INET, true);
  d.setUint16(SOCKADDR_IN.sin_port, port, false);
  addr.split(".").forEach((x, i) => (b[SOCKADDR_IN.sin_addr + i] = Number(x)));
  return b;
}

/** A be16 port as returned by `rdma_get_src_port` → host order. */
export function be16(p: number): number {
  return ((p & 0xff) << 8) | ((p >> 8) & 0xff);
}

/** The name of the RDMA device a CM id is bound to ("rxe1"), or null before it is bound. */
export function cmIdDevice(lib: CmLib, id: NonNullPtr): string | null {
  const ctx = lib.ffi.readPtr(id, RDMA_CM_ID.verbs);
  if (ctx === null) return null;
  const dev = lib.ffi.readPtr(ctx, IBV_CONTEXT.device);
  if (dev === null) return null;
  const name = lib.verbs.symbols.ibv_get_device_name(dev);
  return name === null ? null : lib.ffi.cstring(name);
}

/** The port number (1-based) of the device port a CM id is bound to. */
export function cmIdPort(lib: CmLib, id: NonNullPtr): number {
  return lib.ffi.readU8(id, RDMA_CM_ID.port_num);
}

/** Throws a {@link NativeError} naming `fn` and errno when an rdma_* call returned non-zero. */
export function cmCheck(lib: CmLib, rc: number, fn: string, what: string, hint = ""): void {
  if (rc === 0) return;
  const e = rc > 0 ? rc : errno(lib.libc);
  throw new NativeError(fn, e, hint ? `${what}: ${hint}` : what);
}

/** Text of a negative errno carried in a CM event's status (e.g. -110 → "ETIMEDOUT"). */
export function cmStatusText(status: number): string {
  const names: Record<number, string> = {
    [-110]: "ETIMEDOUT",
    [-113]: "EHOSTUNREACH",
    [-111]: "ECONNREFUSED",
    [-19]: "ENODEV",
    [-101]: "ENETUNREACH",
    [-99]: "EADDRNOTAVAIL",
    [-22]: "EINVAL",
    [-104]: "ECONNRESET",
  };
  return names[status] ?? `status ${status}`;
}

/** IB CM reject reasons worth naming (rdma_cm REJECTED event status). */
export function rejectReason(status: number): string {
  switch (status) {
    case 8:
      return "no listener on that port (invalid service id)";
    case 28:
      return "rejected by the server";
    default:
      return `reject reason ${status}`;
  }
}
