/**
 * The agent client's per-slot call table (rpc/agent/slot_calls.ts): a call's promise settles
 * with its slot's answer; a deadline that passes fails only that caller and leaves the slot
 * ABANDONED until its late answer frees it; failing all rejects every waiting caller once.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { SLOT_ABANDONED, SLOT_IDLE, SLOT_PENDING, SlotCalls } from "../../rpc/agent/slot_calls.ts";

test("agent slot calls: answers settle their own slot's caller, in any order", async () => {
  const t = new SlotCalls<string>(4);
  const a = t.add(2, Infinity), b = t.add(0, Infinity), c = t.add(3, Infinity);
  assertEquals([t.pending, t.state(2), t.state(1)], [3, SLOT_PENDING, SLOT_IDLE]);
  assertEquals(t.take(3), SLOT_PENDING);
  t.resolveTaken(3, "three");
  assertEquals(t.take(2), SLOT_PENDING);
  t.rejectTaken(2, new Error("two failed"));
  assertEquals(t.take(0), SLOT_PENDING);
  t.resolveTaken(0, "zero");
  assertEquals(await c, "three");
  assertEquals(await b, "zero");
  const why = await a.then(() => "resolved", (e) => (e as Error).message);
  assertEquals(why, "two failed");
  assertEquals([t.pending, t.abandoned, t.state(0)], [0, 0, SLOT_IDLE]);
});

test("agent slot calls: a passed deadline fails that caller only; its slot waits for the late answer", async () => {
  const t = new SlotCalls<string>(2);
  const late = t.add(0, 10), onTime = t.add(1, 1_000);
  let made = 0;
  t.expire(500, () => new Error(`late ${++made}`));
  assertEquals(made, 1, "one error made, for the one caller whose deadline passed");
  assertEquals(await late.then(() => "resolved", (e) => (e as Error).message), "late 1");
  assertEquals([t.state(0), t.pending, t.abandoned], [SLOT_ABANDONED, 1, 1]);
  t.expire(600, () => new Error("again"));
  assertEquals(made, 1, "an abandoned slot is not failed twice");
  assertEquals(t.take(0), SLOT_ABANDONED, "the late answer frees the slot, nobody to settle");
  assertEquals([t.state(0), t.abandoned], [SLOT_IDLE, 0]);
  // The slot is reused by a new call, settled by its own answer.
  const again = t.add(0, Infinity);
  t.take(0);
  t.resolveTaken(0, "reused");
  assertEquals(await again, "reused");
  t.take(1);
  t.resolveTaken(1, "one");
  assertEquals(await onTime, "one");
});

test("agent slot calls: failing all rejects each waiting caller once and forgets every slot", async () => {
  const t = new SlotCalls<string>(3);
  const calls = [t.add(0, 5), t.add(1, Infinity), t.add(2, Infinity)];
  t.expire(10, () => new Error("timeout"));
  t.failAll(new Error("agent gone"));
  const out = await Promise.all(calls.map((p) => p.then(() => "ok", (e) => (e as Error).message)));
  assertEquals(out, ["timeout", "agent gone", "agent gone"]);
  assertEquals([t.pending, t.abandoned], [0, 0]);
  for (let k = 0; k < 3; k++) assert(t.state(k) === SLOT_IDLE, `slot ${k} idle`);
});
