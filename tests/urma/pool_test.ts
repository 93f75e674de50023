/**
 * The hub's pool: a new URMA session takes a prepared jetty (no `urma_create_jfr` /
 * `urma_create_jetty` on its critical path) and, after the first sessions closed, a cached aux
 * area (no `urma_register_seg` for it); region segments are never reused (each session's has a
 * fresh token). The pool refills in the background.
 */
import { assertEquals, test } from "../harness.ts";
import { UrmaHub } from "../../transport/urma/hub.ts";
import { client, pattern, startServer, until } from "../fabric/util.ts";
import { loadSim, sessionObjects, SIM_PATH, SKIP_NO_SIM } from "./util.ts";

const sim = { urma: { library: SIM_PATH } };

test(
  "sessions take prepared jetties and cached aux areas; the pool refills behind them",
  async () => {
    const u = await loadSim();
    const { server } = await startServer({ fabrics: ["urma"], providerOptions: sim });
    try {
      const warm = await client(server, { fabric: "urma", providerOptions: sim });
      await warm.close();
      const hub = UrmaHub.open.find((h) => h.lib.path.endsWith("liburma.so.0"))!;
      await until(() => sessionObjects(u) === 0, 5000, "the first session to close");
      hub.pool.fill("RM");
      const before = { ...hub.pool.counters };
      const c = await client(server, { fabric: "urma", providerOptions: sim });
      try {
        assertEquals(c.fabric, "urma (simulated)", JSON.stringify(c.handshake));
        const r = await c.call("test.Fabric", "Echo", pattern(32, 4));
        assertEquals(r.response, pattern(32, 4));
      } finally {
        await c.close();
      }
      const after = hub.pool.counters;
      assertEquals(after.misses, before.misses, "no jetty was created on the session's path");
      assertEquals(
        after.hits - before.hits,
        2,
        "client and server side each took a prepared jetty",
      );
      assertEquals(after.auxMisses, before.auxMisses, "both aux areas came from the cache");
      assertEquals(after.auxHits - before.auxHits, 2);
      await until(() => hub.pool.waiting("RM") >= 8, 3000, "the pool to refill");
    } finally {
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM, timeoutMs: 30_000 },
);
