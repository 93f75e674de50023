/**
 * Loading liburma for the URMA fabric, once per path per process: find it, identify its ABI,
 * refuse an ABI whose layouts verbus does not know, call `urma_init` once.
 *
 * Where it comes from — never the simulator by accident: the real `liburma.so.0` (system
 * sonames), `VERBUS_LIBURMA`, or a path passed explicitly. There is no bundled candidate, so the
 * simulator in build/urma_sim/ is used only when a user names it. Because the simulator's
 * soname is also liburma.so.0, a later dlopen("liburma.so.0") in a process that already loaded
 * it returns the simulator: a system candidate that turns out to be the simulator is refused.
 *
 * Which ABI it is:
 * - the simulator exports `urma_sim_abi_version()` ("26.06-sim"): {@link UrmaLib.simulated} is
 *   then true and everything reporting on it must say "urma (simulated)";
 * - the real liburma exports no version (its soname stays liburma.so.0.0.x across UMDK
 *   releases; URMA_API_VERSION is a compile-time macro), so verbus asks, in order,
 *   `VERBUS_URMA_ABI` (e.g. "25.12") and the package that owns the file (`rpm -qf`), and accepts
 *   UMDK 25.12 – 26.06 only. 24.12 LTS is refused (smaller urma_sge_t / urma_rjetty_t), so is
 *   anything newer or unknown.
 * @module
 */
import { execFileSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { ffi } from "../../ffi/ffi.ts";
import { type Helper, loadHelper } from "../../ffi/helper.ts";
import { errno, loadLibc } from "../../ffi/libc.ts";
import { URMA_ABI, URMA_INIT_ATTR } from "../../ffi/layouts/urma.ts";
import { LibraryLoadError, type LoadAttempt } from "../../errors.ts";
import { type Library, probeLibrary } from "../../ffi/loader.ts";
import { getEnv } from "../../ffi/runtime.ts";
import type { LIBC_SYMBOLS } from "../../ffi/symbols/libc.ts";
import { LIBURMA_SPEC, LIBURMA_SYMBOLS, URMA_EEXIST } from "../../ffi/symbols/liburma.ts";
import type { FfiBackend, Ptr } from "../../ffi/types.ts";
import { UrmaAbiError, UrmaStatusError } from "./errors.ts";

/** Simulator ABI strings this build understands. */
export const SUPPORTED_SIM_ABIS: readonly string[] = ["26.06-sim"];

/** Everything a URMA object needs to call native code. Shared, process-wide. */
export interface UrmaLib {
  readonly ffi: FfiBackend;
  readonly lib: Library<typeof LIBURMA_SYMBOLS>;
  /** The helper (for `vb_wait_fd`). */
  readonly helper: Helper;
  readonly libc: Library<typeof LIBC_SYMBOLS>;
  /** The path that was loaded. */
  readonly path: string;
  /** True for verbus's simulated liburma: say "urma (simulated)" wherever results are reported. */
  readonly simulated: boolean;
  /** The layouts in use ("25.12-26.06"). */
  readonly abi: string;
  /** What identified the version: "26.06-sim", "25.12.0 (rpm)", "26.06 (VERBUS_URMA_ABI)". */
  readonly version: string;
  /** The simulator's explanation of the calling thread's last failure ("" for the real library). */
  lastError(): string;
  /** Live objects of this process (simulator only; null for the real library). */
  liveObjects(): { total: number; detail: string } | null;
}

/**
 * Classifies a UMDK release string ("25.12", "25.12.0", "26.06.1-3"): ok for 25.12 – 26.06,
 * otherwise the reason it is refused.
 */
export function classifyUmdkVersion(
  v: string,
): { ok: true; release: string } | { ok: false; reason: string } {
  const m = /^(\d{2})\.(\d{2})/.exec(v.trim());
  if (!m) return { ok: false, reason: `"${v}" is not a UMDK release (YY.MM)` };
  const release = `${m[1]}.${m[2]}`;
  const n = Number(m[1]) * 100 + Number(m[2]);
  if (n >= 2512 && n <= 2606) return { ok: true, release };
  if (n === 2412) {
    return {
      ok: false,
      reason:
        `UMDK 24.12 LTS has a different ABI (urma_sge_t 24 B without user_tseg, urma_rjetty_t 40 B without tp_type); verbus supports ${URMA_ABI}`,
    };
  }
  return {
    ok: false,
    reason: `UMDK ${release} is not a release verbus knows the ABI of (supported: ${URMA_ABI})`,
  };
}

function realVersion(path: string): { version: string; source: string } | null {
  const declared = getEnv("VERBUS_URMA_ABI");
  if (declared) return { version: declared, source: "VERBUS_URMA_ABI" };
  try {
    const file = path.includes("/") ? realpathSync(path) : `/usr/lib64/${path}`;
    const out = execFileSync("rpm", ["-qf", "--qf", "%{VERSION}", file], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 5000,
    });
    if (out.trim()) return { version: out.trim(), source: "rpm" };
  } catch { /* no rpm, or the file belongs to no package */ }
  return null;
}

