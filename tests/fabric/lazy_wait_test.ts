/**
 * A LAZY answer the client has no staging room to read right now waits for room (in order, the
 * object kept in the server's pool) and is never redone over TCP: the server already ran the
 * handler, and a non-idempotent method must not run twice. An answer larger than the whole
 * staging area fails that call, naming both sizes, also without a redo.
 */
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { RpcError } from "../../rpc/errors.ts";
import { client, SMALL_REGION, startServer } from "./util.ts";
import { countingService as counting, sizeRequest as size } from "../fixtures/counting_service.ts";

/** 64 KiB of staging: 60 KiB after the control-page snapshot, less than two 40 KB answers. */
const SMALL_STAGING = { ...SMALL_REGION, stagingSize: 1 << 16 };

test("LAZY answers past the staging room wait for it: each call runs once, none over TCP", async () => {
  const runs = { n: 0 };
  const { server } = await startServer({}, counting(runs));
  const c = await client(server, { region: SMALL_STAGING });
  try {
    const calls = 12, bytes = 40_000; // 480 KB of answers at once through 60 KiB of staging
    const results = await Promise.all(
      Array.from(
        { length: calls },
        () => c.call("t.Count", "Next", size(bytes), { expectedResponseBytes: bytes }),
      ),
    );
    assertEquals(runs.n, calls, "every call ran exactly once");
    assertEquals(results.map((r) => r.path), Array(calls).fill("LAZY"), "no call went over TCP");
    const seen = new Set(results.map((r) => r.response[0]));
    assertEquals(seen.size, calls, "each call got its own answer");
    for (const r of results) assertEquals(r.response.length, bytes);
    assertEquals(c.stats().calls.TCP_FALLBACK, 0);
    assert(c.session!.stats.lazyWaits > 0, "some reads waited for staging room");
  } finally {
    await c.close();
    await server.close();
  }
});

test("a LAZY answer larger than the whole staging area fails naming both sizes, run once", async () => {
  const runs = { n: 0 };
  const { server } = await startServer({}, counting(runs));
  const c = await client(server, { region: SMALL_STAGING });
  try {
    const e = await assertRejects(
      () => c.call("t.Count", "Next", size(100_000), { expectedResponseBytes: 100_000 }),
      RpcError,
      "staging area",
    );
    assert(/100\d\d\d bytes/.test(e.message) && /61440 bytes/.test(e.message), e.message);
    assertEquals(runs.n, 1, "the handler ran once, and the call was not redone");
    assertEquals(c.stats().calls.TCP_FALLBACK, 0);
    // The session goes on.
    const r = await c.call("t.Count", "Next", size(20_000), { expectedResponseBytes: 20_000 });
    assertEquals([r.path, r.response.length, runs.n], ["LAZY", 20_000, 2]);
  } finally {
    await c.close();
    await server.close();
  }
});
