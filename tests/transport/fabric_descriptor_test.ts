/**
 * The fabric descriptors: the registry has one per kind, in the kind list's order, each in its
 * own folder; and a fabric is one descriptor: a throw-away in-memory "loop" fabric, given beside
 * the registered ones and edited nowhere else, is probed, listed among the host's fabrics, has
 * its libraries and section in the capabilities, and its library and section in `verbus doctor`;
 * and one that carries calls (shm's provider under the name "loop") is offered by serve's options,
 * asked for by connect's, chosen by the handshake and carries the calls.
 */
import { existsSync } from "node:fs";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { formatDoctor } from "../../cli/doctor.ts";
import { parseServeArgs } from "../../cli/serve.ts";
import { demoService } from "../../examples/demo/service.ts";
import { VerbusError } from "../../errors.ts";
import { connect } from "../../rpc/client/client.ts";
import { serve } from "../../rpc/server/server.ts";
import { fabricDoctorLines, probeHost } from "../../transport/capabilities.ts";
import type { FabricDescriptor } from "../../transport/fabric_descriptor.ts";
import type { FabricModule } from "../../transport/provider.ts";
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
  testSettings: () => ({ label: "loop", where: "host", host: "127.0.0.1", server: {}, client: {} }),
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
  assertEquals(
    fabricDoctorLines(caps, [...FABRIC_DESCRIPTORS, broken]).at(-1),
    "loop         not usable",
  );
});

/** shm's provider module under the name "loop": a fabric that carries calls, known only here. */
async function loopOverShm(): Promise<FabricModule> {
  const shm = await loadFabric("shm");
  if (typeof shm === "string") throw new Error(shm);
  return {
    createServerProvider: async (options, log) => {
      const p = await shm.createServerProvider(options, log);
      if (typeof p === "string") return p;
      return {
        kind: "loop",
        refuse: (peer, params) => p.refuse(peer, params),
        offer: (ctx) => p.offer(ctx),
        close: () => p.close(),
      };
    },
    createClientProvider: async (options) => {
      const p = await shm.createClientProvider(options);
      if (typeof p === "string") return p;
      return {
        kind: "loop",
        label: "loop (shm underneath)",
        params: () => p.params(),
        open: (offer, sizes) => p.open(offer, sizes),
        close: () => p.close(),
      };
    },
  };
}
const carryingLoop: typeof loopFabric = { ...loopFabric, load: loopOverShm };
const region = { slots: 16, slotSize: 4096, objectSlabs: 4, objectSlabSize: 64 * 1024 };

test("a throw-away fabric is offered by serve's options, asked for by connect's, and chosen", async () => {
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: demoService(),
    fabric: { fabrics: ["loop"], extraFabrics: [carryingLoop], region },
    logger: { warn: () => {} },
  });
  const at = { host: "127.0.0.1", port: server.port };
  const quiet = { warn: () => {} };
  try {
    assertEquals(server.fabric?.fabrics, ["loop"]);
    for (const fabric of ["loop", "auto"] as const) {
      const c = await connect(at, { fabric, extraFabrics: [carryingLoop], region, logger: quiet });
      try {
        assertEquals(c.fabric, "loop (shm underneath)", JSON.stringify(c.handshake));
        assertEquals(c.handshake.decisions?.loop, { state: "ON" });
        if (fabric === "auto") {
          // the registered fabrics are offered first; this server offers none of them
          assertEquals(c.handshake.decisions?.shm?.state, "OFF");
        }
        const r = await c.call("verbus.Demo", "Echo", new Uint8Array([1, 2, 3]));
        assertEquals([...r.response], [1, 2, 3]);
        assert(r.path !== "TCP_FALLBACK", r.path);
      } finally {
        await c.close();
      }
    }
    // a client that does not know it offers the registered fabrics: the server has none of them
    const plain = await connect(at, { region, logger: quiet });
    try {
      assertEquals(plain.fabric, "tcp");
      assertEquals(plain.handshake.state, "FALLBACK_TCP");
    } finally {
      await plain.close();
    }
  } finally {
    await server.close();
  }
});

test("a fabric nobody gave is refused by name in serve's and connect's options", async () => {
  const e = await assertRejects(
    () => serve({ port: 0, services: {}, fabric: { fabrics: ["shm", "loop"] } }),
    VerbusError,
    "fabrics.1",
  );
  assert(e.message.includes("unknown fabric loop: expected one of shm, verbs, urma"), e.message);
  await assertRejects(
    () =>
      serve({
        port: 0,
        services: {},
        fabric: { fabrics: ["shm"], extraFabrics: [{ ...carryingLoop, kind: "shm" }] },
      }),
    VerbusError,
    "fabric shm is given twice",
  );
  for (const kind of ["tcp", "Loop", "a b"]) {
    await assertRejects(
      () =>
        serve({
          port: 0,
          services: {},
          fabric: { fabrics: ["shm"], extraFabrics: [{ ...carryingLoop, kind }] },
        }),
      VerbusError,
      `fabric kind "${kind}" is not a fabric name`,
    );
  }
  const server = await serve({ port: 0, host: "127.0.0.1", services: {}, logger: { warn() {} } });
  try {
    await assertRejects(
      () => connect({ host: "127.0.0.1", port: server.port }, { fabric: "loop" }),
      VerbusError,
      "field fabric: unknown fabric loop",
    );
  } finally {
    await server.close();
  }
});

test("verbus serve's --fabric takes each registered kind (its choices are the registry's)", () => {
  for (const kind of FABRICS) {
    assertEquals(parseServeArgs(["--port", "0", "--fabric", kind]).fabric, kind);
  }
  assertEquals(
    parseServeArgs(["--port", "0", "--fabric", FABRICS.join(",")]).fabric,
    FABRICS.join(","),
  );
});
