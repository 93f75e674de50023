/**
 * Leak checks of the URMA fabric on the simulated liburma: 100 connect / call / disconnect
 * cycles (and handshakes that end in TCP) leave no live simulator object behind — contexts,
 * JFCEs, JFCs, JFRs, jetties, imported jetties and segments all return to the baseline, also
 * on the server, whose sessions close while their endpoints sleep in waitInbound.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { client, pattern, startServer } from "../fabric/util.ts";
import { loadSim, sessionObjects, SIM_PATH, SKIP_NO_SIM } from "./util.ts";

const sim = { urma: { library: SIM_PATH } };

async function settle(live: () => number, want: number, ms = 5000): Promise<number> {
  const end = Date.now() + ms;
  while (live() !== want && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  return live();
}

test("100 connect/disconnect cycles leave zero live URMA objects", async () => {
  const u = await loadSim();
  const live = () => sessionObjects(u);
  const base = live();
  const { server } = await startServer({ fabrics: ["urma"], providerOptions: sim });
  try {
    for (let i = 0; i < 100; i++) {
      const c = await client(server, { fabric: "urma", providerOptions: sim });
      try {
        assertEquals(c.fabric, "urma (simulated)", `cycle ${i}: ${JSON.stringify(c.handshake)}`);
        const r = await c.call("test.Fabric", "Echo", pattern(64, i));
        assertEquals(r.response, pattern(64, i));
        if (i % 10 === 0) await new Promise((r) => setTimeout(r, 10)); // let the server fall asleep sometimes
      } finally {
        await c.close();
      }
    }
    const left = await settle(live, base);
    assertEquals(left, base, `live after 100 cycles: ${u.liveObjects()!.detail}`);
  } finally {
    await server.close();
  }
  assertEquals(await settle(live, base), base, u.liveObjects()!.detail);
}, { skip: SKIP_NO_SIM, timeoutMs: 120_000 });

test(
  "handshakes that end in TCP (refused, declined, ACK-less) release the client's port",
  async () => {
    const u = await loadSim();
    const live = () => sessionObjects(u);
    const base = live();
    // the server offers shm only: the client's URMA port (opened for the hello) must be closed
    const { server } = await startServer({ fabrics: ["shm"] });
    try {
      for (let i = 0; i < 10; i++) {
        const c = await client(server, { fabric: "urma", providerOptions: sim });
        assertEquals(c.handshake.state, "FALLBACK_TCP");
        await c.close();
      }
    } finally {
      await server.close();
    }
    assertEquals(await settle(live, base), base, u.liveObjects()!.detail);
    // a server with URMA that dies mid-session: the client closes its side cleanly
    const s2 = await startServer({ fabrics: ["urma"], providerOptions: sim });
    const c = await client(s2.server, { fabric: "urma", providerOptions: sim });
    assertEquals(c.fabric, "urma (simulated)");
    await s2.server.close();
    const r = await c.call("test.Fabric", "Echo", pattern(8, 1), { timeoutMs: 500 }).catch((e) =>
      e
    );
    assert(
      r instanceof Error || r.path === "TCP_FALLBACK",
      "no fabric answer from a closed server",
    );
    await c.close();
    assertEquals(await settle(live, base), base, u.liveObjects()!.detail);
  },
  { skip: SKIP_NO_SIM, timeoutMs: 60_000 },
);