function identify(
  lib: Library<typeof LIBURMA_SYMBOLS>,
  f: FfiBackend,
): { simulated: boolean; version: string } {
  const simVersion = lib.symbols.urma_sim_abi_version;
  if (simVersion) {
    const p = simVersion();
    const v = p === null ? "" : f.cstring(p);
    if (!SUPPORTED_SIM_ABIS.includes(v)) {
      throw new UrmaAbiError(
        `simulated liburma at ${lib.path} reports ABI "${v}"; this verbus understands ${
          SUPPORTED_SIM_ABIS.join(", ")
        } (rebuild it with make)`,
        lib.path,
      );
    }
    return { simulated: true, version: v };
  }
  const found = realVersion(lib.path);
  if (!found) {
    throw new UrmaAbiError(
      `liburma at ${lib.path} does not say which UMDK release it is (no version symbol, no rpm owner); ` +
        `verbus refuses an unknown ABI. Set VERBUS_URMA_ABI to the release (e.g. 25.12; see \`rpm -q umdk-urma-lib\`)`,
      lib.path,
    );
  }
  const c = classifyUmdkVersion(found.version);
  if (!c.ok) {
    throw new UrmaAbiError(
      `liburma at ${lib.path} (${found.source}: ${found.version}): ${c.reason}`,
      lib.path,
    );
  }
  return { simulated: false, version: `${found.version} (${found.source})` };
}

const cache = new Map<string, Promise<UrmaLib>>();

/** Tries the candidates in order; a system soname that resolves to the simulator is refused. */
async function open(
  path: string | undefined,
  f: FfiBackend,
): Promise<{ lib: Library<typeof LIBURMA_SYMBOLS>; simulated: boolean; version: string }> {
  const attempts: LoadAttempt[] = [];
  const fromEnv = getEnv("VERBUS_LIBURMA");
  const candidates: LoadAttempt["source"][] = [];
  const paths: string[] = [];
  if (path) candidates.push("env"), paths.push(path);
  else {
    if (fromEnv) candidates.push("env"), paths.push(fromEnv);
    for (const s of LIBURMA_SPEC.sonames) candidates.push("system"), paths.push(s);
  }
  for (let i = 0; i < paths.length; i++) {
    const r = await probeLibrary({ name: "liburma", sonames: [paths[i]], table: LIBURMA_SYMBOLS });
    if (!r.ok) {
      attempts.push({ ...r.error.attempts[0], source: candidates[i] });
      continue;
    }
    const lib = r.library;
    let id: { simulated: boolean; version: string };
    try {
      id = identify(lib, f);
    } catch (e) {
      lib.close();
      throw e;
    }
    if (id.simulated && candidates[i] === "system") {
      lib.close();
      attempts.push({
        source: "system",
        path: paths[i],
        reason:
          "resolves to the simulated liburma already loaded in this process (select it explicitly with VERBUS_LIBURMA)",
      });
      continue;
    }
    return { lib, ...id };
  }
  throw new LibraryLoadError("liburma", attempts);
}

/**
 * Loads liburma once per path, checks its ABI and calls `urma_init` once. `path` selects a
 * library explicitly (the simulator: build/urma_sim/liburma.so.0); without it `VERBUS_LIBURMA`
 * and then the system sonames are tried. Rejects with LibraryLoadError ("no liburma found:
 * tried ..."), {@link UrmaAbiError} or {@link UrmaStatusError} (urma_init).
 */
export function loadUrma(path?: string): Promise<UrmaLib> {
  const key = path ?? `env:${getEnv("VERBUS_LIBURMA") ?? ""}`;
  let p = cache.get(key);
  if (!p) {
    p = (async () => {
      const f = await ffi();
      const [helper, libc] = await Promise.all([loadHelper(), loadLibc()]);
      const { lib, simulated, version } = await open(path, f);
      try {
        const rc = lib.symbols.urma_init(new Uint8Array(URMA_INIT_ATTR.$size));
        if (rc !== 0 && rc !== URMA_EEXIST) throw new UrmaStatusError("urma_init", rc, lib.path);
        return makeLib(f, lib, helper, libc, simulated, version);
      } catch (e) {
        lib.close();
        throw e;
      }
    })();
    cache.set(key, p);
    p.catch(() => cache.delete(key));
  }
  return p;
}

function makeLib(
  f: FfiBackend,
  lib: Library<typeof LIBURMA_SYMBOLS>,
  helper: Helper,
  libc: Library<typeof LIBC_SYMBOLS>,
  simulated: boolean,
  version: string,
): UrmaLib {
  const text = new Uint8Array(256);
  return {
    ffi: f,
    lib,
    helper,
    libc,
    path: lib.path,
    simulated,
    abi: URMA_ABI,
    version,
    lastError() {
      const fn = lib.symbols.urma_sim_last_error;
      const p = fn ? fn() : null;
      return p === null ? "" : f.cstring(p);
    },
    liveObjects() {
      const fn = lib.symbols.urma_sim_live_objects;
      if (!fn) return null;
      const total = fn(text, text.length);
      const end = text.indexOf(0);
      return {
        total,
        detail: new TextDecoder().decode(text.subarray(0, end < 0 ? text.length : end)),
      };
    },
  };
}

/** Throws {@link UrmaStatusError} when a liburma call returned a non-zero status. */
export function checkStatus(u: UrmaLib, rc: number, fn: string, what: string): void {
  if (rc !== 0) throw new UrmaStatusError(fn, rc, what, u.lastError());
}

/** Throws {@link UrmaStatusError} (with errno) when a liburma call returned NULL. */
export function checkPtr(u: UrmaLib, p: Ptr, fn: string, what: string): NonNullable<Ptr> {
  if (p !== null) return p;
  throw new UrmaStatusError(fn, errno(u.libc), what, u.lastError());
}
