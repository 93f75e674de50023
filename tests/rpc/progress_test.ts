/**
 * The progress loop's busy-poll lets callers run: a caller several awaits away from the promise a
 * step resolved submits its next call during the spin, not after the spin gave up (issue 11:
 * through one `async` wrapper a call at 1 in flight took ~130 µs instead of ~20 µs).
 */
import { assert, assertEquals, test } from "../harness.ts";
import { setImmediate } from "node:timers";
import { ProgressLoop } from "../../rpc/session/engine/progress.ts";
import { NAP_AFTER_US } from "../../rpc/session/engine/spin_policy.ts";

/** A loop over a fake step whose "answers" are instant: each submitted call completes at the next poll. */
function harness(spinUs: number) {
  let pending: (() => void) | null = null;
  let emptyPolls = 0, running = true;
  const loop = new ProgressLoop(
    () => {
      if (pending) {
        const done = pending;
        pending = null;
        done();
        return 1;
      }
      emptyPolls++;
      return 0;
    },
    () => new Promise((r) => setTimeout(() => r(false), 1)),
    () => running,
    { spinUs, idleAfterMs: 1000 },
    () => {},
    { cores: 2, runnable: () => 1, peerAsleep: () => false },
  );
  const call = () =>
    new Promise<void>((r) => {
      pending = r;
      loop.start();
    });
  return { call, emptyPolls: () => emptyPolls, stop: () => (running = false) };
}

async function through(depth: number, call: () => Promise<void>): Promise<void> {
  if (depth === 0) return await call();
  return await through(depth - 1, call);
}

