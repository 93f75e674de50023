/**
 * Which named UMDK ABI (ffi/layouts/urma_abi.ts) a loaded liburma has, from evidence, strongest
 * first. A version string alone does not decide it: builds labelled 25.12.0 and 26.06.0 have
 * three different `urma_rjetty_t` sizes.
 *
 * 1. A **header layout table** (c-helpers/urma_sim/abi_check.c output): `VERBUS_URMA_LAYOUT`,
 *    else `urma_layout.txt` next to the library (every simulator build has one, compiled from
 *    its header), else — for a system liburma — `build/urma_layout.txt`, compiled by `make` from
 *    the installed UMDK headers (/usr/include/ub/umdk/urma). The ABI whose every layout matches
 *    the table is used; a table no named ABI matches is refused, naming the fields of the
 *    nearest ABI that differ. Any other evidence that contradicts the table is refused the same
 *    way (VERBUS_URMA_ABI, a simulator declaring another ABI).
 * 2. **`VERBUS_URMA_ABI`**, the override: a named ABI ("25.12-B081") or a release (25.12 – 26.06
 *    mean the 25.12 layouts).
 * 3. The simulator's own declaration (`urma_sim_abi_version`, "<abi>-sim").
 * 4. **Exported symbols** that exist only in some builds ({@link PROBE_SYMBOLS}): they narrow
 *    the ABI to one, or to a few candidates; the `rpm -qf` release may then refuse 24.12 or an
 *    unknown release, but never picks between layouts. Several candidates left: the sizes the
 *    library reveals at run time (the lengths of its own segment / jetty descriptions,
 *    transport/urma/abi_probe.ts) pick one, or the library is refused, asking for
 *    VERBUS_URMA_ABI or the headers.
 * Control path only.
 * @module
 */
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { layoutMismatches, parseLayoutTable } from "../../ffi/layouts/layout.ts";
import { abiLayouts, URMA_ABIS, urmaAbi, type UrmaAbiLayouts } from "../../ffi/layouts/urma_abi.ts";
import { buildDirs } from "../../ffi/loader.ts";
import { getEnv } from "../../ffi/runtime.ts";

/** Symbols whose presence dates a liburma build (checked in UMDK's core/*.c at each commit). */
export const PROBE_SYMBOLS = [
  "urma_import_jetty_ex", // from v25.12.0 (absent from 24.12 LTS)
  "urma_get_eid_by_ip", // from master 832deec5 (2026-02-13; in tag v25.12.0.B081)
  "urma_register_loc_log_func", // from master c17a35af (2026-05-14)
  "urma_get_seg_ctx", // from master a3b44bfb (2026-06-16)
] as const;

/** The ABI chosen and the evidence that chose it (shown by `verbus doctor`). */
export interface AbiChoice {
  abi: UrmaAbiLayouts;
  /** E.g. "header layout table build/urma_sim/urma_layout.txt", "VERBUS_URMA_ABI=25.12". */
  evidence: string;
}

/** A refusal, in words naming what disagreed. */
export class AbiRefusal extends Error {}

/** Which named ABIs a set of exported symbols allows, and why (empty: too old, refused). */
export function abiFromSymbols(has: (name: string) => boolean): { names: string[]; why: string } {
  const [exImport, eidByIp, locLog, segCtx] = PROBE_SYMBOLS.map(has);
  if (!exImport) {
    return { names: [], why: "no urma_import_jetty_ex: older than UMDK 25.12 (24.12 LTS ABI)" };
  }
  if (!eidByIp) return { names: ["25.12"], why: "urma_import_jetty_ex without urma_get_eid_by_ip" };
  if (!locLog) {
    return {
      names: ["25.12", "25.12-B081"],
      why: "urma_get_eid_by_ip without urma_register_loc_log_func (2026-02-13 .. 2026-05-14)",
    };
  }
  if (!segCtx) {
    return { names: ["25.12-B081"], why: "urma_register_loc_log_func without urma_get_seg_ctx" };
  }
  return {
    names: ["25.12", "26.06-ext", "26.06-ext56"],
    why: "urma_get_seg_ctx (from 2026-06-16)",
  };
}

/**
 * The named ABI whose every layout matches `tableText` (a layout table); throws
 * {@link AbiRefusal} naming the fields of the nearest ABI when none does.
 */
export function abiFromTable(tableText: string, where: string): UrmaAbiLayouts {
  const table = parseLayoutTable(tableText);
  let nearest: { abi: UrmaAbiLayouts; bad: string[] } | null = null;
  for (const abi of URMA_ABIS) {
    const bad = layoutMismatches(abiLayouts(abi), table);
    if (bad.length === 0) return abi;
    if (!nearest || bad.length < nearest.bad.length) nearest = { abi, bad };
  }
  throw new AbiRefusal(
    `the UMDK layout table ${where} matches no ABI verbus knows (${
      URMA_ABIS.map((a) => a.name).join(", ")
    }); nearest ${nearest!.abi.name} differs in: ${nearest!.bad.join("; ")}`,
  );
}

