/**
 * Batching in the API: `callMany` posts every fabric call of the batch before one shared doorbell
 * (one flush and one kick for the whole batch), answers in order, and behaves like `call` when
 * the batch is larger than the free slots or a call goes over TCP.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { client, pattern, SMALL_REGION, startServer } from "./util.ts";

test("callMany: 16 calls share one doorbell and resolve in order", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    await c.call("test.Fabric", "Echo", pattern(8, 0));
    const s = c.session!;
    const before = s.stats.doorbells;
    const calls = Array.from({ length: 16 }, (_, i) => ({
      service: "test.Fabric",
      method: "Echo",
      request: pattern(100, i),
    }));
    const rs = await c.callMany(calls);
    assertEquals(rs.map((r) => r.response), calls.map((x) => x.request), "answers in order");
    assertEquals(rs.map((r) => r.path), calls.map(() => "EAGER"));
    assertEquals(s.stats.doorbells - before, 1, "one doorbell for the batch");
    const seq = s.stats.doorbells;
    for (const x of calls.slice(0, 4)) await c.call(x.service, x.method, x.request);
    assertEquals(s.stats.doorbells - seq, 4, "one doorbell per call() (the contrast)");
  } finally {
    await c.close();
    await server.close();
  }
});

test("callMany: a batch larger than the ring waits for slots; TCP calls mix in", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    const n = SMALL_REGION.slots * 3;
    const calls = Array.from({ length: n }, (_, i) => ({
      service: "test.Fabric",
      method: "Echo",
      request: pattern(64, i),
      options: i % 10 === 0 ? { forcePath: "TCP_FALLBACK" as const } : undefined,
    }));
    const rs = await c.callMany(calls);
    assertEquals(rs.length, n);
    rs.forEach((r, i) => {
      assertEquals(r.response, pattern(64, i), `call ${i}`);
      assertEquals(r.path, i % 10 === 0 ? "TCP_FALLBACK" : "EAGER", `path of call ${i}`);
    });
    const empty = await c.callMany([]);
    assertEquals(empty, []);
    let failed = false;
    await c.callMany([{ service: "test.Fabric", method: "NoSuchMethod", request: pattern(4, 1) }])
      .catch(() => (failed = true));
    assert(failed, "an unknown method rejects the batch like Promise.all");
  } finally {
    await c.close();
    await server.close();
  }
});