for (const depth of [0, 1, 4]) {
  test(`a caller ${depth} awaits away submits during the spin (few empty polls per call)`, async () => {
    const h = harness(50_000); // a 50 ms spin: a caller stuck behind it would show thousands of polls
    const calls = 200;
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) await through(depth, h.call);
    const ms = performance.now() - t0;
    h.stop();
    const perCall = h.emptyPolls() / calls;
    // Each await level costs the caller a microtask or two; the loop polls once per microtask.
    assert(perCall <= 4 * (depth + 2), `${perCall} empty polls per call at depth ${depth}`);
    // …and no call waited for a spin to run out (200 × 50 ms would be 10 s).
    assert(ms < 5000, `${ms.toFixed(0)} ms for ${calls} calls`);
    assertEquals(typeof perCall, "number");
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A held loop over `step` on a 2-core machine (spin 20 µs; `runnable` gives the n-th reading of
 * the runnable-task count, default 1), and how to stop it.
 */
function testLoop(
  step: () => number,
  { runnable = () => 1, idleAfterMs = 1000, peerAsleep = () => false, now }: {
    runnable?: (reading: number) => number;
    idleAfterMs?: number;
    peerAsleep?: () => boolean;
    now?: () => number;
  } = {},
) {
  let running = true, reading = 0;
  const loop = new ProgressLoop(
    step,
    () => new Promise((r) => setTimeout(() => r(false), 1)),
    () => running,
    { spinUs: 20, idleAfterMs },
    () => {},
    { cores: 2, runnable: () => runnable(reading++), peerAsleep, now },
  );
  return { loop, stop: () => (running = false) };
}

/** A loop whose step always does `work` (a busy server): counts its turns. */
const busyLoop = (work: number) => testLoop(() => work);

/** The loop's turns when a macrotask queued before its start first ran. */
async function turnsBeforeMacrotask(work: number): Promise<number> {
  const { loop, stop } = busyLoop(work);
  const seen = new Promise<number>((r) => setImmediate(() => r(loop.counters.turns)));
  loop.start();
  const turns = await seen;
  stop();
  await sleep(5);
  return turns;
}

test("a busy loop yields a macrotask every 64 turns of one call, sooner for big batches", async () => {
  // A macrotask yield costs ~0.8 µs: one call in flight paid for one every 16 calls.
  const one = await turnsBeforeMacrotask(1);
  assert(one >= 60 && one <= 64, `timers waited ${one} turns of one call each`);
  // 32 in flight: TCP and timers still get the thread after ~512 calls.
  const batch = await turnsBeforeMacrotask(100);
  assert(batch >= 5 && batch <= 6, `timers waited ${batch} turns of 100 calls each`);
});

test("a spin that finds its answer in its first polls reads no clock", async () => {
  // Deno's clock costs ~0.1 µs a reading: the spin of every call read it once when it started.
  let polls = 0;
  let pending: (() => void) | null = null;
  const { loop: l, stop } = testLoop(() => {
    if (pending && ++polls % 3 === 0) { // the answer lands at the third poll
      const done = pending;
      pending = null;
      done();
      return 1;
    }
    return 0;
  });
  for (let i = 0; i < 100; i++) {
    await new Promise<void>((r) => {
      pending = r;
      polls = 0;
      l.start();
    });
  }
  stop();
  assertEquals(l.counters.clockReads, 0, "clock readings for 100 calls");
  // …while a spin that finds nothing still ends: it reads the clock to know when.
  const idle = busyLoop(0);
  idle.loop.start();
  await sleep(20);
  idle.stop();
  await sleep(5);
  assert(idle.loop.counters.clockReads > 0, "an empty spin reads the clock");
  assert(idle.loop.counters.turns > 1, "…and ends its turn");
});

/** Yielding spins of an idle-but-held loop over `ms`, the runnable count read from `runnable(i)`. */
async function yieldingSpins(ms: number, runnable: (reading: number) => number): Promise<number> {
  const { loop, stop } = testLoop(() => 0, { runnable, idleAfterMs: 60_000 });
  loop.start();
  await sleep(ms);
  stop();
  await sleep(5);
  return loop.counters.yieldingSpins;
}

test("one crowded reading of the runnable count does not make the loop yield after every poll", async () => {
  // 2 cores, one spinning process each: a reading of 3 (a GC thread, a kworker) is an instant.
  const spike = await yieldingSpins(450, (i) => (i === 1 ? 3 : 2));
  assertEquals(spike, 0, "spins that yielded after every poll");
  // …while a host that stays crowded (4 clients and a server on 2 cores) is seen as such.
  const crowded = await yieldingSpins(150, () => 5);
  assert(crowded > 0, `${crowded} yielding spins on a crowded host`);
});

test("the spin follows the peer: none while it sleeps, again once it is awake", async () => {
  // The policy's decision is kept between spins: a change of the peer's sleep must still count.
  let asleep = false;
  const { loop, stop } = testLoop(() => 0, { idleAfterMs: 60_000, peerAsleep: () => asleep });
  loop.start();
  const phase = async (ms: number) => {
    const cut = loop.counters.shortSpins, turns = loop.counters.turns;
    await sleep(ms);
    return { cut: loop.counters.shortSpins - cut, turns: loop.counters.turns - turns };
  };
  const awake1 = await phase(40);
  asleep = true;
  const sleeping = await phase(40);
  asleep = false;
  const awake2 = await phase(40);
  stop();
  await sleep(5);
  assertEquals(awake1.cut, 0, "no spin cut while the peer is awake");
  assert(
    sleeping.cut > 0 && sleeping.cut >= sleeping.turns - 2,
    `asleep: ${JSON.stringify(sleeping)}`,
  );
  assert(awake2.cut <= 1, `awake again: ${awake2.cut} spins cut`);
});

/**
 * An idle-but-held loop for `ms` over a virtual clock: a poll takes `pollUs`, a reading `clockUs`
 * (the reading advances the clock it returns). Its counters, and the virtual time it spent.
 */
async function pacedSpins(pollUs: number, clockUs: number, ms: number) {
  let t = 0;
  const { loop, stop } = testLoop(() => {
    t += pollUs / 1000;
    return 0;
  }, { idleAfterMs: 60_000, now: () => (t += clockUs / 1000) });
  loop.start();
  await sleep(ms);
  stop();
  await sleep(5);
  return loop.counters;
}

test("a spin reads a dear clock rarely and a cheap one every 16 polls, and still ends", async () => {
  // The Soft-RoCE VM's clock is the emulated HPET (~18 µs a reading, polls ~3 µs): reading it every
  // 16 polls spent the spin's budget on the clock.
  const dear = await pacedSpins(1, 50, 60);
  const clockShare = (dear.clockReads * 50) / (dear.spinPolls * 1);
  assert(dear.spinPolls > 1000, `${dear.spinPolls} polls`);
  assert(clockShare < 1 / 8, `readings took ${(clockShare * 100).toFixed(1)} % of the polls' time`);
  assert(dear.turns > 3, `${dear.turns} turns: the spins end`);
  // A cheap clock (Bun's vDSO reading: ~6 ns): the spin looks at it every 16 polls, as before.
  const cheap = await pacedSpins(1, 0.005, 60);
  const perRead = cheap.spinPolls / cheap.clockReads;
  assert(perRead >= 8 && perRead <= 17, `${perRead.toFixed(1)} polls per reading`);
  assert(cheap.turns > 3, `${cheap.turns} turns: the spins end`);
});

/**
 * A held loop over a machine that can nap, `runnable` tasks on 2 cores, whose step finds work
 * only when a call is made (`call()`: the next poll answers it). Counts its yields and naps and
 * the busy-poll's polls; `quietMs` of idleness, then `calls` calls `gapMs` apart.
 */
async function nappingLoop(
  { runnable = 1, napUs = 200, quietMs = 40, calls = 0, gapUs = 20 }: {
    runnable?: number;
    napUs?: number;
    quietMs?: number;
    calls?: number;
    gapUs?: number;
  } = {},
) {
  let running = true, pending = 0, yields = 0, naps = 0;
  const loop = new ProgressLoop(
    () => {
      if (pending === 0) return 0;
      pending = 0;
      return 1;
    },
    () => new Promise((r) => setTimeout(() => r(false), 1)),
    () => running,
    { spinUs: 20, idleAfterMs: 60_000, napUs },
    () => void yields++,
    {
      cores: 2,
      runnable: () => runnable,
      peerAsleep: () => false,
      canNap: () => true,
      nap: () => (naps++, false),
    },
  );
  loop.start();
  await sleep(quietMs);
  const napsBeforeCalls = naps;
  for (let i = 0; i < calls; i++) {
    // A call every `gapUs` (a busy session's gaps between batches): busy-wait, then make it.
    const until = performance.now() + gapUs / 1000;
    while (performance.now() < until) { /* the gap */ }
    pending = 1;
    await new Promise<void>((r) => setImmediate(r));
  }
  running = false;
  await sleep(5);
  return { counters: loop.counters, yields, naps, napsDuringCalls: naps - napsBeforeCalls };
}

test("an idle loop that can nap naps once quiet, instead of spinning on and yielding", async () => {
  const r = await nappingLoop();
  assert(r.naps > 0 && r.counters.naps === r.naps, `naps ${r.naps}, counted ${r.counters.naps}`);
  // Before the quiet spell passed NAP_AFTER_US it spun and yielded as before; then only naps.
  assert(r.yields < r.naps, `${r.yields} yields, ${r.naps} naps`);
  // …and with naps off, the same idle loop spins and yields after each empty spin, as before.
  const off = await nappingLoop({ napUs: 0 });
  assertEquals(off.naps, 0, "naps with napUs 0");
  assert(off.yields > 0, "an empty spin without a nap yields the core");
});

test("gaps shorter than the quiet spell are spun as before: no nap between a busy session's batches", async () => {
  assert(NAP_AFTER_US >= 100, "the quiet spell is long next to a batch gap");
  const r = await nappingLoop({ quietMs: 0, calls: 300, gapUs: 20 });
  assertEquals(r.napsDuringCalls, 0, "naps between calls 20 µs apart");
});

test("on a crowded host the loop keeps its yielding spin and early sleep: no nap", async () => {
  const r = await nappingLoop({ runnable: 5 });
  // (The first spin starts before the load is read.)
  assert(r.naps <= 1, `${r.naps} naps on a crowded host`);
  assert(r.counters.yieldingSpins > 0, "yielding spins");
});
