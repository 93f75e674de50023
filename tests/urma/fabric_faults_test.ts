/**
 * URMA fabric failures on the simulated liburma: a token violation and an out-of-bounds access
 * complete with REM_ACCESS_ABORT, fail the endpoint with that status name, and later calls go
 * over TCP; the endpoint's own bounds check refuses a bad offset before anything is posted; no
 * liburma (client or server side) and a mode mismatch fall back to TCP with the reason; a lying
 * offer is refused naming the field.
 */
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { client, pattern, startServer, until } from "../fabric/util.ts";
import { VerbusError } from "../../errors.ts";
import { computeLayout, regionConfigSchema } from "../../rpc/region/layout.ts";
import { FAILED } from "../../transport/fabric.ts";
import type { FaultKind } from "../../transport/faults.ts";
import type { UrmaEndpoint } from "../../transport/urma/endpoint.ts";
import { createClientProvider } from "../../transport/urma/provider.ts";
import { SIM_PATH, SKIP_NO_SIM } from "./util.ts";

const sim = { urma: { library: SIM_PATH } };
const MISSING = "/nonexistent/verbus/liburma.so.0";

async function violate(kind: FaultKind) {
  const { server } = await startServer({ fabrics: ["urma"], providerOptions: sim });
  const c = await client(server, { fabric: "urma", providerOptions: sim });
  try {
    assertEquals(c.fabric, "urma (simulated)");
    assertEquals((await c.call("test.Fabric", "Echo", pattern(64, 1))).path, "EAGER");
    const ep = c.session!.endpoint as UrmaEndpoint;
    ep.faults.inject(kind);
    // The request's writes complete with an error: the call cannot be answered over URMA.
    await assertRejects(
      () => c.call("test.Fabric", "Echo", pattern(64, 2), { timeoutMs: 300 }),
      VerbusError,
    );
    assert(ep.failed, "the endpoint failed");
    assert(
      ep.failureReason!.includes("URMA_CR_REM_ACCESS_ABORT_ERR"),
      `reason names the status: ${ep.failureReason}`,
    );
    for (let i = 0; i < 3; i++) {
      const r = await c.call("test.Fabric", "Echo", pattern(64, 3 + i));
      assertEquals([r.path, r.fabric, r.response], ["TCP_FALLBACK", "tcp", pattern(64, 3 + i)]);
    }
    assert(c.stats().errors >= 1, "the failure is counted");
    // The server's side did not fail from the bad accesses; it closes because the client, whose
    // session failed, said so (verbus.Fabric/Bye).
    await until(() => server.fabric!.sessions.size === 0, 5000, "the client's Bye to close it");
    assert(
      server.fabric!.history.every((h) => h.state !== "FAILED"),
      JSON.stringify(server.fabric!.history),
    );
  } finally {
    await c.close();
    await server.close();
  }
}

test(
  "token violation: writes with a wrong token → URMA_CR_REM_ACCESS_ABORT_ERR, session fails, calls go over TCP",
  () => violate("bad-remote-key"),
  { skip: SKIP_NO_SIM },
);

test(
  "bounds violation: an access past the peer's segment → URMA_CR_REM_ACCESS_ABORT_ERR, calls go over TCP",
  () => violate("out-of-bounds"),
  { skip: SKIP_NO_SIM },
);