/**
 * Classifies a UMDK release string ("25.12", "25.12.0", "26.06.1-3"): ok for 25.12 – 26.06,
 * otherwise the reason it is refused. A release does not fix the layouts (see the module doc).
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
        "UMDK 24.12 LTS has a different ABI (urma_sge_t 24 B without user_tseg, urma_rjetty_t 40 B without tp_type); verbus supports 25.12 – 26.06",
    };
  }
  return {
    ok: false,
    reason: `UMDK ${release} is not a release verbus knows the ABI of (supported: 25.12 – 26.06)`,
  };
}

/** Named ABI for a VERBUS_URMA_ABI value: an ABI name, or a release 25.12 – 26.06 (→ 25.12). */
export function abiFromDeclared(v: string): UrmaAbiLayouts {
  const named = urmaAbi(v.trim());
  if (named) return named;
  const c = classifyUmdkVersion(v);
  if (c.ok) return URMA_ABIS[0];
  throw new AbiRefusal(
    `VERBUS_URMA_ABI="${v}": ${c.reason}; named ABIs: ${URMA_ABIS.map((a) => a.name).join(", ")}`,
  );
}

/** Where the header layout table for the library at `path` is, if anywhere. */
export function findLayoutTable(path: string, simulated: boolean): string | null {
  const fromEnv = getEnv("VERBUS_URMA_LAYOUT");
  if (fromEnv) return fromEnv;
  try {
    const next = join(dirname(realpathSync(path)), "urma_layout.txt");
    if (existsSync(next)) return next;
  } catch { /* a bare soname: no directory of its own */ }
  if (simulated) return null;
  for (const d of buildDirs()) {
    const p = join(d, "urma_layout.txt");
    if (existsSync(p)) return p;
  }
  return null;
}

/** What the loader knows about the library when it chooses. */
export interface AbiEvidence {
  path: string;
  /** The simulator's declared ABI name (without "-sim"), or null for a real liburma. */
  simDeclared: string | null;
  /** Whether the library exports `name`. */
  has: (name: string) => boolean;
  /** The `rpm -qf` release of the file, if any (only consulted for a real library). */
  rpmVersion: () => string | null;
  /**
   * Asked only when the symbols leave several candidates: the one the library's run-time
   * sizes single out (transport/urma/abi_probe.ts) and how, or null.
   */
  probe?: (candidates: string[]) => { abi: UrmaAbiLayouts; evidence: string } | null;
}

/** Chooses the ABI from the evidence (module doc); throws {@link AbiRefusal}. */
export function chooseAbi(e: AbiEvidence): AbiChoice {
  const declared = getEnv("VERBUS_URMA_ABI");
  const tablePath = findLayoutTable(e.path, e.simDeclared !== null);
  if (tablePath) {
    const text = readFileSync(tablePath, "utf8");
    const abi = abiFromTable(text, tablePath);
    const contradict = (what: string, other: UrmaAbiLayouts) => {
      if (other.name === abi.name) return;
      const bad = layoutMismatches(abiLayouts(other), parseLayoutTable(text));
      throw new AbiRefusal(
        `${what} says ABI ${other.name}, but the UMDK layout table ${tablePath} is ${abi.name}: ${
          bad.join("; ")
        }`,
      );
    };
    if (declared) contradict(`VERBUS_URMA_ABI=${declared}`, abiFromDeclared(declared));
    if (e.simDeclared) contradict(`the simulator at ${e.path}`, simAbi(e.simDeclared, e.path));
    return { abi, evidence: `header layout table ${tablePath}` };
  }
  if (declared) return { abi: abiFromDeclared(declared), evidence: `VERBUS_URMA_ABI=${declared}` };
  if (e.simDeclared) {
    return { abi: simAbi(e.simDeclared, e.path), evidence: "the simulator's urma_sim_abi_version" };
  }
  const bySymbols = abiFromSymbols(e.has);
  if (bySymbols.names.length === 0) {
    throw new AbiRefusal(`liburma at ${e.path}: ${bySymbols.why}; verbus refuses that ABI`);
  }
  const rpm = e.rpmVersion();
  const release = rpm ? classifyUmdkVersion(rpm) : null;
  if (release && !release.ok) {
    throw new AbiRefusal(`liburma at ${e.path} (rpm: ${rpm}): ${release.reason}`);
  }
  const also = rpm ? `, rpm release ${rpm}` : "";
  if (bySymbols.names.length === 1) {
    return {
      abi: urmaAbi(bySymbols.names[0])!,
      evidence: `exported symbols (${bySymbols.why})${also}`,
    };
  }
  const probed = e.probe?.(bySymbols.names) ?? null;
  if (probed) {
    return {
      abi: probed.abi,
      evidence: `exported symbols (${bySymbols.why})${also}, then ${probed.evidence}`,
    };
  }
  throw new AbiRefusal(
    `liburma at ${e.path}: its exported symbols (${bySymbols.why}) fit several ABIs with different layouts (${
      bySymbols.names.join(", ")
    })${also}; install the UMDK headers (/usr/include/ub/umdk/urma) and rebuild with make, or set VERBUS_URMA_ABI`,
  );
}

function simAbi(name: string, path: string): UrmaAbiLayouts {
  const abi = urmaAbi(name);
  if (!abi) {
    throw new AbiRefusal(
      `simulated liburma at ${path} reports ABI "${name}-sim"; this verbus understands ${
        URMA_ABIS.map((a) => `${a.name}-sim`).join(", ")
      } (rebuild it with make)`,
    );
  }
  return abi;
}
