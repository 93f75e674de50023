/**
 * The URMA layouts and the choice of a named ABI: the constants (ffi/layouts/urma.ts and
 * urma_abi.ts) against the sizeof/offsetof table of the simulator's header built for every named
 * ABI (build/urma_sim[/<abi>]/urma_layout.txt), the evidence order of transport/urma/abi.ts, and
 * a mismatched ABI refused with the field named.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { layoutMismatches, parseLayoutTable } from "../../ffi/layouts/layout.ts";
import { URMA_LAYOUTS, URMA_LEADING, URMA_SGE } from "../../ffi/layouts/urma.ts";
import { abiLayouts, URMA_ABIS, urmaAbi } from "../../ffi/layouts/urma_abi.ts";
import {
  abiFromDeclared,
  abiFromSymbols,
  abiFromTable,
  chooseAbi,
  classifyUmdkVersion,
  PROBE_SYMBOLS,
} from "../../transport/urma/abi.ts";
import { loadUrma } from "../../transport/urma/urma_lib.ts";
import {
  abiFromBlobs,
  describeBlobs,
  probeDescriptionBlobs,
} from "../../transport/urma/abi_probe.ts";
import { loadSim, SIM_ABI, SKIP_NO_SIM } from "./util.ts";
import { getEnvRaw, setEnv, simDirFor, simPathFor } from "./sim_path.ts";

const simDir = fileURLToPath(new URL("../../c-helpers/urma_sim", import.meta.url));
const tablePath = (abi: string) => simDirFor(abi) + "urma_layout.txt";
const SKIP = URMA_ABIS.every((a) => existsSync(tablePath(a.name)))
  ? false
  : "the simulator is not built for every named ABI (run make)";
const table = (abi: string) => readFileSync(tablePath(abi), "utf8");

test("every named ABI's layouts match its simulator build's header table, field for field", () => {
  for (const abi of URMA_ABIS) {
    const t = parseLayoutTable(table(abi.name));
    assertEquals([abi.name, layoutMismatches(abiLayouts(abi), t)], [abi.name, []]);
    const bad: string[] = [];
    for (const l of URMA_LEADING) {
      for (const [field, offset] of Object.entries(l)) {
        if (field.startsWith("$")) continue;
        const e = t.get(`${l.$struct}.${field}`);
        if (!e || e.offset !== offset) {
          bad.push(`${l.$struct}.${field}: TS ${offset}, C ${e?.offset}`);
        }
      }
    }
    assertEquals(bad, []);
  }
  assert(URMA_LAYOUTS.length >= 20, "every URMA struct verbus uses is covered");
}, { skip: SKIP });

test("each header table picks exactly its own ABI (the tables tell the ABIs apart)", () => {
  for (const abi of URMA_ABIS) assertEquals(abiFromTable(table(abi.name), "t").name, abi.name);
  const b081 = urmaAbi("25.12-B081")!;
  assertEquals([b081.rjetty.$size, b081.rjetty.flag, b081.rjetty.tp_type], [72, 40, 64]);
  const ext = urmaAbi("26.06-ext")!;
  assertEquals([ext.seg.$size, ext.targetSeg.$size, ext.targetSeg.user_ctx], [56, 96, 56]);
}, { skip: SKIP });

test("a table no named ABI matches is refused, naming the field (the check can fail)", () => {
  const bad = table("25.12").replace(
    /^urma_rjetty_t\.tp_type 40 4$/m,
    "urma_rjetty_t.tp_type 44 4",
  );
  let msg = "";
  try {
    abiFromTable(bad, "fixture");
  } catch (e) {
    msg = (e as Error).message;
  }
  assert(msg.includes("matches no ABI verbus knows"), msg);
  assert(msg.includes("offsetof(urma_rjetty_t, tp_type): TypeScript says 40, C says 44"), msg);
  const wrong24 = { ...URMA_SGE, $size: 24, user_tseg: 20 }; // what a 24.12-style layout would say
  const lines = layoutMismatches([wrong24], parseLayoutTable(table("25.12")));
  assert(lines.some((b) => b.includes("urma_sge_t, user_tseg")), lines.join("\n"));
}, { skip: SKIP });

test("exported symbols date the build: one ABI, several, or refused", () => {
  const has = (...names: string[]) => (n: string) => names.includes(n);
  const [ex, eid, log, seg] = PROBE_SYMBOLS;
  assertEquals(abiFromSymbols(has()).names, []);
  assert(abiFromSymbols(has()).why.includes("24.12"), "older than 25.12");
  assertEquals(abiFromSymbols(has(ex)).names, ["25.12"]);
  assertEquals(abiFromSymbols(has(ex, eid)).names, ["25.12", "25.12-B081"]);
  assertEquals(abiFromSymbols(has(ex, eid, log)).names, ["25.12-B081"]);
  assertEquals(abiFromSymbols(has(ex, eid, log, seg)).names, ["25.12", "26.06-ext", "26.06-ext56"]);
  const base = { path: "/x/liburma.so.0", simDeclared: null, rpmVersion: () => "25.12.0" };
  const saved = [getEnvRaw("VERBUS_URMA_ABI"), getEnvRaw("VERBUS_URMA_LAYOUT")];
  setEnv("VERBUS_URMA_ABI", undefined);
  setEnv("VERBUS_URMA_LAYOUT", undefined);
  try {
    const c = chooseAbi({ ...base, has: has(ex, eid, log) });
    assertEquals(c.abi.name, "25.12-B081");
    assert(c.evidence.startsWith("exported symbols") && c.evidence.includes("rpm"), c.evidence);
    let msg = "";
    try {
      chooseAbi({ ...base, has: has(ex, eid) }); // the version string does not decide it
    } catch (e) {
      msg = (e as Error).message;
    }
    assert(msg.includes("fit several ABIs") && msg.includes("25.12-B081"), msg);
    setEnv("VERBUS_URMA_ABI", "25.12-B081"); // the override
    const o = chooseAbi({ ...base, has: has(ex, eid) });
    assertEquals([o.abi.name, o.evidence], ["25.12-B081", "VERBUS_URMA_ABI=25.12-B081"]);
  } finally {
    setEnv("VERBUS_URMA_ABI", saved[0]);
    setEnv("VERBUS_URMA_LAYOUT", saved[1]);
  }
});

test("UMDK release strings: 25.12 – 26.06 accepted, 24.12 LTS and unknown releases refused", () => {
  assert(classifyUmdkVersion("25.12.0").ok && classifyUmdkVersion("26.06").ok, "supported");
  const lts = classifyUmdkVersion("24.12.0");
  assert(!lts.ok && lts.reason.includes("urma_sge_t 24 B"), JSON.stringify(lts));
  assert(!classifyUmdkVersion("26.09.0").ok && !classifyUmdkVersion("1.3.0").ok, "unknown");
  assertEquals(abiFromDeclared("26.06.0").name, "25.12");
  assertEquals(abiFromDeclared("25.12-B081").name, "25.12-B081");
});

test("a mismatched ABI is refused at load with the field named, never a crash", async () => {
  const saved = getEnvRaw("VERBUS_URMA_ABI");
  setEnv("VERBUS_URMA_ABI", "25.12"); // the 25.12-B081 build's header table says otherwise
  try {
    const err = await assertRejects(() => loadUrma(simPathFor("25.12-B081")));
    const msg = (err as Error).message;
    assert(msg.includes("VERBUS_URMA_ABI=25.12 says ABI 25.12"), msg);
    assert(msg.includes("sizeof(struct urma_rjetty_t): TypeScript says 48, C says 72"), msg);
    assert(msg.includes("offsetof(urma_rjetty_t, tp_type): TypeScript says 40, C says 64"), msg);
  } finally {
    setEnv("VERBUS_URMA_ABI", saved);
  }
  const fixture = join(tmpdir(), `verbus-urma-layout-${Date.now()}.txt`);
  writeFileSync(fixture, table("26.06-ext").replace(/^urma_seg_t 56$/m, "urma_seg_t 64"));
  const savedLayout = getEnvRaw("VERBUS_URMA_LAYOUT");
  setEnv("VERBUS_URMA_LAYOUT", fixture);
  try {
    const err = await assertRejects(() => loadUrma(simPathFor("26.06-ext")));
    const msg = (err as Error).message;
    assert(msg.includes("matches no ABI") && msg.includes("sizeof(struct urma_seg_t)"), msg);
  } finally {
    setEnv("VERBUS_URMA_LAYOUT", savedLayout);
    rmSync(fixture, { force: true });
  }
}, { skip: SKIP });

const SYMBOL_CANDIDATES = abiFromSymbols(() => true).names; // builds with urma_get_seg_ctx

test("size probe: the lengths of the library's own descriptions single out its ABI", async () => {
  const u = await loadSim();
  const before = u.liveObjects()!.total;
  const blobs = probeDescriptionBlobs(u);
  assertEquals(u.liveObjects()!.total, before, "the probe frees what it made");
  assertEquals(abiFromBlobs(SYMBOL_CANDIDATES, blobs)?.name, SIM_ABI, describeBlobs(blobs));
  // One byte short: no candidate's rule explains it, so nothing is guessed.
  const short = { seg: blobs.seg!.subarray(0, blobs.seg!.length - 1), rjetty: blobs.rjetty };
  assertEquals(abiFromBlobs(SYMBOL_CANDIDATES, short), null);
  // Wired into the choice: symbols leave three candidates, the probe picks.
  const saved = [getEnvRaw("VERBUS_URMA_ABI"), getEnvRaw("VERBUS_URMA_LAYOUT")];
  setEnv("VERBUS_URMA_ABI", undefined);
  setEnv("VERBUS_URMA_LAYOUT", undefined);
  try {
    const c = chooseAbi({
      path: "/x/liburma.so.0",
      simDeclared: null,
      has: () => true,
      rpmVersion: () => null,
      probe: (names) => {
        const abi = abiFromBlobs(names, blobs);
        return abi ? { abi, evidence: describeBlobs(blobs) } : null;
      },
    });
    assertEquals(c.abi.name, SIM_ABI);
    assert(c.evidence.includes("then urma_get_seg_ctx"), c.evidence);
  } finally {
    setEnv("VERBUS_URMA_ABI", saved[0]);
    setEnv("VERBUS_URMA_LAYOUT", saved[1]);
  }
}, { skip: SKIP_NO_SIM || (urmaAbi(SIM_ABI)?.blob ? false : `${SIM_ABI} has no description API`) });

test(
  "installed UMDK headers: make compiles urma_layout.txt from them and a system liburma's ABI comes from it",
  () => {
    // A header directory in the installed shape (/usr/include/ub/umdk/urma): urma_types.h and
    // urma_api.h — here the simulator's header for 25.12-B081 standing in for UMDK's.
    const root = mkdtempSync(join(tmpdir(), "verbus-umdk-"));
    const inc = join(root, "include"), out = join(root, "build");
    mkdirSync(inc);
    const simHeader = fileURLToPath(
      new URL("../../c-helpers/urma_sim/urma_sim.h", import.meta.url),
    );
    writeFileSync(join(inc, "urma_types.h"), `#define URMA_SIM_ABI 1\n#include "${simHeader}"\n`);
    writeFileSync(join(inc, "urma_api.h"), "/* declarations come with urma_types.h here */\n");
    const make = (include: string) =>
      execFileSync("make", [
        "-s",
        "-C",
        simDir,
        "umdk-layout",
        `UMDK_INCLUDE=${include}`,
        `OUT=${out}`,
      ], {
        encoding: "utf8",
      });
    make(join(root, "none")); // no headers: no table
    assert(!existsSync(join(out, "urma_layout.txt")), "no table without headers");
    make(inc);
    const saved = ["VERBUS_URMA_ABI", "VERBUS_URMA_LAYOUT", "VERBUS_HOME"].map(getEnvRaw);
    setEnv("VERBUS_URMA_ABI", undefined);
    setEnv("VERBUS_URMA_LAYOUT", undefined);
    setEnv("VERBUS_HOME", root); // its build/ is one of the build directories verbus reads
    try {
      const e = {
        path: "/x/liburma.so.0",
        simDeclared: null,
        has: () => true,
        rpmVersion: () => null,
      };
      const c = chooseAbi(e);
      assertEquals(c.abi.name, "25.12-B081");
      assert(c.evidence.includes("urma_layout.txt"), c.evidence);
      setEnv("VERBUS_URMA_ABI", "25.12");
      assertThrows(
        () => chooseAbi(e),
        Error,
        "offsetof(urma_rjetty_t, tp_type): TypeScript says 40, C says 64",
      );
    } finally {
      ["VERBUS_URMA_ABI", "VERBUS_URMA_LAYOUT", "VERBUS_HOME"].forEach((n, i) =>
        setEnv(n, saved[i])
      );
      rmSync(root, { recursive: true, force: true });
    }
  },
  {
    skip: existsSync(join(dirname(fileURLToPath(import.meta.url)), "../../build/urma_layout.txt"))
      ? "this host has UMDK headers: build/urma_layout.txt comes first"
      : false,
  },
);
