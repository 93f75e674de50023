/**
 * At most once: a call whose handler ran is never redone. When the server's object pool has no
 * room for a (LAZY) answer, the server holds the answer until RECLAIMs or the TTL sweep free room,
 * in order and bounded; past the call's deadline or the bound the call fails with ERESPONSE saying
 * the server ran it. (Before, the server answered EOVERCROWDED and the client redid the call over
 * TCP: the handler ran twice.) Runs over every fabric of the region suite.
 */
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { EOVERCROWDED, ERESPONSE, RpcError } from "../../rpc/errors.ts";
import type { Client, ClientCallOptions } from "../../rpc/client/client.ts";
import type { Server } from "../../rpc/server/server.ts";
import type { ServerSession } from "../../rpc/session/server/server_session.ts";
import { countingService, sizeRequest as size } from "../fixtures/counting_service.ts";
import { client, type Logged, SMALL_REGION, startServer, until } from "./util.ts";

/** A server whose sessions get an object pool of `slabs` × 64 KiB (and the `hold` options). */
function tinyPool(runs: { n: number }, slabs: number, hold: Record<string, number> = {}) {
  return startServer(
    { region: { ...SMALL_REGION, objectSlabs: slabs }, ...hold },
    countingService(runs),
  );
}

function sessionOf(server: Server): ServerSession {
  return [...server.fabric!.sessions][0];
}

/** What {@link withPinnedPool} gives its test. */
interface Pinned {
  runs: { n: number };
  c: Client;
  ss: ServerSession;
  log: Logged;
  /** A LAZY call for `bytes` (forced: a snapshot showing the full pool must not send it to TCP). */
  lazy(bytes: number, timeoutMs: number): ReturnType<Client["call"]>;
  /** The client gives the pinned object back (and reclaims from now on). */
  unpin(): void;
}

/**
 * Runs `fn` against a server with a 1-slab pool (and `hold` options) whose slab a first LAZY
 * answer pins: the client read it and does not reclaim it (its TTL is 30 s).
 */
async function withPinnedPool(
  hold: Record<string, number>,
  fn: (p: Pinned) => Promise<void>,
): Promise<void> {
  const runs = { n: 0 };
  const { server, log } = await tinyPool(runs, 1, hold);
  const c = await client(server);
  try {
    const s = c.session!;
    s.lifecycle.skipReclaim = true;
    const first = await c.call("t.Count", "Next", size(40_000), { expectedResponseBytes: 40_000 });
    assertEquals([first.path, runs.n], ["LAZY", 1], "the first answer pins the one slab");
    await fn({
      runs,
      c,
      log,
      ss: sessionOf(server),
      lazy: (bytes, timeoutMs) => {
        const o: ClientCallOptions = { expectedResponseBytes: bytes, forcePath: "LAZY", timeoutMs };
        return c.call("t.Count", "Next", size(bytes), o);
      },
      unpin: () => {
        s.lifecycle.skipReclaim = false;
        s.reclaim(s.lifecycle.lastObject, s.lifecycle.lastGeneration);
      },
    });
  } finally {
    await c.close();
    await server.close();
  }
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
  () =>
    withPinnedPool({}, async ({ runs, c, ss, log, lazy, unpin }) => {
      const e = await assertRejects(() => lazy(40_000, 1500), RpcError);
      assertEquals(e.errorCode, ERESPONSE, e.message);
      assert(/the server ran t\.Count\.Next/.test(e.errorText), e.errorText);
      assert(/no room for the 40000-byte answer/.test(e.errorText), e.errorText);
      assert(/deadline/.test(e.errorText) && /not redone/.test(e.errorText), e.errorText);
      assertEquals(runs.n, 2, "the handler ran exactly once for that call");
      assertEquals(c.stats().calls.TCP_FALLBACK, 0, "nothing was redone over TCP");
      assertEquals([ss.answers.held, ss.answers.noRoomFailures], [0, 1]);
      assert(log.warnings.some((w) => /no room/.test(w)), "logged");
      // The client gives the object back: the session goes on over the fabric.
      unpin();
      await until(() => ss.pool.usedSlabs === 0, 5000, "the reclaim");
      const r = await c.call("t.Count", "Next", size(30_000), { expectedResponseBytes: 30_000 });
      assertEquals([r.path, r.response.length, runs.n], ["LAZY", 30_000, 3]);
    }),
  { timeoutMs: 30_000 },
);

test(
  "held answers are written as soon as the client reclaims, in order",
  () =>
    withPinnedPool({}, async ({ runs, ss, lazy, unpin }) => {
      const held = [lazy(40_000, 20_000), lazy(40_000, 20_000), lazy(40_000, 20_000)];
      await until(() => ss.answers.held === 3, 5000, "three answers held");
      assertEquals(runs.n, 4);
      unpin();
      const rs = await Promise.all(held);
      assertEquals(rs.map((r) => [r.path, r.response[0]]), [["LAZY", 2], ["LAZY", 3], ["LAZY", 4]]);
      assertEquals(runs.n, 4, "no handler ran again");
    }),
  { timeoutMs: 30_000 },
);

test(
  "past the hold bound, and larger than the pool: fail at once, run once",
  () =>
    withPinnedPool({ heldAnswers: 1 }, async ({ runs, c, ss, lazy }) => {
      const a = lazy(40_000, 2000);
      await until(() => ss.answers.held === 1, 5000, "one answer held");
      const e = await assertRejects(() => lazy(40_000, 2000), RpcError);
      assertEquals(e.errorCode, ERESPONSE);
      assert(/already holds 1 answers/.test(e.errorText), e.errorText);
      assert(/heldAnswers 1/.test(e.errorText), e.errorText);
      await assertRejects(() => a, RpcError, "deadline");
      assertEquals(runs.n, 3, "each handler ran once");
      // Larger than the whole pool: fails at once (without a size hint), or goes over TCP (with one).
      const big = await assertRejects(() => c.call("t.Count", "Next", size(100_000)), RpcError);
      assert(/larger than the whole pool \(\d+ bytes/.test(big.errorText), big.errorText);
      assertEquals(runs.n, 4);
      const tcp = await c.call("t.Count", "Next", size(100_000), {
        expectedResponseBytes: 100_000,
      });
      assertEquals([tcp.path, tcp.response.length, runs.n], ["TCP_FALLBACK", 100_000, 5]);
      assertEquals(c.stats().calls.TCP_FALLBACK, 1, "only the call sent over TCP from the start");
    }),
  { timeoutMs: 30_000 },
);

test(
  "the session ends with answers held: they fail saying so, never redone",
  () =>
    withPinnedPool({}, async ({ runs, ss, lazy }) => {
      const held = [lazy(40_000, 20_000), lazy(40_000, 20_000)];
      await until(() => ss.answers.held === 2, 5000, "two answers held");
      ss.close("test ends it");
      for (const p of held) {
        const e = await assertRejects(() => p);
        assert(/2 answer\(s\) of calls the server had run/.test(String(e)), String(e));
      }
      assertEquals(ss.answers.held, 0, "the held answers were dropped");
      assertEquals(runs.n, 3, "none was redone");
    }),
  { timeoutMs: 30_000 },
);

test("an EOVERCROWDED answer is never redone; an older server's 'pool full' is ERESPONSE", async () => {
  const runs = { n: 0 };
  const { server } = await startServer({}, countingService(runs));
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
