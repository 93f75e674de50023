/**
 * The selector's answers under each fault flag (what `verbus call --simulate-*` sets), and the
 * object lifecycle: N objects allocated, read and reclaimed; a stale reference; a repeated
 * RECLAIM; a TTL expiry — read back from the server's control-page telemetry.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { encodeKeyRequest } from "../../examples/demo/codec.ts";
import type { Client } from "../../rpc/client.ts";
import { client, FABRIC_LABEL, pattern, startServer } from "./util.ts";

async function paths(c: Client, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await c.call("test.Fabric", "Echo", pattern(16, i))).path);
  return out;
}

test("fault: fabric down → every call TCP_FALLBACK (and still answered)", async () => {
  const { server } = await startServer();
  const c = await client(server, { faults: { fabricDown: true } });
  try {
    assertEquals(c.fabric, FABRIC_LABEL, "the session exists…");
    assertEquals(
      await paths(c, 3),
      ["TCP_FALLBACK", "TCP_FALLBACK", "TCP_FALLBACK"],
      "…but the selector avoids it",
    );
    assertEquals(c.stats().fallbacks, 3);
  } finally {
    await c.close();
    await server.close();
  }
});

test("fault: the 3rd fabric op fails → that call retries over TCP, the rest stay EAGER, one error counted", async () => {
  const { server } = await startServer();
  const c = await client(server, { faults: { opFail: 3 } });
  try {
    assertEquals(await paths(c, 5), ["EAGER", "EAGER", "TCP_FALLBACK", "EAGER", "EAGER"]);
    assertEquals([c.stats().errors, c.stats().fallbacks], [1, 1]);
  } finally {
    await c.close();
    await server.close();
  }
});

test("fault: error count over the threshold → TCP; at the threshold → still the fabric", async () => {
  const { server } = await startServer();
  const over = await client(server, { faults: { errors: 9 } });
  const at = await client(server, { faults: { errors: 8 } });
  try {
    assertEquals(await paths(over, 2), ["TCP_FALLBACK", "TCP_FALLBACK"]);
    assertEquals(await paths(at, 2), ["EAGER", "EAGER"]);
  } finally {
    await over.close();
    await at.close();
    await server.close();
  }
});

for (const kind of ["ring", "objpool"] as const) {
  test(`fault: server ${kind} pressure (published in its control page) → TCP after the snapshot refresh`, async () => {
    const { server } = await startServer();
    const c = await client(server, { faults: { serverPressure: kind }, refreshEvery: 1 });
    const calm = await client(server, { refreshEvery: 1 });
    try {
      const snap = await c.refreshServerSnapshot();
      assert(snap !== null, "snapshot read over the fabric");
      assertEquals(
        kind === "ring" ? snap.ringOccupancy : snap.objectPoolUsage,
        1,
        "pressure reads as full",
      );
      assertEquals(await paths(c, 2), ["TCP_FALLBACK", "TCP_FALLBACK"]);
      await calm.refreshServerSnapshot();
      assertEquals(
        await paths(calm, 2),
        ["EAGER", "EAGER"],
        "another session of the same server is unaffected",
      );
    } finally {
      await c.close();
      await calm.close();
      await server.close();
    }
  });
}

test("lifecycle: N LAZY objects allocated, read and reclaimed; pool back to empty", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    const before = (await c.refreshServerSnapshot())!;
    for (let i = 0; i < 20; i++) {
      const r = await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:64k"), {
        forcePath: "LAZY",
      });
      assertEquals([r.path, r.response.length], ["LAZY", 65536]);
    }
    await c.drain();
    const after = (await c.refreshServerSnapshot())!;
    assertEquals(after.objAllocs - before.objAllocs, 20);
    assertEquals(after.objReclaims - before.objReclaims, 20);
    assertEquals(after.objectPoolUsed, 0, "every slab free again");
  } finally {
    await c.close();
    await server.close();
  }
});

test("lifecycle: stale and repeated RECLAIMs are counted and harmless; bad ids too", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:64k"), { forcePath: "LAZY" });
    await c.drain();
    const s = c.session!;
    const { lastObject, lastGeneration } = s.lifecycle;
    const before = (await c.refreshServerSnapshot())!;
    s.reclaim(lastObject, lastGeneration); // repeated
    s.reclaim(lastObject, lastGeneration + 1000); // stale generation
    s.reclaim(9999, 1); // id out of range
    await c.drain();
    const after = (await c.refreshServerSnapshot())!;
    assertEquals(after.objStaleRefs - before.objStaleRefs, 2, "repeat + stale");
    assertEquals(after.objBadRefs - before.objBadRefs, 1, "out-of-range id");
    assertEquals(after.objReclaims, before.objReclaims, "nothing freed twice");
    const r = await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:64k"), {
      forcePath: "LAZY",
    });
    assertEquals(r.response.length, 65536, "the session still works");
  } finally {
    await c.close();
    await server.close();
  }
});

test("lifecycle: an object nobody reclaims is freed by the TTL sweep", async () => {
  const { server, log } = await startServer({ objectTtlMs: 50 });
  const c = await client(server);
  try {
    c.session!.lifecycle.skipReclaim = true;
    await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:64k"), { forcePath: "LAZY" });
    c.session!.lifecycle.skipReclaim = false;
    const held = (await c.refreshServerSnapshot())!;
    assertEquals(held.objectPoolUsed, 2, "64 KiB + header/trailer holds 2 slabs");
    const end = Date.now() + 5000;
    let snap = held;
    while (snap.objTtlReclaims === 0 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
      const s = await c.refreshServerSnapshot();
      assert(s !== null, `session alive (${c.handshake.reason ?? ""} ${log.warnings.join("; ")})`);
      snap = s;
    }
    assertEquals([snap.objTtlReclaims, snap.objectPoolUsed], [1, 0], "freed by TTL");
  } finally {
    await c.close();
    await server.close();
  }
});
