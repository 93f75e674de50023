/**
 * brpc's error-rate circuit breaker: it isolates a server failing half its calls (while its
 * windows fill, and after, on the EMA error cost), never one failing 1 %, doubles the isolation on
 * repeated trips up to 30 s, and starts again at 100 ms after a healthy period.
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { BreakerOptionsSchema, CircuitBreaker } from "../../rpc/cluster/breaker.ts";

function clocked(options: Record<string, number> = {}) {
  const clock = { ms: 5_000 };
  const b = new CircuitBreaker({ ...options, nowMs: () => clock.ms });
  return { b, clock };
}

/** Calls until the breaker says isolate (or `max` calls); how many it took, or -1. */
function callsToTrip(b: CircuitBreaker, fails: (i: number) => boolean, max: number): number {
  for (let i = 0; i < max; i++) {
    const ok = !fails(i);
    if (!b.onCallEnd(ok, ok ? 1000 : 5000)) return i + 1;
  }
  return -1;
}

test("breaker: brpc's defaults", () => {
  const o = BreakerOptionsSchema.parse({});
  assertEquals(
    [o.shortWindowSize, o.shortWindowErrorPercent, o.longWindowSize, o.longWindowErrorPercent],
    [1500, 10, 3000, 5],
  );
  assertEquals([o.minIsolationMs, o.maxIsolationMs, o.epsilon], [100, 30_000, 0.02]);
  assertEquals([o.minErrorCostUs, o.maxFailedLatencyMultiple, o.halfOpenWindowSize], [500, 2, 0]);
  const e = assertThrows(() => new CircuitBreaker({ longWindowErrorPercent: 100 }), VerbusError);
  assertEquals(e.code, "INVALID_OPTIONS");
  assert(e.message.includes("longWindowErrorPercent"), e.message);
});

test("breaker: a new server failing half its calls is isolated after 150 errors", () => {
  const { b } = clocked();
  // While the windows fill, errors are counted: both allow 150 (1,500 × 10 %, 3,000 × 5 %).
  assertEquals(callsToTrip(b, (i) => i % 2 === 1, 10_000), 302);
  assertEquals(b.isolationMs(), 100);
  assert(b.broken);
  assertEquals(b.onCallEnd(true, 1000), false, "stays isolated until the time is over");
  assertEquals(b.isolatedTimes, 1);
});

test("breaker: a warmed-up server that starts failing half its calls trips on the EMA cost", () => {
  const { b } = clocked();
  assertEquals(callsToTrip(b, () => false, 5000), -1);
  const n = callsToTrip(b, (i) => i % 2 === 0, 5000);
  // 2 × 1 ms per error against a budget of 1 ms × 1,500 × 10 % × 1.02 on the short window,
  // decayed by 0.02^(1/1500) per success: a few hundred calls.
  assert(n > 100 && n < 1500, `tripped after ${n}`);
});

test("breaker: a server failing 1 % of its calls (slowly, as timeouts) is never isolated", () => {
  const { b } = clocked();
  assertEquals(callsToTrip(b, (i) => i % 100 === 37, 30_000), -1);
  assertEquals(b.isolatedTimes, 0);
});

test("breaker: after warm-up a lasting 12 % error rate is isolated, 8 % is not", () => {
  // The cost of an error is its latency, at most 2 × the EMA latency; successes decay it by
  // 0.02^(1/3000) on the long window. So the steady cost is about p × 2 / (ln 50 / 3000) EMA
  // latencies against a budget of 3000 × 5 % × 1.02 = 153: the long window trips near 10 %.
  const warm = () => {
    const { b } = clocked();
    assertEquals(callsToTrip(b, () => false, 5000), -1);
    return b;
  };
  const n = callsToTrip(warm(), (i) => i % 25 < 3, 30_000);
  assert(n > 500 && n < 3000, `12 %: tripped after ${n}`);
  assertEquals(callsToTrip(warm(), (i) => i % 25 < 2, 30_000), -1, "8 %");
});

test("breaker: isolation doubles on repeated trips up to 30 s, back to 100 ms after 30 s", () => {
  const { b, clock } = clocked();
  const seen: number[] = [];
  for (let trip = 0; trip < 12; trip++) {
    assert(callsToTrip(b, (i) => i % 2 === 1, 10_000) > 0, `trip ${trip}`);
    seen.push(b.isolationMs());
    clock.ms += b.isolationMs() - 1;
    assertEquals(b.onCallEnd(true, 1000), false, "still isolated 1 ms before the end");
    clock.ms += 1; // the isolation is over: the next call restarts the windows
  }
  assertEquals(seen, [100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]);
  // Healthy for 30 s since it came back: the next trip isolates for 100 ms again.
  assert(b.onCallEnd(true, 1000));
  clock.ms += 30_000;
  assert(callsToTrip(b, (i) => i % 2 === 1, 10_000) > 0);
  assertEquals(b.isolationMs(), 100);
});

test("breaker: reset() ends an isolation early; a half-open window re-trips on one error", () => {
  const { b } = clocked({ halfOpenWindowSize: 5 });
  callsToTrip(b, (i) => i % 2 === 1, 10_000);
  assert(b.broken);
  b.reset();
  assert(!b.broken);
  assertEquals(b.onCallEnd(true, 1000), true);
  assertEquals(b.onCallEnd(false, 1000), false, "an error inside the half-open window");
  assertEquals(b.isolationMs(), 200);
  b.reset();
  for (let i = 0; i < 5; i++) assert(b.onCallEnd(true, 1000));
  assert(b.onCallEnd(false, 1000), "past the half-open window one error is tolerated");
});
