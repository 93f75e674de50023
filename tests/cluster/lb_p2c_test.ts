/**
 * p2c (brpc's power of two choices with peak EWMA latency): it prefers the faster server, spreads
 * by in-flight calls when nothing is known, punishes fast failures, and forgets with time.
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import { P2cBalancer } from "../../rpc/cluster/lb_p2c.ts";
import { countPicks, NONE, seeded, servers } from "./lb_util.ts";

const FAST = "127.0.0.1:8001", SLOW_A = "127.0.0.1:8002", SLOW_B = "127.0.0.1:8003";

/** A p2c balancer on a hand-moved clock. */
function p2cAt(params: Record<string, string> = {}) {
  const clock = { us: 1_000_000 };
  const lb = new P2cBalancer("p2c", params, { random: seeded(17), nowUs: () => clock.us });
  return { lb, clock };
}

test("p2c: prefers the faster server (one fast, two slow; each call reported as it ends)", () => {
  const { lb, clock } = p2cAt();
  lb.setServers(servers(FAST, SLOW_A, SLOW_B));
  const latency: Record<string, number> = { [FAST]: 200, [SLOW_A]: 2000, [SLOW_B]: 2500 };
  const counts: Record<string, number> = { [FAST]: 0, [SLOW_A]: 0, [SLOW_B]: 0 };
  for (let i = 0; i < 3000; i++) {
    const a = lb.select(NONE)!;
    counts[a]++;
    clock.us += latency[a];
    lb.feedback(a, latency[a], true);
  }
  // Two of three samples contain the fast server, and it wins each of them.
  assert(counts[FAST] > 1900, `fast ${counts[FAST]}`);
  assert(counts[SLOW_A] > 0 && counts[SLOW_B] > 0, "the slow ones still get sampled");
});

test("p2c: with nothing learnt yet, in-flight calls spread the picks evenly", () => {
  const { lb } = p2cAt();
  lb.setServers(servers(FAST, SLOW_A));
  assertEquals(countPicks(lb, 100), { [FAST]: 50, [SLOW_A]: 50 });
});

test("p2c: in-flight calls outweigh a small latency edge", () => {
  const { lb } = p2cAt();
  lb.setServers(servers(FAST, SLOW_A));
  lb.feedback(FAST, 100, true);
  lb.feedback(SLOW_A, 250, true);
  // No feedback: FAST takes calls while 100 × (in flight + 1) stays under 250 × (in flight + 1).
  const picks = Array.from({ length: 4 }, () => lb.select(NONE));
  assertEquals(picks, [FAST, FAST, SLOW_A, FAST]);
});

test("p2c: a server failing fast loses to a healthy slower one", () => {
  const { lb, clock } = p2cAt();
  lb.setServers(servers(FAST, SLOW_A));
  lb.feedback(SLOW_A, 1000, true);
  for (let i = 0; i < 8; i++) {
    clock.us += 10;
    lb.select({ excluded: new Set([SLOW_A]) });
    lb.feedback(FAST, 10, false); // each failure counts as at least twice the EWMA: 10, 20, 40...
  }
  assert(lb.score(0) > lb.score(1), `${lb.score(0)} vs ${lb.score(1)}`);
  assertEquals(countPicks(lb, 1), { [SLOW_A]: 1 });
});

test("p2c: a slow sample replaces the EWMA at once; unobserved, it decays with tau_ms", () => {
  const { lb, clock } = p2cAt({ tau_ms: "1000" });
  lb.setServers(servers(FAST, SLOW_A));
  lb.feedback(FAST, 100, true);
  lb.feedback(FAST, 5000, true);
  assertEquals(lb.score(0), 5000);
  clock.us += 1_000_000; // one tau later
  assert(Math.abs(lb.score(0) - 5000 / Math.E) < 1, `${lb.score(0)}`);
  lb.feedback(FAST, 100, true); // a fast sample after one tau: weight 1 - 1/e
  assertEquals(lb.score(0), Math.trunc(5000 / Math.E + 100 * (1 - 1 / Math.E)));
});

test("p2c: a server that stays keeps what was learnt; feedback for one gone is ignored", () => {
  const { lb } = p2cAt();
  lb.setServers(servers(FAST, SLOW_A));
  lb.feedback(SLOW_A, 3000, true);
  lb.setServers(servers(SLOW_A, SLOW_B));
  assertEquals(lb.score(0), 3000);
  assertEquals(lb.score(1), 1);
  lb.feedback(FAST, 10, true);
  assertEquals([lb.score(0), lb.score(1)], [3000, 1]);
});
