/**
 * Every RPC path over the URMA fabric on the simulated liburma, with the real server and client
 * in this process: the handshake (ESTABLISHED, "urma (simulated)"), EAGER, LAZY and BULK with
 * byte-exact results, 1000 pipelined calls, the RC jetty mode, and idle wake-ups through the
 * JFCE (a call after the server went to sleep still answers at once).
 */
import { assert, assertEquals, test } from "../harness.ts";
import { client, expectedSized, pattern, sized, startServer } from "../fabric/util.ts";
import type { UrmaEndpoint } from "../../transport/urma/endpoint.ts";
import { SIM_PATH, SKIP_NO_SIM } from "./util.ts";

const urma = (mode?: "RM" | "RC") => ({ urma: { library: SIM_PATH, ...(mode ? { mode } : {}) } });

/** Server offering only URMA (simulated) and a client asking for it. */
export async function urmaPair(mode?: "RM" | "RC") {
  const { server, log } = await startServer({ fabrics: ["urma"], providerOptions: urma(mode) });
  const c = await client(server, { fabric: "urma", providerOptions: urma(mode) });
  return { server, log, c };
}

test(
  'handshake: ESTABLISHED over URMA, labelled "urma (simulated)" everywhere it is reported',
  async () => {
    const { server, c } = await urmaPair();
    try {
      assertEquals(c.handshake.state, "ESTABLISHED", JSON.stringify(c.handshake));
      assertEquals(c.fabric, "urma (simulated)");
      assertEquals(c.stats().fabric, "urma (simulated)");
      assertEquals(c.handshake.decisions?.urma?.state, "ON");
      assertEquals(server.fabric!.history.at(-1)?.state, "ESTABLISHED");
      const ep = c.session!.endpoint as UrmaEndpoint;
      assertEquals([ep.kind, ep.simulated, ep.failed], ["urma", true, false]);
      const r = await c.call("test.Fabric", "Echo", pattern(64, 9));
      assertEquals([r.path, r.fabric], ["EAGER", "urma (simulated)"]);
    } finally {
      await c.close();
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "EAGER, LAZY and BULK over URMA carry exact bytes (with attachments) and report their path",
  async () => {
    const { server, c } = await urmaPair();
    try {
      const small = pattern(100, 1);
      const e = await c.call("test.Fabric", "Echo", small, { attachment: pattern(50, 2) });
      assertEquals([e.path, e.fabric], ["EAGER", "urma (simulated)"]);
      assertEquals(e.response, small);
      assertEquals(e.attachment, pattern(50, 2));

      const lazy = await c.call("test.Fabric", "Sized", sized(100_000), {
        expectedResponseBytes: 100_000,
      });
      assertEquals(lazy.path, "LAZY");
      assertEquals(lazy.response, expectedSized(100_000));

      const big = pattern(300_000, 3);
      const b = await c.call("test.Fabric", "Echo", big, { attachment: pattern(9000, 4) });
      assertEquals(b.path, "BULK", "a 300 KB request goes BULK");
      assertEquals(b.response, big);
      assertEquals(b.attachment, pattern(9000, 4));

      const b8 = await c.call("test.Fabric", "Echo", pattern(8192, 5), { forcePath: "BULK" });
      assertEquals([b8.path, b8.response], ["BULK", pattern(8192, 5)], "an 8 KiB BULK request");

      const t = await c.call("test.Fabric", "Echo", small, { forcePath: "TCP_FALLBACK" });
      assertEquals([t.path, t.fabric], ["TCP_FALLBACK", "tcp"]);
      assertEquals(c.stats().calls, { EAGER: 1, LAZY: 1, BULK: 2, TCP_FALLBACK: 1 });
      assert(c.session!.stats.lazyReads >= 1, "the LAZY result was read one-sided");
    } finally {
      await c.close();
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "1000 pipelined calls over URMA: every answer byte-exact, all EAGER, none over TCP",
  async () => {
    const { server, c } = await urmaPair();
    try {
      const calls = Array.from(
        { length: 1000 },
        (_, i) => c.call("test.Fabric", "Echo", pattern(64 + (i % 200), i)),
      );
      const rs = await Promise.all(calls);
      rs.forEach((r, i) => {
        if (r.path !== "EAGER") {
          throw new Error(`call ${i} went ${r.path}`);
        }
        assertEquals(r.response, pattern(64 + (i % 200), i), `call ${i}`);
      });
      assertEquals(c.stats().calls.TCP_FALLBACK, 0);
      // mixed sizes in flight together (some may be pushed to TCP by region pressure: 16 slabs)
      const mixed = await Promise.all(
        Array.from(
          { length: 60 },
          (_, i) =>
            i % 3 === 0
              ? c.call("test.Fabric", "Sized", sized(20_000 + i), {
                expectedResponseBytes: 20_000 + i,
              })
              : c.call("test.Fabric", "Echo", pattern(i % 3 === 1 ? 10_000 + i : 200, i)),
        ),
      );
      mixed.forEach((r, i) => {
        const want = i % 3 === 0
          ? expectedSized(20_000 + i)
          : pattern(i % 3 === 1 ? 10_000 + i : 200, i);
        assertEquals(r.response, want, `mixed call ${i} (${r.path})`);
      });
      assert(!(c.session!.endpoint as UrmaEndpoint).failed, "the endpoint stayed healthy");
    } finally {
      await c.close();
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM, timeoutMs: 60_000 },
);

test("RC mode: bound jetties carry EAGER, LAZY and BULK too", async () => {
  const { server, c } = await urmaPair("RC");
  try {
    assertEquals([c.handshake.state, c.fabric], ["ESTABLISHED", "urma (simulated)"]);
    assertEquals((await c.call("test.Fabric", "Echo", pattern(77, 7))).response, pattern(77, 7));
    assertEquals(
      (await c.call("test.Fabric", "Sized", sized(50_000), { expectedResponseBytes: 50_000 }))
        .response,
      expectedSized(50_000),
    );
    const big = await c.call("test.Fabric", "Echo", pattern(40_000, 8));
    assertEquals([big.path, big.response], ["BULK", pattern(40_000, 8)]);
  } finally {
    await c.close();
    await server.close();
  }
}, { skip: SKIP_NO_SIM });

test(
  "idle wake-up: after both sides went to sleep, a call is answered at once (JFCE notification)",
  async () => {
    const { server, c } = await urmaPair();
    try {
      await c.call("test.Fabric", "Echo", pattern(64, 1));
      for (let k = 0; k < 3; k++) {
        await new Promise((r) => setTimeout(r, 60)); // past idleAfterMs: the server sleeps in waitInbound
        const t = performance.now();
        const r = await c.call("test.Fabric", "Echo", pattern(64, k));
        const ms = performance.now() - t;
        assertEquals(r.response, pattern(64, k));
        assert(
          ms < 250,
          `answered in ${ms.toFixed(1)} ms (a missed wake-up would take the 1 s idle wait)`,
        );
      }
    } finally {
      await c.close();
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM },
);
