/**
 * At most once: a call whose handler ran is never redone. When the server's object pool has no
 * room for a (LAZY) answer, the server holds the answer until RECLAIMs or the TTL sweep free room,
 * in order and bounded; past the call's deadline or the bound the call fails with ERESPONSE saying
 * the server ran it. (Before, the server answered EOVERCROWDED and the client redid the call over
 * TCP: the handler ran twice.) Runs over every fabric of the region suite.
 */
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { EOVERCROWDED, ERESPONSE, RpcError } from "../../rpc/errors.ts";
import type { Server } from "../../rpc/server/server.ts";
import type { ServerSession } from "../../rpc/session/server/server_session.ts";
import { client, SMALL_REGION, startServer, until } from "./util.ts";

/** A service whose handler counts its runs and answers `n` bytes (n = the request's u32). */
function counting(runs: { n: number }) {
  return {
    "t.Count": {
      Next: (req: Uint8Array) => {
        runs.n++;
        const n = new DataView(req.buffer, req.byteOffset, 4).getUint32(0, true);
        const out = new Uint8Array(n);
        out.fill(runs.n & 0xff);
        return out;
      },
      Crowded: (req: Uint8Array) => {
        runs.n++;
        throw new RpcError(EOVERCROWDED, new TextDecoder().decode(req));
      },
    },
  };
}

function size(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
}

/** A server whose sessions get an object pool of `slabs` × 64 KiB (and the `hold` options). */
function tinyPool(runs: { n: number }, slabs: number, hold: Record<string, number> = {}) {
  return startServer({ region: { ...SMALL_REGION, objectSlabs: slabs }, ...hold }, counting(runs));
}

function sessionOf(server: Server): ServerSession {
  return [...server.fabric!.sessions][0];
}

test("many large answers through a 2-slab pool: each handler runs once, all answered", async () => {
  const runs = { n: 0 };
  const { server, log } = await tinyPool(runs, 2);
  const c = await client(server);
  try {
    const calls = 24, bytes = 40_000; // 960 KB of answers at once through 128 KiB of pool
    const results = await Promise.all(
      Array.from(
        { length: calls },
        () => c.call("t.Count", "Next", size(bytes), { expectedResponseBytes: bytes }),
      ),
    );
    assertEquals(runs.n, calls, "every handler ran exactly once");
    assertEquals(new Set(results.map((r) => r.response[0])).size, calls, "each its own answer");
    for (const r of results) assertEquals(r.response.length, bytes);
    const ss = sessionOf(server);
    assert(ss.answers.heldTotal > 0, "some answers waited for pool room");
    assertEquals([ss.answers.held, ss.answers.noRoomFailures], [0, 0]);
    // Calls the selector sent over TCP from the start (server pool pressure) ran once too.
    assertEquals(c.stats().calls.LAZY + c.stats().calls.TCP_FALLBACK, calls);
    assert(log.infos.some((l) => /waits for object-pool room/.test(l)), "said once");
  } finally {
    await c.close();
    await server.close();
  }
}, { timeoutMs: 60_000 });

test(
  "a pool that never frees within the deadline: the call fails saying the server ran it",
  async () => {
    const runs = { n: 0 };
    const { server, log } = await tinyPool(runs, 1);
    const c = await client(server);
    try {
      c.session!.lifecycle.skipReclaim = true; // the one slab stays taken (TTL 30 s)
      const first = await c.call("t.Count", "Next", size(40_000), {
        expectedResponseBytes: 40_000,
      });
      assertEquals([first.path, runs.n], ["LAZY", 1]);
      const e = await assertRejects(
        () =>
          c.call("t.Count", "Next", size(40_000), {
            expectedResponseBytes: 40_000,
            timeoutMs: 1500,
            forcePath: "LAZY", // (the snapshot may show the full pool: the call must reach it)
          }),
        RpcError,
      );
      assertEquals(e.errorCode, ERESPONSE, e.message);
      assert(/the server ran t\.Count\.Next/.test(e.errorText), e.errorText);
      assert(/no room for the 40000-byte answer/.test(e.errorText), e.errorText);
      assert(/deadline/.test(e.errorText) && /not redone/.test(e.errorText), e.errorText);
      assertEquals(runs.n, 2, "the handler ran exactly once for that call");
      assertEquals(c.stats().calls.TCP_FALLBACK, 0, "nothing was redone over TCP");
      const ss = sessionOf(server);
      assertEquals([ss.answers.held, ss.answers.noRoomFailures], [0, 1]);
      assert(log.warnings.some((w) => /no room/.test(w)), "logged");
      // The client gives the object back: the session goes on over the fabric.
      c.session!.lifecycle.skipReclaim = false;
      c.session!.reclaim(c.session!.lifecycle.lastObject, c.session!.lifecycle.lastGeneration);
      await until(() => ss.pool.usedSlabs === 0, 5000, "the reclaim");
      const r = await c.call("t.Count", "Next", size(30_000), { expectedResponseBytes: 30_000 });
      assertEquals([r.path, r.response.length, runs.n], ["LAZY", 30_000, 3]);
    } finally {
      await c.close();
      await server.close();
    }
  },
  { timeoutMs: 30_000 },
);

