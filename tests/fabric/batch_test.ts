/**
 * Batching in the API: `callMany` posts every fabric call of the batch before one shared doorbell
 * (one flush and one kick for the whole batch), answers in order, and behaves like `call` when
 * the batch is larger than the free slots or a call goes over TCP.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { client, pattern, SHM_ONLY, SMALL_REGION, startServer } from "./util.ts";

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

test("calls submitted in one turn share one doorbell without callMany (coalesced)", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    await c.call("test.Fabric", "Echo", pattern(8, 0));
    const s = c.session!;
    const before = s.stats.doorbells;
    const ps = Array.from({ length: 12 }, (_, i) => c.call("test.Fabric", "Echo", pattern(40, i)));
    const rs = await Promise.all(ps);
    rs.forEach((r, i) => assertEquals([r.path, r.response], ["EAGER", pattern(40, i)]));
    assertEquals(s.stats.doorbells - before, 1, "12 calls of one turn rang one doorbell");
  } finally {
    await c.close();
    await server.close();
  }
});

test(
  "the server answers a batch of ready requests with one doorbell; the client completes them in one round",
  async () => {
    const { server } = await startServer();
    const c = await client(server);
    try {
      await c.call("test.Fabric", "Echo", pattern(8, 0));
      const s = c.session!, ss = [...server.fabric!.sessions][0];
      const kicks = ss.doorbells, completed = s.stats.completed;
      const batches = s.stats.completionBatches;
      const calls = Array.from({ length: 16 }, (_, i) => ({
        service: "test.Fabric",
        method: "Echo",
        request: pattern(64, i),
      }));
      const rs = await c.callMany(calls);
      assertEquals(rs.map((r) => r.response), calls.map((x) => x.request));
      // Echo answers synchronously: all 16 answers are written inside the server's round (a handler
      // answered after a promise hop would ring once per answer, see below).
      assertEquals(ss.doorbells - kicks, 1, "one server doorbell for the 16 answers");
      assertEquals(s.stats.completed - completed, 16);
      assertEquals(s.stats.completionBatches - batches, 1, "16 answers completed in one round");
      // The contrast: an async handler answers between rounds, one doorbell per answer.
      const k2 = ss.doorbells;
      const slow = Array.from({ length: 4 }, () => ({
        service: "test.Fabric",
        method: "Slow",
        request: new TextEncoder().encode("1"),
      }));
      await c.callMany(slow);
      assertEquals(ss.doorbells - k2, 4, "late answers ring one doorbell each");
    } finally {
      await c.close();
      await server.close();
    }
  },
  { skip: SHM_ONLY },
);
