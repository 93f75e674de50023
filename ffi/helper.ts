/**
 * Loading the C helper: find it (env → bundled → soname), read its version, check every struct
 * layout TypeScript uses against its sizeof/offsetof table, and refuse to run on a mismatch.
 * @module
 */
import { NativeError, VerbusError } from "../errors.ts";
import { ffiSync } from "./ffi.ts";
import { checkLayouts, type Layout, type LayoutEntry, parseLayoutTable } from "./layouts/layout.ts";
import {
  VB_RECV_DESC,
  VB_SEND_DESC,
  VB_SGE,
  VB_UBRING_BLOCK,
  VB_UBRING_GATHER,
  VB_WC,
} from "./layouts/helper.ts";
import { RDMACM_LAYOUTS } from "./layouts/rdmacm.ts";
import { VERBS_LAYOUTS } from "./layouts/verbs.ts";
import { type Library, loadLibrary, probeLibrary, type ProbeResult } from "./loader.ts";
import { HELPER_SPEC, type HELPER_SYMBOLS } from "./symbols/helper.ts";
import { cstringArg } from "./strings.ts";

/** Every layout checked against the helper's table at load. */
export const ALL_HELPER_LAYOUTS: readonly Layout[] = [
  VB_SGE,
  VB_SEND_DESC,
  VB_RECV_DESC,
  VB_WC,
  VB_UBRING_BLOCK,
  VB_UBRING_GATHER,
  ...VERBS_LAYOUTS,
  ...RDMACM_LAYOUTS,
];

/** The loaded, layout-checked helper. Process-wide; obtain it with {@link loadHelper}. */
export interface Helper {
  /** The library (its symbols are for the JS thread that loaded it). */
  readonly lib: Library<typeof HELPER_SYMBOLS>;
  /** `vb_version()`, e.g. "verbus-helper 1". */
  readonly version: string;
  /** The parsed sizeof/offsetof table. */
  readonly layouts: ReadonlyMap<string, LayoutEntry>;
}

function verify(lib: Library<typeof HELPER_SYMBOLS>): Helper {
  const f = ffiSync();
  const s = lib.symbols;
  const v = s.vb_version();
  const t = s.vb_layout_table();
  if (v === null || t === null) {
    throw new VerbusError("LAYOUT_MISMATCH", "the helper returned no version / layout table");
  }
  const layouts = parseLayoutTable(f.cstring(t));
  checkLayouts(ALL_HELPER_LAYOUTS, layouts);
  return { lib, version: f.cstring(v), layouts };
}

let cached: Promise<Helper> | null = null;

/**
 * Loads the helper once per process and checks its layouts. Rejects with
 * {@link LibraryLoadError} (every path tried) or {@link LayoutMismatchError} (every bad field).
 */
export function loadHelper(): Promise<Helper> {
  cached ??= loadLibrary(HELPER_SPEC).then((lib) => {
    try {
      return verify(lib);
    } catch (e) {
      lib.close();
      throw e;
    }
  });
  cached.catch(() => (cached = null));
  return cached;
}

/** Like {@link loadHelper} but never throws: for `verbus doctor`. */
export async function probeHelper(): Promise<
  { ok: true; helper: Helper; probe: ProbeResult<typeof HELPER_SYMBOLS> } | {
    ok: false;
    error: Error;
    probe?: ProbeResult<typeof HELPER_SYMBOLS>;
  }
> {
  const probe = await probeLibrary(HELPER_SPEC);
  if (!probe.ok) return { ok: false, error: probe.error, probe };
  try {
    probe.library.close();
    return { ok: true, helper: await loadHelper(), probe };
  } catch (e) {
    return { ok: false, error: e as Error, probe };
  }
}

/**
 * Gives the helper the libibverbs verbus uses (same path ⇒ same library instance), so its
 * `vb_get_cq_event` / `vb_query_port` can call the exported verbs functions. Idempotent.
 */
export function bindHelperToVerbs(helper: Helper, libibverbsPath: string): void {
  const rc = helper.lib.symbols.vb_verbs_bind(cstringArg(libibverbsPath));
  if (rc !== 0) {
    const msg = helper.lib.symbols.vb_bind_error();
    throw new NativeError("vb_verbs_bind", 0, msg ? ffiSync().cstring(msg) : libibverbsPath);
  }
}