test(
  "the endpoint's own bounds check refuses bad offsets and foreign views before posting",
  async () => {
    const { server } = await startServer({ fabrics: ["urma"], providerOptions: sim });
    const c = await client(server, { fabric: "urma", providerOptions: sim });
    try {
      const ep = c.session!.endpoint as UrmaEndpoint;
      assertEquals(ep.write(0, ep.remoteSize - 2, new Uint8Array(4), 0), FAILED);
      assertEquals(ep.write(0, -1, new Uint8Array(4), 0), FAILED);
      assertEquals(ep.writeU32(0, 6, 1, 0), FAILED, "unaligned publication word");
      assertEquals(
        ep.read(0, new Uint8Array(16), 0, 0),
        FAILED,
        "a read target that is not a view of local",
      );
      assertEquals(ep.read(0, ep.local.subarray(0, 16), ep.remoteSize - 8, 0), FAILED);
      assertEquals(
        ep.writeSg(0, 0, [new Uint8Array(8)], 1, 0),
        FAILED,
        "a gather source outside local",
      );
      assert(!ep.failed, "refused requests do not fail the endpoint");
      assertEquals((await c.call("test.Fabric", "Echo", pattern(64, 1))).path, "EAGER");
    } finally {
      await c.close();
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "no liburma on the client: the handshake falls back to TCP with the loader's reason",
  async () => {
    const { server } = await startServer({ fabrics: ["urma"], providerOptions: sim });
    const c = await client(server, {
      fabric: "urma",
      providerOptions: { urma: { library: MISSING } },
    });
    try {
      assertEquals([c.handshake.state, c.fabric], ["FALLBACK_TCP", "tcp"]);
      assert(
        c.handshake.reason!.includes("no liburma found: tried") &&
          c.handshake.reason!.includes(MISSING),
        c.handshake.reason!,
      );
      assertEquals((await c.call("test.Fabric", "Echo", pattern(10, 1))).path, "TCP_FALLBACK");
    } finally {
      await c.close();
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "no liburma on the server / mode mismatch / bad options: URMA is OFF with the reason",
  async () => {
    const { server, log } = await startServer({
      fabrics: ["urma"],
      providerOptions: { urma: { library: MISSING } },
    });
    const c = await client(server, { fabric: "urma", providerOptions: sim });
    try {
      assertEquals(c.handshake.state, "FALLBACK_TCP");
      assert(
        c.handshake.decisions?.urma?.reason?.includes("no liburma found"),
        JSON.stringify(c.handshake),
      );
      // A fabric the server cannot offer is a capability, said once at info level (not a warning).
      assert(
        log.infos.some((w) =>
          w.includes("fabric urma unavailable") && w.includes("no liburma found")
        ),
        log.infos.join("\n"),
      );
    } finally {
      await c.close();
      await server.close();
    }
    const rc = await startServer({
      fabrics: ["urma"],
      providerOptions: { urma: { library: SIM_PATH, mode: "RC" } },
    });
    const c2 = await client(rc.server, { fabric: "urma", providerOptions: sim });
    try {
      assertEquals(c2.handshake.state, "FALLBACK_TCP");
      assert(
        c2.handshake.decisions?.urma?.reason?.includes("mode RM requested, the server runs RC"),
        JSON.stringify(c2.handshake),
      );
    } finally {
      await c2.close();
      await rc.server.close();
    }
    const bad = await createClientProvider({ library: SIM_PATH, mode: "UD" });
    assert(
      typeof bad === "string" && bad.includes("providerOptions.urma: field mode"),
      String(bad),
    );
  },
  { skip: SKIP_NO_SIM },
);

test(
  "a lying offer (sizes, segment, fields) is refused with HANDSHAKE naming what is wrong",
  async () => {
    const layout = regionConfigSchema.parse({
      slots: 8,
      slotSize: 4096,
      bulkSize: 65536,
      objectSlabs: 2,
      objectSlabSize: 65536,
      stagingSize: 1 << 17,
    });
    const server = computeLayout("server", layout), cl = computeLayout("client", layout);
    const sizes = { server: server.size, client: cl.size, maxMessage: layout.slotSize };
    const good = {
      v: 3,
      jetty: { eid: "00".repeat(16), uasid: 1, id: 2 },
      token: 5,
      notify: 0,
      mode: "RM",
      seg: "00".repeat(48),
      serverSize: server.size,
      clientSize: cl.size,
      fabricPage: 4096,
      nonce: "ab".repeat(16),
    };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...good, token: -1 }, "field token"],
      [{ ...good, seg: "zz" }, "field seg"],
      [{ ...good, extra: 1 }, "(root)"],
      [{ ...good, segDesc: "ab" }, "field segDesc"], // shorter than a description header
      [{ ...good, rjetty: "00".repeat(241) }, "field rjetty"], // longer than DESCRIPTION_MAX
      [{ ...good, segDesc: "0g".repeat(8) }, "field segDesc"],
      [{ ...good, serverSize: server.size + 4096 }, "disagree"],
      [good, "segment covers 0 bytes"],
    ];
    for (const [offer, want] of cases) {
      const p = await createClientProvider(sim.urma);
      if (typeof p === "string") throw new Error(p);
      try {
        await assertRejects(() => p.open(offer, sizes), VerbusError, want);
      } finally {
        p.close();
      }
    }
  },
  { skip: SKIP_NO_SIM },
);
