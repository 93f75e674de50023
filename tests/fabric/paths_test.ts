/**
 * Every path end to end over the shm fabric (server and client in this process): the handshake,
 * EAGER, LAZY, BULK and TCP_FALLBACK with byte-exact results, the path really taken (a KV_GET of
 * a stored value answers inline when it fits and by object reference when not), pipelining, and
 * the async submit / progress / poll / wait API.
 */
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { RpcError } from "../../rpc/errors.ts";
import {
  decodeGetResponse,
  encodeKeyRequest,
  encodePutRequest,
} from "../../examples/demo/codec.ts";
import { client, expectedSized, FABRIC_LABEL, pattern, sized, startServer } from "./util.ts";

test("handshake: ESTABLISHED over the fabric, with the client and server state machines' history", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    assertEquals(c.fabric, FABRIC_LABEL);
    assertEquals(c.handshake.state, "ESTABLISHED");
    assertEquals(c.handshake.history.map((h) => h.to), [
      "C_HELLO_WAIT",
      "C_SETUP",
      "C_ACK_SEND",
      "ESTABLISHED",
    ]);
    assertEquals(server.fabric!.history.at(-1)?.state, "ESTABLISHED");
    assertEquals(server.fabric!.sessions.size, 1);
  } finally {
    await c.close();
    await server.close();
  }
});

test("EAGER, LAZY, BULK and TCP_FALLBACK each carry exact bytes and report their path", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    const small = pattern(100, 1);
    const e = await c.call("test.Fabric", "Echo", small, { attachment: pattern(50, 2) });
    assertEquals([e.path, e.fabric], ["EAGER", FABRIC_LABEL]);
    assertEquals(e.response, small);
    assertEquals(e.attachment, pattern(50, 2), "attachment echoed inline");

    const lazy = await c.call("test.Fabric", "Sized", sized(100_000), {
      expectedResponseBytes: 100_000,
    });
    assertEquals(lazy.path, "LAZY");
    assertEquals(lazy.response, expectedSized(100_000));

    const big = pattern(300_000, 3);
    const b = await c.call("test.Fabric", "Echo", big);
    assertEquals(b.path, "BULK", "a 300 KB request goes BULK");
    assertEquals(b.response, big, "and comes back whole (by object reference)");

    const t = await c.call("test.Fabric", "Echo", small, { forcePath: "TCP_FALLBACK" });
    assertEquals([t.path, t.fabric], ["TCP_FALLBACK", "tcp"]);
    assertEquals(t.response, small);

    const forcedLazy = await c.call("test.Fabric", "Echo", small, { forcePath: "LAZY" });
    assertEquals(
      forcedLazy.path,
      "EAGER",
      "a small answer to a LAZY-preferring call still fits inline",
    );
    const st = c.stats();
    assertEquals(st.calls, { EAGER: 2, LAZY: 1, BULK: 1, TCP_FALLBACK: 1 });
  } finally {
    await c.close();
    await server.close();
  }
});

test("BULK requests answered by reference give their staging back: many times the staging area, all BULK", async () => {
  // Each call holds a staging extent for its request and one for the read of its answer; the
  // request's must go back when the answer arrives, or staging fills and every later answer is
  // redone over TCP. 24 × 300 KB each way is several times the 2 MiB staging area.
  const { server } = await startServer();
  const c = await client(server);
  try {
    const big = pattern(300_000, 5);
    const paths: string[] = [];
    for (let k = 0; k < 24; k++) {
      const r = await c.call("test.Fabric", "Echo", big);
      assertEquals(r.response, big);
      paths.push(r.path);
    }
    assertEquals(paths, Array(24).fill("BULK"), "no call redone over TCP");
  } finally {
    await c.close();
    await server.close();
  }
});

test("KV_GET of a stored value: inline when it fits the slot (EAGER), by reference when not (LAZY)", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    await c.call("verbus.Demo", "KvPut", encodePutRequest("small", pattern(200, 4)));
    await c.call("verbus.Demo", "BigPut", encodePutRequest("large", pattern(20_000, 5)));
    const s = await c.call("verbus.Demo", "KvGet", encodeKeyRequest("small"));
    assertEquals(s.path, "EAGER");
    assertEquals(decodeGetResponse(s.response), pattern(200, 4));
    const l = await c.call("verbus.Demo", "KvGet", encodeKeyRequest("large"));
    assertEquals(
      l.path,
      "LAZY",
      "the client could not know the size: the server chose a reference",
    );
    assertEquals(decodeGetResponse(l.response), pattern(20_000, 5));
  } finally {
    await c.close();
    await server.close();
  }
});

