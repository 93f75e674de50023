/**
 * The spin policy (issue 11 item 4) as a pure function of cores, runnable tasks and the peer's
 * sleep, and the per-turn clock the data path reads instead of `performance.now()` per call.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { OVERSUBSCRIBED_IDLE_AFTER_MS, spinPolicy } from "../../rpc/session/engine/spin_policy.ts";
import {
  dateNowThisTurn,
  invalidateTurnClock,
  nowThisTurn,
  OFFSET_READINGS,
  setTurnClock,
} from "../../rpc/session/engine/turn_clock.ts";

const base = { cores: 2, runnable: 2, peerAsleep: false, spinUs: 20, idleAfterMs: 5 };

test("spin policy: a core each → the whole budget, no yield while spinning", () => {
  const whole = { spinUs: 20, yieldEachPoll: false, idleAfterMs: 5, napUs: 0 };
  assertEquals(spinPolicy(base), whole);
  assertEquals(spinPolicy({ ...base, runnable: 1 }), whole);
  assertEquals(spinPolicy({ ...base, runnable: -1 }), whole, "unknown load");
  assertEquals(spinPolicy({ ...base, cores: 8, runnable: 8 }), whole);
});

test("spin policy: oversubscribed → a quarter of the budget, yielding the core after every poll", () => {
  assertEquals(spinPolicy({ ...base, runnable: 3 }).spinUs, 5);
  assertEquals(spinPolicy({ ...base, runnable: 3 }).yieldEachPoll, true);
  const eight = spinPolicy({ ...base, cores: 8, runnable: 9, spinUs: 40 });
  assertEquals([eight.spinUs, eight.yieldEachPoll], [10, true]);
});

test("spin policy: a sleeping peer or a single core → no spin, yield at once", () => {
  assertEquals(spinPolicy({ ...base, peerAsleep: true }), {
    spinUs: 0,
    yieldEachPoll: true,
    idleAfterMs: 5,
    napUs: 0,
  });
  assertEquals(spinPolicy({ ...base, cores: 1, runnable: 1 }).spinUs, 0);
  assertEquals(spinPolicy({ ...base, cores: 1, runnable: 1 }).yieldEachPoll, true);
  assertEquals(spinPolicy({ ...base, runnable: 1, peerAsleep: true, cores: 16 }).spinUs, 0);
});

test("spin policy: oversubscribed or one core → the idle sleep comes early; else as configured", () => {
  assertEquals(spinPolicy({ ...base, runnable: 3 }).idleAfterMs, OVERSUBSCRIBED_IDLE_AFTER_MS);
  assertEquals(
    spinPolicy({ ...base, cores: 1, runnable: 1 }).idleAfterMs,
    OVERSUBSCRIBED_IDLE_AFTER_MS,
  );
  assertEquals(
    spinPolicy({ ...base, runnable: 3, peerAsleep: true }).idleAfterMs,
    OVERSUBSCRIBED_IDLE_AFTER_MS,
  );
  assert(OVERSUBSCRIBED_IDLE_AFTER_MS < 5);
  // never later than configured
  assertEquals(spinPolicy({ ...base, runnable: 3, idleAfterMs: 0.05 }).idleAfterMs, 0.05);
  assertEquals(spinPolicy({ ...base, idleAfterMs: 30 }).idleAfterMs, 30);
  assertEquals(spinPolicy({ ...base, runnable: -1, idleAfterMs: 30 }).idleAfterMs, 30);
});

const napping = { ...base, napUs: 200, canNap: true };

test("spin policy: a core each and a source that naps → the spin as before, and naps allowed", () => {
  assertEquals(spinPolicy(napping), {
    spinUs: 20,
    yieldEachPoll: false,
    idleAfterMs: 5,
    napUs: 200,
  });
  assertEquals(spinPolicy({ ...napping, runnable: -1 }).napUs, 200, "unknown load");
  assertEquals(spinPolicy({ ...napping, peerAsleep: true }).napUs, 200, "a sleeping peer");
  assertEquals(spinPolicy({ ...napping, peerAsleep: true }).spinUs, 0);
});

test("spin policy: no nap on a crowded host or one core, with napUs 0, or where the engine cannot nap", () => {
  // Crowded: a nap and its wake cost two context switches (dear in a VM) where a yield gives the
  // core to a runnable task at once; such a loop sleeps early anyway.
  const crowded = spinPolicy({ ...napping, runnable: 3 });
  assertEquals(crowded, spinPolicy({ ...base, runnable: 3 }));
  assertEquals(crowded.napUs, 0);
  assertEquals(spinPolicy({ ...napping, cores: 1, runnable: 1 }).napUs, 0);
  assertEquals(spinPolicy({ ...napping, napUs: 0 }), spinPolicy(base));
  assertEquals(spinPolicy({ ...napping, canNap: false }), spinPolicy(base));
});

test("turn clock: one reading per turn, fresh after invalidation", () => {
  invalidateTurnClock();
  const a = nowThisTurn();
  const until = performance.now() + 5;
  while (performance.now() < until) { /* the same synchronous turn, 5 ms later */ }
  assertEquals(nowThisTurn(), a, "cached within the turn");
  invalidateTurnClock();
  const b = nowThisTurn();
  assert(b - a >= 4, `a new reading after invalidation (${b - a} ms later)`);
  setTurnClock(b + 1000);
  assertEquals(nowThisTurn(), b + 1000, "a reading made anyway is reused");
  invalidateTurnClock();
  assert(Math.abs(nowThisTurn() - performance.now()) < 100, "back to the real clock");
});

test("turn clock on the Date.now() scale: the turn's reading, the wall clock read about once a second", () => {
  // A server round stamps its requests with it: a Date.now() per round was a syscall in the VM.
  const real = Date.now;
  let wallReads = 0;
  Date.now = () => (wallReads++, real.call(Date));
  try {
    let best = Infinity;
    const until = performance.now() + 30;
    for (let k = 0; performance.now() < until; k++) {
      invalidateTurnClock(); // a new turn each time: a fresh monotonic reading
      const at = dateNowThisTurn();
      const wall = real.call(Date);
      assert(at <= wall, `${at} is ahead of Date.now() ${wall}`); // a deadline never grows
      // the distance when this thread was not preempted between the two readings (the least)
      best = Math.min(best, wall - at);
    }
    // one refresh in 30 ms (its readings, a retry per preempted bracket), not one per turn
    assert(wallReads <= OFFSET_READINGS, `${wallReads} wall-clock readings in 30 ms`);
    assert(best < 5, `${best} ms from Date.now() at the closest`);
    invalidateTurnClock();
    const a = dateNowThisTurn();
    assertEquals(dateNowThisTurn(), a, "cached within the turn");
  } finally {
    Date.now = real;
  }
});