test("a held answer is written as soon as the client reclaims, in order", async () => {
  const runs = { n: 0 };
  const { server } = await tinyPool(runs, 1);
  const c = await client(server);
  try {
    c.session!.lifecycle.skipReclaim = true;
    await c.call("t.Count", "Next", size(40_000), { expectedResponseBytes: 40_000 });
    const held = Array.from(
      { length: 3 },
      () =>
        c.call("t.Count", "Next", size(40_000), {
          expectedResponseBytes: 40_000,
          forcePath: "LAZY",
          timeoutMs: 20_000,
        }),
    );
    const ss = sessionOf(server);
    await until(() => ss.answers.held === 3, 5000, "three answers held");
    assertEquals(runs.n, 4);
    c.session!.lifecycle.skipReclaim = false;
    c.session!.reclaim(c.session!.lifecycle.lastObject, c.session!.lifecycle.lastGeneration);
    const rs = await Promise.all(held);
    assertEquals(rs.map((r) => [r.path, r.response[0]]), [["LAZY", 2], ["LAZY", 3], ["LAZY", 4]]);
    assertEquals(runs.n, 4, "no handler ran again");
  } finally {
    await c.close();
    await server.close();
  }
}, { timeoutMs: 30_000 });

test("past the hold bound, and larger than the pool: fail at once, run once", async () => {
  const runs = { n: 0 };
  const { server } = await tinyPool(runs, 1, { heldAnswers: 1 });
  const c = await client(server);
  try {
    c.session!.lifecycle.skipReclaim = true;
    await c.call("t.Count", "Next", size(40_000), { expectedResponseBytes: 40_000 });
    const opts = { expectedResponseBytes: 40_000, forcePath: "LAZY" as const, timeoutMs: 2000 };
    const a = c.call("t.Count", "Next", size(40_000), opts);
    const ss = sessionOf(server);
    await until(() => ss.answers.held === 1, 5000, "one answer held");
    const e = await assertRejects(() => c.call("t.Count", "Next", size(40_000), opts), RpcError);
    assertEquals(e.errorCode, ERESPONSE);
    assert(
      /already holds 1 answers/.test(e.errorText) && /heldAnswers 1/.test(e.errorText),
      e.errorText,
    );
    await assertRejects(() => a, RpcError, "deadline");
    assertEquals(runs.n, 3, "each handler ran once");
    // Larger than the whole pool: fails at once (without a size hint), or goes over TCP (with one).
    const big = await assertRejects(() => c.call("t.Count", "Next", size(100_000)), RpcError);
    assert(/larger than the whole pool \(\d+ bytes/.test(big.errorText), big.errorText);
    assertEquals(runs.n, 4);
    const tcp = await c.call("t.Count", "Next", size(100_000), { expectedResponseBytes: 100_000 });
    assertEquals([tcp.path, tcp.response.length, runs.n], ["TCP_FALLBACK", 100_000, 5]);
    assertEquals(c.stats().calls.TCP_FALLBACK, 1, "only the call sent over TCP from the start");
  } finally {
    await c.close();
    await server.close();
  }
}, { timeoutMs: 30_000 });

test(
  "the session ends with answers held: they fail saying so, never redone; nothing held",
  async () => {
    const runs = { n: 0 };
    const { server } = await tinyPool(runs, 1);
    const c = await client(server);
    try {
      c.session!.lifecycle.skipReclaim = true;
      await c.call("t.Count", "Next", size(40_000), { expectedResponseBytes: 40_000 });
      const opts = { expectedResponseBytes: 40_000, forcePath: "LAZY" as const, timeoutMs: 20_000 };
      const held = [
        c.call("t.Count", "Next", size(40_000), opts),
        c.call("t.Count", "Next", size(40_000), opts),
      ];
      const ss = sessionOf(server);
      await until(() => ss.answers.held === 2, 5000, "two answers held");
      ss.close("test ends it");
      for (const p of held) {
        const e = await assertRejects(() => p);
        assert(/2 answer\(s\) of calls the server had run/.test(String(e)), String(e));
      }
      assertEquals(ss.answers.held, 0, "the held answers were dropped");
      assertEquals(runs.n, 3, "none was redone");
    } finally {
      await c.close();
      await server.close();
    }
  },
  { timeoutMs: 30_000 },
);

test("an EOVERCROWDED answer is never redone; an older server's 'pool full' is ERESPONSE", async () => {
  const runs = { n: 0 };
  const { server } = await startServer({}, counting(runs));
  const c = await client(server);
  try {
    const enc = new TextEncoder();
    // What a server before at-most-once answers sent when its pool had no room (after running it).
    const old = await assertRejects(
      () => c.call("t.Count", "Crowded", enc.encode("object pool full (70000 bytes)")),
      RpcError,
    );
    assertEquals(old.errorCode, ERESPONSE);
    assert(/ran the call/.test(old.errorText) && /not redone/.test(old.errorText), old.errorText);
    // A handler's own EOVERCROWDED reaches the caller as such (as on TCP), run once.
    const own = await assertRejects(
      () => c.call("t.Count", "Crowded", enc.encode("busy")),
      RpcError,
    );
    assertEquals([own.errorCode, own.errorText], [EOVERCROWDED, "busy"]);
    assertEquals(runs.n, 2, "each ran once");
    assertEquals(c.stats().calls.TCP_FALLBACK, 0, "nothing went over TCP");
  } finally {
    await c.close();
    await server.close();
  }
});
