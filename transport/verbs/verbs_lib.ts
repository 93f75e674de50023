/**
 * The native libraries the verbs fabric needs, loaded once per process: libibverbs, the helper
 * (bound to that same libibverbs) and libc for errno. Loading never crashes: a host without
 * libibverbs gets a {@link LibraryLoadError} listing every path tried.
 * @module
 */
import { NativeError, VerbusError } from "../../errors.ts";
import { ffi } from "../../ffi/ffi.ts";
import { bindHelperToVerbs, type Helper, loadHelper } from "../../ffi/helper.ts";
import { errno, loadLibc } from "../../ffi/libc.ts";
import { type Library, loadLibrary } from "../../ffi/loader.ts";
import type { LIBC_SYMBOLS } from "../../ffi/symbols/libc.ts";
import { LIBIBVERBS_SPEC, type LIBIBVERBS_SYMBOLS } from "../../ffi/symbols/libibverbs.ts";
import type { FfiBackend, Ptr } from "../../ffi/types.ts";

/** Everything a verbs object needs to call native code. Shared, process-wide. */
export interface VerbsLib {
  readonly ffi: FfiBackend;
  readonly verbs: Library<typeof LIBIBVERBS_SYMBOLS>;
  readonly helper: Helper;
  readonly libc: Library<typeof LIBC_SYMBOLS>;
}

let cached: Promise<VerbsLib> | null = null;

/** Loads (once) libibverbs + helper + libc. Rejects with LibraryLoadError / LayoutMismatchError. */
export function loadVerbs(): Promise<VerbsLib> {
  cached ??= (async () => {
    const f = await ffi();
    const [helper, libc] = await Promise.all([loadHelper(), loadLibc()]);
    const verbs = await loadLibrary(LIBIBVERBS_SPEC);
    bindHelperToVerbs(helper, verbs.path);
    return { ffi: f, verbs, helper, libc };
  })();
  cached.catch(() => (cached = null));
  return cached;
}

/** Throws a {@link NativeError} for `fn` when `p` is NULL (errno read immediately). */
export function checkPtr(
  v: VerbsLib,
  p: Ptr,
  fn: string,
  what: string,
  ctx: Record<string, unknown> = {},
): NonNullable<Ptr> {
  if (p !== null) return p;
  throw new NativeError(fn, errno(v.libc), what, ctx);
}

/** Throws a {@link NativeError} when a verbs call returned non-zero (its errno, or errno). */
export function checkRc(
  v: VerbsLib,
  rc: number,
  fn: string,
  what: string,
  ctx: Record<string, unknown> = {},
): void {
  if (rc === 0) return;
  // verbs calls return either -1 + errno or a positive errno value.
  const e = rc > 0 ? rc : errno(v.libc);
  throw new NativeError(fn, e, what, ctx);
}

/** The error for "this host has libibverbs but no usable RDMA". */
export class NoRdmaError extends VerbusError {
  constructor(readonly errno: number, reason: string) {
    super("NO_DEVICE", reason, { context: { errno } });
  }
}
