/**
 * Each fault flag (what `verbus call --simulate-*` sets) doing what it says — the fabric really
 * goes down (the server sees it, the session is re-negotiated), the Nth fabric operation really
 * fails inside the endpoint (its call runs over TCP exactly once) —, the selector's answers under
 * the others, and the
 * object lifecycle: N objects allocated, read and reclaimed; a stale reference; a repeated
 * RECLAIM; a TTL expiry — read back from the server's control-page telemetry.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { encodeKeyRequest } from "../../examples/demo/codec.ts";
import type { Client } from "../../rpc/client/client.ts";
import { client, FABRIC_LABEL, pattern, startServer, until } from "./util.ts";

async function paths(c: Client, n: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await c.call("test.Fabric", "Echo", pattern(16, i))).path);
  return out;
}

/** Calls test.Fabric/Count with a fresh key; returns its path and how often the server ran it. */
async function counted(c: Client, key: string): Promise<{ path: string; runs: number }> {
  const r = await c.call("test.Fabric", "Count", new TextEncoder().encode(key));
  return {
    path: r.path,
    runs: new DataView(r.response.buffer, r.response.byteOffset).getUint32(0, true),
  };
}

test(
  "fault: fabric down takes the session down: the server closes it, calls go TCP, then it is re-negotiated",
  async () => {
    const { server } = await startServer();
    const warnings: string[] = [];
    const c = await client(server, {
      faults: { fabricDown: true },
      reestablishMs: 50,
      logger: { warn: (m) => warnings.push(m) },
    });
    try {
      assertEquals(c.handshake.state, "ESTABLISHED", "the session was made…");
      assertEquals(c.fabric, "tcp", "…and taken down at once");
      assert(warnings.some((w) => w.includes("simulated fabric down")), warnings.join("\n"));
      await until(() => server.fabric!.sessions.size === 0, 5000, "the server to close its side");
      assertEquals(await paths(c, 3), ["TCP_FALLBACK", "TCP_FALLBACK", "TCP_FALLBACK"]);
      let last = "";
      const end = Date.now() + 10_000;
      while (last !== "EAGER" && Date.now() < end) {
        last = (await c.call("test.Fabric", "Echo", pattern(16, 1))).path;
        if (last !== "EAGER") await new Promise((r) => setTimeout(r, 20));
      }
      assertEquals(last, "EAGER", "re-negotiated: calls are back on the fabric");
      assertEquals(c.fabric, FABRIC_LABEL);
      assertEquals(server.fabric!.sessions.size, 1);
    } finally {
      await c.close();
      await server.close();
    }
  },
  { timeoutMs: 30_000 },
);

for (const n of [1, 2, 3, 5]) {
  test(
    `fault: fabric op ${n} really fails in the endpoint → that call runs over TCP exactly once`,
    async () => {
      const { server } = await startServer();
      const warnings: string[] = [];
      const c = await client(server, {
        faults: { opFail: n },
        reestablishMs: 50,
        logger: { warn: (m) => warnings.push(m) },
      });
      try {
        assertEquals(c.fabric, FABRIC_LABEL);
        const got: { path: string; runs: number }[] = [];
        for (let i = 0; i < 6; i++) got.push(await counted(c, `op${n}-call${i}`));
        assertEquals(got.map((g) => g.runs), [1, 1, 1, 1, 1, 1], "every call applied once");
        const first = got.findIndex((g) => g.path === "TCP_FALLBACK");
        assert(first >= 0, `one call fell back: ${JSON.stringify(got)}`);
        assert(got.slice(0, first).every((g) => g.path === "EAGER"), JSON.stringify(got));
        assert(
          warnings.some((w) => w.includes(`simulated failure of fabric operation ${n}`)),
          `the endpoint's failure is logged: ${warnings.join("\n")}`,
        );
        // (The failed op may be a call's post — counted as an error — or the session's own read of
        // the server's control page, which fails the session before any call is posted.)
        assert(c.stats().fallbacks >= 1, JSON.stringify(c.stats()));
        // The server hears of it (Bye) and the client negotiates a new, healthy session.
        const end = Date.now() + 10_000;
        let back = "";
        for (let i = 0; back !== "EAGER" && Date.now() < end; i++) {
          const r = await counted(c, `op${n}-after${i}`);
          assertEquals(r.runs, 1);
          back = r.path;
          if (back !== "EAGER") await new Promise((r) => setTimeout(r, 20));
        }
        assertEquals(back, "EAGER", "re-negotiated after the failure");
        assertEquals(
          server.fabric!.sessions.size,
          1,
          "the failed session was closed on the server",
        );
      } finally {
        await c.close();
        await server.close();
      }
    },
    { timeoutMs: 30_000 },
  );
}

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
