/**
 * The UBRing poller's hot rounds: once nothing moved for 50 µs each round first naps (a short
 * timed wait, the thread's timer slack lowered to 1 µs while the loop runs and restored when it
 * ends) and the loop keeps turning; past `spinMs` it waits idle. No timing is asserted: counters
 * and the slack only. Both runtimes.
 */
import { loadHelper } from "../../ffi/helper.ts";
import type { Pumpable } from "../../transport/brpc_ubring/poller.ts";
import { UbringPoller } from "../../transport/brpc_ubring/poller.ts";
import { assert, assertEquals, test } from "../harness.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("brpc-ubring poller: hot rounds without progress nap with a 1 µs timer slack, then go idle; the slack is restored", async () => {
  const s = (await loadHelper()).lib.symbols;
  const slack = () => {
    const before = Number(s.vb_timer_slack(0)); // read it (0: the default) …
    s.vb_timer_slack(before); // … and put it back
    return before;
  };
  const initial = slack();
  const poller = new UbringPoller();
  let pumps = 0, slackWhileHot = -1;
  const quiet: Pumpable = {
    pump: () => (pumps++, false),
    spinMs: 40,
    idlePollMs: 5,
    wakeWord: () => null,
  };
  poller.add(quiet);
  try {
    await sleep(5); // the helper loads; rounds turn
    poller.kick();
    const r0 = poller.rounds, n0 = poller.naps;
    await sleep(20); // within spinMs of the kick
    slackWhileHot = slack();
    assert(poller.naps > n0, `no hot round napped (${poller.naps - n0})`);
    assert(poller.rounds - r0 >= poller.naps - n0, "every nap was a round");
    await sleep(80); // past spinMs: idle waits (timers: no wake word)
    assert(poller.idleWaits > 0, "the poller never went idle");
    assert(pumps > 0);
  } finally {
    poller.remove(quiet);
  }
  assertEquals(slackWhileHot, 1000, "the naps' timer slack");
  await sleep(20); // the loop ends with no connection left
  assertEquals(slack(), initial, "the thread's slack is restored");
});
