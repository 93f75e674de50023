/**
 * The fabric descriptors: the registry has one per kind, in the kind list's order, each in its
 * own folder; and a fabric is one descriptor: a throw-away in-memory "loop" fabric, given beside
 * the registered ones and edited nowhere else, is probed, listed among the host's fabrics, has
 * its libraries and section in the capabilities, and its library and section in `verbus doctor`.
 */
import { existsSync } from "node:fs";
import { assert, assertEquals, test } from "../harness.ts";
import { formatDoctor } from "../../cli/doctor.ts";
import { fabricDoctorLines, probeHost } from "../../transport/capabilities.ts";
import type { FabricDescriptor } from "../../transport/fabric_descriptor.ts";
import { FABRIC_DESCRIPTORS, FABRICS, loadFabric } from "../../transport/registry.ts";
import { REPO_ROOT } from "../util/proc.ts";

/** What the loop fabric's probe reports. */
interface LoopReport {
  usable: boolean;
  note: string;
}

/** A fabric that lives in this test only: everything about it is this one object. */
const loopFabric: FabricDescriptor<"loop", "loop", LoopReport> = {
  kind: "loop",
  title: "in-memory loopback (a test's throw-away fabric)",
  rank: 10,
  section: "loop",
  servedByDefault: false,
  load: () =>
    Promise.resolve({
      createServerProvider: () => Promise.resolve("loop carries nothing (a test fabric)"),
      createClientProvider: () => Promise.resolve("loop carries nothing (a test fabric)"),
    }),
  probe: () =>
    Promise.resolve({
      usable: true,
      libraries: { libloop: { found: true, path: "(in memory)", source: "embedded", tried: [] } },
      report: { usable: true, note: "in memory, this process only" },
    }),
  doctor: (r) => [`loop         ${r.usable ? `usable (${r.note})` : "not usable"}`],
  testSettings: () => ({ label: "loop", host: "127.0.0.1", server: {}, client: {} }),
};

test("the registry: one descriptor per kind, in the kind list's order, each in its own folder", async () => {
  assertEquals(FABRIC_DESCRIPTORS.map((d) => d.kind), [...FABRICS]);
  for (const d of FABRIC_DESCRIPTORS) {
    assert(existsSync(`${REPO_ROOT}/transport/${d.kind}/descriptor.ts`), `${d.kind}'s folder`);
    assert(d.title.length > 0 && d.testSettings !== undefined, d.kind);
  }
  assertEquals(new Set(FABRIC_DESCRIPTORS.map((d) => d.section)).size, FABRICS.length);
  assertEquals(new Set(FABRIC_DESCRIPTORS.map((d) => d.rank)).size, FABRICS.length);
  assertEquals(FABRIC_DESCRIPTORS.filter((d) => d.servedByDefault).map((d) => d.kind), [
    "shm",
    "verbs",
  ]);
  const shm = await loadFabric("shm");
  if (typeof shm === "string") throw new Error(`shm did not load: ${shm}`);
  assertEquals(typeof shm.createServerProvider, "function");
});

test("a throw-away fabric, given beside the registered ones, is in the capabilities and doctor", async () => {
  const fabrics = [...FABRIC_DESCRIPTORS, loopFabric];
  const plain = await probeHost();
  const caps = await probeHost(undefined, fabrics);
  // listed among the usable fabrics by its rank (after the registered ones), before TCP
  assertEquals(caps.fabrics, [...plain.fabrics.slice(0, -1), "loop", "tcp"] as typeof caps.fabrics);
  assertEquals(caps.libraries.libloop, {
    found: true,
    path: "(in memory)",
    source: "embedded",
    tried: [],
  });
  assertEquals((caps as unknown as Record<string, unknown>).loop, {
    usable: true,
    note: "in memory, this process only",
  });
  const lines = fabricDoctorLines(caps, fabrics);
  assertEquals(lines.at(-1), "loop         usable (in memory, this process only)");
  assertEquals(lines.slice(0, -1), fabricDoctorLines(plain), "the registered sections unchanged");
  assert(!("loop" in plain) && !plain.fabrics.includes("loop" as never), "registered nowhere");
  // verbus doctor's text: its library among the libraries, its section after the registered ones
  const text = formatDoctor(caps, fabrics);
  assert(text.includes("\n  libloop     found: (in memory) (embedded)\n"), text);
  assert(text.includes("\nloop         usable (in memory, this process only)\nbrpc-rdma"), text);
  assert(text.endsWith(`fabrics      ${caps.fabrics.join(" > ")}  (best first)`), text);
  assert(!formatDoctor(plain).includes("loop"), "doctor without it does not name it");
});

test("an unusable fabric keeps its section and libraries but is not among the host's fabrics", async () => {
  const broken: typeof loopFabric = {
    ...loopFabric,
    probe: () =>
      Promise.resolve({
        usable: false,
        libraries: { libloop: { found: false, tried: [], error: "no loop here" } },
        report: { usable: false, note: "" },
      }),
  };
  const caps = await probeHost(undefined, [...FABRIC_DESCRIPTORS, broken]);
  assert(!caps.fabrics.includes("loop" as never), `${caps.fabrics}`);
  assertEquals(caps.libraries.libloop.found, false);
  assertEquals(fabricDoctorLines(caps, [...FABRIC_DESCRIPTORS, broken]).at(-1), "loop         not usable");
});
