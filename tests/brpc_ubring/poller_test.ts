/**
 * The UBRing poller's hot rounds: once nothing moved for a while it gives the core away with
 * `sched_yield` each round and keeps turning, instead of a timed nap (a 50 µs Atomics.wait slept
 * ~120 µs with the kernel's timer slack, and every answer slower than 50 µs was seen ~170 µs
 * after its request); past `spinMs` it waits idle. No timing is asserted: counters only. Both
 * runtimes.
 */
import type { Pumpable } from "../../transport/brpc_ubring/poller.ts";
import { UbringPoller } from "../../transport/brpc_ubring/poller.ts";
import { assert, test } from "../harness.ts";

test("brpc-ubring poller: hot rounds without progress yield the core and keep turning, then go idle", async () => {
  const poller = new UbringPoller();
  let pumps = 0;
  const quiet: Pumpable = {
    pump: () => (pumps++, false),
    spinMs: 30,
    idlePollMs: 5,
    wakeWord: () => null,
  };
  poller.add(quiet);
  try {
    await new Promise((r) => setTimeout(r, 10)); // libc's yield loads; rounds spin
    poller.kick();
    const r0 = poller.rounds, y0 = poller.yields;
    await new Promise((r) => setTimeout(r, 20)); // still within spinMs of the kick
    assert(poller.yields > y0, `no hot round yielded (${poller.yields - y0})`);
    assert(poller.rounds - r0 >= poller.yields - y0, "every yield was a round");
    await new Promise((r) => setTimeout(r, 60)); // past spinMs: idle waits (timers: no wake word)
    assert(poller.idleWaits > 0, "the poller never went idle");
    assert(pumps > 0);
  } finally {
    poller.remove(quiet);
  }
});
