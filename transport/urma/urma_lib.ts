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
 * Which ABI it is: transport/urma/abi.ts chooses a named ABI from evidence (a header layout
 * table, VERBUS_URMA_ABI, the simulator's declaration, the exported symbols; a version string
 * never picks the layouts) and refuses what it cannot map. The simulator exports
 * `urma_sim_abi_version()` ("25.12-sim"): {@link UrmaLib.simulated} is then true and everything
 * reporting on it must say "urma (simulated)".
 * @module
 */
import { execFileSync } from "node:child_process";
import { realpathSync } from "node:fs";
import { ffi } from "../../ffi/ffi.ts";
import { type Helper, loadHelper } from "../../ffi/helper.ts";
import { errno, loadLibc } from "../../ffi/libc.ts";
import { URMA_INIT_ATTR } from "../../ffi/layouts/urma.ts";
import { urmaAbi, type UrmaAbiLayouts } from "../../ffi/layouts/urma_abi.ts";
import { LibraryLoadError, type LoadAttempt } from "../../errors.ts";
import { type Library, probeLibrary } from "../../ffi/loader.ts";
import { getEnv } from "../../ffi/runtime.ts";
import { type AbiChoice, type AbiEvidence, AbiRefusal, chooseAbi } from "./abi.ts";
import type { LIBC_SYMBOLS } from "../../ffi/symbols/libc.ts";
import { LIBURMA_SPEC, LIBURMA_SYMBOLS, URMA_EEXIST } from "../../ffi/symbols/liburma.ts";
import type { FfiBackend, Ptr } from "../../ffi/types.ts";
import { UrmaAbiError, UrmaStatusError } from "./errors.ts";

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
  /** The named ABI in use ("25.12", "25.12-B081", ...: ffi/layouts/urma_abi.ts). */
  readonly abi: string;
  /** Its layouts of urma_rjetty_t, urma_seg_t, urma_target_seg_t (the others are shared). */
  readonly layouts: UrmaAbiLayouts;
  /** What chose the ABI (transport/urma/abi.ts), e.g. "header layout table build/...". */
  readonly abiEvidence: string;
  /** The ABI as reported: "25.12", or "25.12-B081-sim" for the simulator. */
  readonly version: string;
  /** The simulator's explanation of the calling thread's last failure ("" for the real library). */
  lastError(): string;
  /** Live objects of this process (simulator only; null for the real library). */
  liveObjects(): { total: number; detail: string } | null;
}

/** The `rpm -qf` release of the file at `path`, if it belongs to a package. */
function rpmVersion(path: string): string | null {
  try {
    const file = path.includes("/") ? realpathSync(path) : `/usr/lib64/${path}`;
    const out = execFileSync("rpm", ["-qf", "--qf", "%{VERSION}", file], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
      timeout: 5000,
    });
    return out.trim() || null;
  } catch {
    return null; // no rpm, or the file belongs to no package
  }
}

interface Identity {
  simulated: boolean;
  version: string;
  choice: AbiChoice;
}

/** The run-time size probe (abi_probe.ts), bound to what it needs to make a provisional lib. */
type SizeProbe = (lib: Library<typeof LIBURMA_SYMBOLS>) => AbiEvidence["probe"];

function identify(lib: Library<typeof LIBURMA_SYMBOLS>, f: FfiBackend, probe: SizeProbe): Identity {
  const simVersion = lib.symbols.urma_sim_abi_version;
  let simDeclared: string | null = null;
  if (simVersion) {
    const p = simVersion();
    const v = p === null ? "" : f.cstring(p);
    simDeclared = v.replace(/-sim$/, "");
  }
  const symbols = lib.symbols as Record<string, unknown>;
  let choice: AbiChoice;
  try {
    choice = chooseAbi({
      path: lib.path,
      simDeclared,
      has: (name) => typeof symbols[name] === "function",
      rpmVersion: () => rpmVersion(lib.path),
      probe: probe(lib),
    });
  } catch (e) {
    if (e instanceof AbiRefusal) throw new UrmaAbiError(e.message, lib.path);
    throw e;
  }
  const version = simDeclared !== null ? `${choice.abi.name}-sim` : choice.abi.name;
  return { simulated: simDeclared !== null, version, choice };
}

const cache = new Map<string, Promise<UrmaLib>>();

/** Tries the candidates in order; a system soname that resolves to the simulator is refused. */
async function open(
  path: string | undefined,
  f: FfiBackend,
  probe: SizeProbe,
): Promise<{ lib: Library<typeof LIBURMA_SYMBOLS> } & Identity> {
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
    let id: Identity;
    try {
      id = identify(lib, f, probe);
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
      const sizes = await import("./abi_probe.ts");
      const probe: SizeProbe = (lib) => (names) => {
        const rc = lib.symbols.urma_init(new Uint8Array(URMA_INIT_ATTR.$size));
        if (rc !== 0 && rc !== URMA_EEXIST) return null;
        const provisional = { abi: urmaAbi(names[0])!, evidence: "provisional (size probe)" };
        const u = makeLib(f, lib, helper, libc, false, names[0], provisional);
        let blobs;
        try {
          blobs = sizes.probeDescriptionBlobs(u);
        } catch {
          return null; // no device to ask: the choice stays open (refused)
        }
        const abi = sizes.abiFromBlobs(names, blobs);
        const how = `the lengths of its own descriptions (${sizes.describeBlobs(blobs)})`;
        return abi ? { abi, evidence: how } : null;
      };
      const { lib, simulated, version, choice } = await open(path, f, probe);
      try {
        const rc = lib.symbols.urma_init(new Uint8Array(URMA_INIT_ATTR.$size));
        if (rc !== 0 && rc !== URMA_EEXIST) {
          // The simulator says why (a squatted rendezvous name, a full tmpfs, ...).
          const why = lib.symbols.urma_sim_last_error?.();
          throw new UrmaStatusError("urma_init", rc, lib.path, why ? f.cstring(why) : "");
        }
        return makeLib(f, lib, helper, libc, simulated, version, choice);
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
  choice: AbiChoice,
): UrmaLib {
  const text = new Uint8Array(256);
  return {
    ffi: f,
    lib,
    helper,
    libc,
    path: lib.path,
    simulated,
    abi: choice.abi.name,
    layouts: choice.abi,
    abiEvidence: choice.evidence,
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
