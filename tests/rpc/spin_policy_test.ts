/**
 * The spin policy (issue 11 item 4) as a pure function of cores, runnable tasks and the peer's
 * sleep, and the per-turn clock the data path reads instead of `performance.now()` per call.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { spinPolicy } from "../../rpc/session/spin_policy.ts";
import { invalidateTurnClock, setTurnClock, turnNow } from "../../rpc/session/turn_clock.ts";

const base = { cores: 2, runnable: 2, peerAsleep: false, spinUs: 20 };

test("spin policy: a core each → the whole budget, no yield while spinning", () => {
  assertEquals(spinPolicy(base), { spinUs: 20, yieldEachPoll: false });
  assertEquals(spinPolicy({ ...base, runnable: 1 }), { spinUs: 20, yieldEachPoll: false });
  assertEquals(
    spinPolicy({ ...base, runnable: -1 }),
    { spinUs: 20, yieldEachPoll: false },
    "unknown load",
  );
  assertEquals(spinPolicy({ ...base, cores: 8, runnable: 8 }), {
    spinUs: 20,
    yieldEachPoll: false,
  });
});

test("spin policy: oversubscribed → a quarter of the budget, yielding the core after every poll", () => {
  assertEquals(spinPolicy({ ...base, runnable: 3 }), { spinUs: 5, yieldEachPoll: true });
  assertEquals(spinPolicy({ ...base, cores: 8, runnable: 9, spinUs: 40 }), {
    spinUs: 10,
    yieldEachPoll: true,
  });
});

test("spin policy: a sleeping peer or a single core → no spin, yield at once", () => {
  assertEquals(spinPolicy({ ...base, peerAsleep: true }), { spinUs: 0, yieldEachPoll: true });
  assertEquals(spinPolicy({ ...base, cores: 1, runnable: 1 }), { spinUs: 0, yieldEachPoll: true });
  assertEquals(spinPolicy({ ...base, runnable: 1, peerAsleep: true, cores: 16 }).spinUs, 0);
});

test("turn clock: one reading per turn, fresh after invalidation", () => {
  invalidateTurnClock();
  const a = turnNow();
  const until = performance.now() + 5;
  while (performance.now() < until) { /* the same synchronous turn, 5 ms later */ }
  assertEquals(turnNow(), a, "cached within the turn");
  invalidateTurnClock();
  const b = turnNow();
  assert(b - a >= 4, `a new reading after invalidation (${b - a} ms later)`);
  setTurnClock(b + 1000);
  assertEquals(turnNow(), b + 1000, "a reading made anyway is reused");
  invalidateTurnClock();
  assert(Math.abs(turnNow() - performance.now()) < 100, "back to the real clock");
});
