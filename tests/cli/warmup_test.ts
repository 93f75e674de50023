/**
 * `verbus call --async-bench --async-warmup N`: the warm-up calls run with the same number in
 * flight as the measured ones (`cli/call_ops.ts` `warmUp`), so the paths a window of calls takes
 * — batched completions, many promises at once — are warm before the first measured call. A
 * warm-up one call at a time left them cold (the e2e rows of 32 in flight measured JIT tier-up).
 * @module
 */
import { runBench, secondsOf, warmUp } from "../../cli/call_ops.ts";
import type { Client } from "../../rpc/client/client.ts";
import { assertEquals, test } from "../harness.ts";

/** A fake call that stays in flight for a timer tick, counting how many are in flight at once. */
function counter() {
  const c = { inflight: 0, peak: 0, made: 0 };
  const call = async () => {
    c.made++;
    c.peak = Math.max(c.peak, ++c.inflight);
    await new Promise((r) => setTimeout(r, 1));
    c.inflight--;
    return { path: "EAGER", fabric: "shm", response: new Uint8Array(0) };
  };
  return { c, call };
}

test("the warm-up makes exactly its calls, with up to the window in flight", async () => {
  const { c, call } = counter();
  await warmUp(call, 40, 8);
  assertEquals([c.made, c.peak, c.inflight], [40, 8, 0]);
  const few = counter();
  await warmUp(few.call, 3, 8);
  assertEquals([few.c.made, few.c.peak], [3, 3], "never more in flight than calls");
  const none = counter();
  await warmUp(none.call, 0, 8);
  assertEquals(none.c.made, 0);
});

test("runBench warms up with the window and leaves the warm-up out of its figures", async () => {
  const { c, call } = counter();
  let peakBeforeMeasuring = -1;
  const client = { call, fabric: "shm" } as unknown as Client;
  const r = await runBench(
    client,
    {
      op: "echo",
      bytes: 8,
      n: 20,
      window: 4,
      warmup: 32,
      timeoutMs: 1000,
      ready: () => {
        peakBeforeMeasuring = c.peak;
        return Promise.resolve();
      },
    } as Parameters<typeof runBench>[1],
  );
  assertEquals(peakBeforeMeasuring, 4, "the warm-up ran 4 in flight");
  assertEquals(c.made, 52);
  assertEquals((r.result as { count: number }).count, 20);
});

test("--async-bench seconds print exactly, to 0.1 ms (no 0.43910000000000005 in the JSON)", () => {
  assertEquals(JSON.stringify({ seconds: secondsOf(439.1) }), '{"seconds":0.4391}');
  for (let tenths = 0; tenths < 200_000; tenths += 7) {
    const text = String(secondsOf(tenths / 10));
    assertEquals(text.replace(/^\d+\.?/, "").length <= 4, true, `${tenths / 10} ms → ${text}`);
  }
});
