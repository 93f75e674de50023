/**
 * brpc's cluster recover policy as a pure state machine (`cluster_recover.ts`): off until a call
 * finds no usable server; then a call goes ahead with probability usable/min_working_instances;
 * the recovery ends when the usable count (not zero) held still for more than hold_seconds, and
 * a change restarts the hold. Which balancers carry it. (The cluster client applying it over real
 * servers: `cluster_client_test.ts`.)
 * @module
 */
import { ClusterRecoverPolicy } from "../../rpc/cluster/cluster_recover.ts";
import { loadBalancer } from "../../rpc/cluster/balancer.ts";
import "../../rpc/cluster/registry.ts";
import { assert, assertEquals, test } from "../harness.ts";

/** A policy on a hand-moved clock whose draws are `draws` in turn. */
function scripted(min: number, hold: number, draws: number[]) {
  const clock = { ms: 1000 };
  let i = 0;
  const p = new ClusterRecoverPolicy(min, hold, {
    nowMs: () => clock.ms,
    random: () => draws[i++ % draws.length],
  });
  return { p, clock };
}

test("recover policy: never rejects before a call found no usable server", () => {
  const { p } = scripted(4, 10, [0.99]);
  for (let usable = 0; usable < 5; usable++) assertEquals(p.reject(usable), false);
  assertEquals(p.recovering, false);
});

test("recover policy: while recovering, admits a draw below usable/min_working_instances", () => {
  const { p } = scripted(4, 10, [0, 0.24, 0.25, 0.5, 0.74, 0.75, 0.99]);
  p.startRecover();
  assertEquals(p.recovering, true);
  // usable 0: every call rejected, whatever the draw.
  assertEquals([0, 1, 2, 3, 4, 5, 6].map(() => p.reject(0)), [
    true,
    true,
    true,
    true,
    true,
    true,
    true,
  ]);
  // usable 1 of 4: admitted when floor(draw * 4) < 1, i.e. draw < 0.25.
  assertEquals([0, 1, 2, 3, 4, 5, 6].map(() => p.reject(1)), [
    false,
    false,
    true,
    true,
    true,
    true,
    true,
  ]);
  // usable 3 of 4: draw < 0.75.
  assertEquals([0, 1, 2, 3, 4, 5, 6].map(() => p.reject(3)), [
    false,
    false,
    false,
    false,
    false,
    true,
    true,
  ]);
  // usable ≥ min: all admitted.
  assertEquals([0, 1, 2, 3, 4, 5, 6].map(() => p.reject(4)), [
    false,
    false,
    false,
    false,
    false,
    false,
    false,
  ]);
});

test("recover policy: ends once the usable count held for more than hold_seconds; a change restarts the hold", () => {
  const { p, clock } = scripted(4, 2, [0.99]); // draws that a partial cluster rejects
  p.startRecover();
  assertEquals(p.reject(0), true);
  clock.ms += 5000;
  assertEquals(p.reject(0), true, "no usable server: the hold never ends");
  assertEquals(p.reject(1), true, "1 usable: the hold starts");
  clock.ms += 1500;
  assertEquals(p.reject(2), true, "2 usable: the hold restarts");
  clock.ms += 1500;
  assertEquals(p.reject(2), true, "1.5 s of 2 s held");
  clock.ms += 600;
  assertEquals(p.reject(2), false, "held 2.1 s: recovered");
  assertEquals(p.recovering, false);
  assertEquals(p.reject(1), false, "out of recovery: nothing rejected");
  // A second outage starts a fresh recovery.
  p.startRecover();
  assertEquals(p.reject(1), true);
  clock.ms += 2001;
  assertEquals(p.reject(1), false);
});

test("recover policy: rr and random with both parameters carry one, other balancers none", () => {
  const of = (lb: string) => ClusterRecoverPolicy.of(loadBalancer(lb).params);
  const rr = of("rr:min_working_instances=6 hold_seconds=10");
  assert(rr !== null);
  assertEquals([rr.minWorkingInstances, rr.holdSeconds], [6, 10]);
  assertEquals(of("random:min_working_instances=2 hold_seconds=1")?.minWorkingInstances, 2);
  assertEquals(of("rr"), null);
  assertEquals(of("wrr"), null);
  assertEquals(of("c_murmurhash"), null);
});
