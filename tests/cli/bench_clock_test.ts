/**
 * `verbus call --async-bench`'s clock (`BurstClock`): one `performance.now()` per microtask run,
 * shared by every call completed and issued in it; a fresh reading in the next run.
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import { BurstClock } from "../../cli/call_ops.ts";

const later = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

test("BurstClock: one reading per microtask run, a fresh one after the run ends", async () => {
  const c = new BurstClock();
  const a = c.now();
  assertEquals(c.now(), a, "same synchronous run");
  await later(3);
  const b = c.now();
  assert(b >= a + 2, `a later run reads again (${a} then ${b})`);
});

test("BurstClock: the continuations of answers resolved together share the reading", async () => {
  const c = new BurstClock();
  let resolvers: (() => void)[] = [];
  const seen: number[] = [];
  const workers = Array.from({ length: 32 }, async () => {
    await new Promise<void>((r) => resolvers.push(r));
    seen.push(c.now());
  });
  await later(2);
  const all = resolvers;
  resolvers = [];
  for (const r of all) r(); // one "read" completes 32 calls
  await Promise.all(workers);
  assertEquals(seen.length, 32);
  assert(seen.every((t) => t === seen[0]), `one reading for the burst: ${new Set(seen).size} seen`);
  await later(2);
  assert(c.now() > seen[0], "the next burst reads the clock again");
});
