/**
 * The server's queue of answers held for object-pool room (rpc/session/server/held_answers.ts):
 * order, bounds, give-up times, expiry in the middle of the queue, the timer, dropping all.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { HeldAnswers } from "../../rpc/session/server/held_answers.ts";
import type { ServerCall } from "../../rpc/protocol/dispatch.ts";

/** The parts of a call the queue reads. */
function call(deadline?: number, timeoutMs?: number): ServerCall {
  return { deadline, timeoutMs } as unknown as ServerCall;
}

const LIMITS = { heldAnswers: 3, heldAnswerBytes: 1000, heldAnswerMs: 10_000 };

test("held answers: FIFO order, bounds by count and bytes, parts per token", () => {
  const q = new HeldAnswers(8, LIMITS, () => {});
  try {
    const r = [new Uint8Array(100), new Uint8Array(200), new Uint8Array(300)];
    assert(q.admits(1000) && !q.admits(1001), "bytes bound");
    q.hold(5, call(), r[0], 100, 0, 1e15);
    q.hold(2, call(), r[1], 200, 0, 1e15);
    q.hold(7, call(), r[2], 300, 0, 1e15);
    assertEquals([q.length, q.bytes], [3, 600]);
    assert(!q.admits(1), "count bound: 3 held");
    assertEquals([q.peek(), q.response(5), q.size(2)], [5, r[0], 200]);
    assertEquals([q.shift(), q.shift()], [5, 2]);
    assertEquals([q.length, q.bytes, q.peek()], [1, 300, 7]);
    assert(q.admits(700) && !q.admits(701));
  } finally {
    q.dropAll();
  }
});

test("held answers: give up before the deadline (a quarter of the timeout, at most 250 ms)", () => {
  const q = new HeldAnswers(4, LIMITS, () => {});
  assertEquals(q.giveUpTime(call(), 1000), 11_000, "no deadline: heldAnswerMs");
  assertEquals(q.giveUpTime(call(1400, 400), 1000), 1300, "400 ms timeout: 100 ms before");
  assertEquals(q.giveUpTime(call(6000, 5000), 1000), 5750, "5 s timeout: 250 ms before");
  assertEquals(q.giveUpTime(call(60_000, 59_000), 1000), 11_000, "heldAnswerMs comes first");
  assert(q.giveUpTime(call(1000, 100), 1000) <= 1000, "a passed deadline leaves no time");
});

test("held answers: expire takes out due ones anywhere in the queue, the rest keep order", () => {
  const q = new HeldAnswers(8, { ...LIMITS, heldAnswers: 8 }, () => {});
  try {
    const b = new Uint8Array(10);
    q.hold(1, call(), b, 10, 0, 500);
    q.hold(2, call(), b, 10, 0, 100);
    q.hold(3, call(), b, 10, 0, 900);
    q.hold(4, call(), b, 10, 0, 200);
    const out: [number, string][] = [];
    q.expire(300, (t, _c, _s, why) => out.push([t, why]));
    assertEquals(out.map((o) => o[0]), [2, 4]);
    assert(/held the answer 300 ms, for heldAnswerMs \(10000 ms\)/.test(out[0][1]), out[0][1]);
    assertEquals([q.length, q.bytes, q.shift(), q.shift(), q.length], [2, 20, 1, 3, 0]);
  } finally {
    q.dropAll();
  }
});

test("held answers: the timer tells the owner when the earliest is due; dropAll stops it", async () => {
  let due = 0;
  const q = new HeldAnswers(4, LIMITS, () => due++);
  const now = Date.now();
  q.hold(0, call(), new Uint8Array(1), 1, now, now + 30);
  q.hold(1, call(), new Uint8Array(1), 1, now, now + 60_000);
  await new Promise((r) => setTimeout(r, 200));
  assertEquals(due, 1, "fired once, for the first");
  q.expire(Date.now(), () => {});
  q.rearm(); // the next is a minute away
  assertEquals(q.dropAll(), 1);
  await new Promise((r) => setTimeout(r, 50));
  assertEquals([due, q.length, q.bytes], [1, 0, 0]);
});