test("errors travel the fabric: unknown method → TCP (not in the method table), handler error → RpcError", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    const err = await assertRejects(
      () => c.call("verbus.Demo", "KvGet", new Uint8Array(1)),
      RpcError,
    );
    assertEquals(err.errorCode, 1003, "EREQUEST from the demo decoder, answered over shm");
    const nm = await assertRejects(
      () => c.call("test.Fabric", "Nope", new Uint8Array(1)),
      RpcError,
    );
    assertEquals(nm.errorCode, 1002, "ENOMETHOD (a method the server never listed goes over TCP)");
  } finally {
    await c.close();
    await server.close();
  }
});

test("pipelining: 2000 calls in flight on 64 slots complete with their own answers", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    const calls = Array.from(
      { length: 2000 },
      (_, i) => c.call("test.Fabric", "Echo", pattern(64, i)),
    );
    const rs = await Promise.all(calls);
    rs.forEach((r, i) => assertEquals(r.response, pattern(64, i), `call ${i}`));
    assert(rs.every((r) => r.path === "EAGER"), "all over the fabric (backpressure, not TCP)");
  } finally {
    await c.close();
    await server.close();
  }
});

test("async API: submit / progress / poll / wait", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    const hs = Array.from(
      { length: 10 },
      (_, i) => c.submit("test.Fabric", "Echo", pattern(32, i)),
    );
    assertEquals(c.poll(hs[0]), undefined, "not done right after submit");
    const first = await c.wait(hs[0]);
    assertEquals(first.response, pattern(32, 0));
    assert(c.progress() >= 0, "progress() advances by hand and says how many calls it completed");
    await new Promise((r) => setTimeout(r, 10)); // the progress loop completes the rest
    for (let i = 1; i < 10; i++) {
      const r = c.poll(hs[i]) ?? await c.wait(hs[i]);
      assertEquals(r.response, pattern(32, i));
    }
    await assertRejects(() => c.wait(hs[3]), Error, "no call with handle");
  } finally {
    await c.close();
    await server.close();
  }
});

test("a fabric call past its deadline rejects with TIMEOUT; the session keeps working", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    const e = await assertRejects(() =>
      c.call("test.Fabric", "Slow", new TextEncoder().encode("300"), { timeoutMs: 50 })
    );
    assertEquals((e as { code?: string }).code, "TIMEOUT");
    await new Promise((r) => setTimeout(r, 400)); // the late answer arrives and frees the slot
    const r = await c.call("test.Fabric", "Echo", pattern(10, 9));
    assertEquals([r.path, r.response], ["EAGER", pattern(10, 9)]);
  } finally {
    await c.close();
    await server.close();
  }
});

test("log_id and the timeout travel the fabric descriptor to the handler's context", async () => {
  const seen: unknown[] = [];
  const { serve } = await import("../../rpc/server/server.ts");
  const s2 = await serve({
    port: 0,
    services: {
      "t.Ctx": {
        Get: (_r, ctx) => {
          seen.push([ctx.logId, ctx.timeoutMs]);
          return new Uint8Array(1);
        },
      },
    },
    fabric: {
      region: { slots: 8, slotSize: 4096, bulkSize: 65536, objectSlabs: 2, stagingSize: 1 << 17 },
    },
    logger: { warn: () => {} },
  });
  const { connect } = await import("../../rpc/client/client.ts");
  const c = await connect({ host: "127.0.0.1", port: s2.port }, {
    region: { slots: 8, slotSize: 4096, bulkSize: 65536, objectSlabs: 2, stagingSize: 1 << 17 },
  });
  try {
    const r = await c.call("t.Ctx", "Get", new Uint8Array(1), {
      logId: 0x1_2345_6789,
      timeoutMs: 777,
    });
    const r2 = await c.call("t.Ctx", "Get", new Uint8Array(1), { timeoutMs: 778 });
    assertEquals([r.path, r2.path], ["EAGER", "EAGER"]);
    assertEquals(seen, [[0x1_2345_6789, 777], [undefined, 778]]);
  } finally {
    await c.close();
    await s2.close();
  }
}, { skip: FABRIC_LABEL === "shm" ? false : "uses the default fabric" });

test("an async handler slower than the idle threshold: its answer wakes a sleeping client at once", async () => {
  const { server } = await startServer();
  const c = await client(server);
  try {
    for (const ms of [40, 120]) {
      const t0 = performance.now();
      const r = await c.call("test.Fabric", "Slow", new TextEncoder().encode(String(ms)));
      const took = performance.now() - t0;
      assertEquals(r.path, "EAGER");
      // Both progress loops went to sleep long before the answer; the answer's kick (not the
      // 2 s idle timeout) must end the wait.
      assert(took < ms + 500, `answered after ${took.toFixed(0)} ms for a ${ms} ms handler`);
    }
  } finally {
    await c.close();
    await server.close();
  }
});
