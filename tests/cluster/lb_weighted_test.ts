/**
 * The weighted balancers: wrr (brpc's stride walk: exact shares in every turn, brpc's sequence)
 * and wr (weighted random: shares within a bound, seeded).
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import { WeightedRoundRobinBalancer, wrrStride } from "../../rpc/cluster/lb_wrr.ts";
import { WeightedRandomBalancer } from "../../rpc/cluster/lb_wr.ts";
import { countPicks, NONE, seeded, servers } from "./lb_util.ts";

/** A wrr balancer whose walk starts at the first server (brpc starts at a random one). */
function wrrFromFirst(...lines: string[]): WeightedRoundRobinBalancer {
  const lb = new WeightedRoundRobinBalancer("wrr", {}, { random: () => 0 });
  lb.setServers(servers(...lines));
  return lb;
}

/** The last digit of the next `n` picks' ports (server 8001 → 1). */
function ports(lb: WeightedRoundRobinBalancer, n: number): number[] {
  return Array.from({ length: n }, () => Number(lb.select(NONE)!.slice(-1)));
}

test("wrr: brpc's stride, a prime from its table coprime with the total weight", () => {
  // By hand from brpc's rule: the first prime of its table ≥ the truncated average weight that
  // is coprime with the sum, reduced modulo the sum when larger.
  assertEquals(wrrStride(6, 3), 5); // avg 2: 2 and 3 share a factor with 6, 5 does not
  assertEquals(wrrStride(11, 5), 2); // avg 2, coprime with 11
  assertEquals(wrrStride(10, 3), 3); // avg 3
  assertEquals(wrrStride(2, 2), 1); // avg 1: 2 shares with 2; 3 > 2, so 3 mod 2
  assertEquals(wrrStride(1, 1), 1);
  assertEquals(wrrStride(3000, 3), 1289); // avg 1000: 1289 is the first prime ≥ 1000
});

test("wrr: the sequence brpc's walk gives for the same weights from the same start", () => {
  // By hand: lay the weights end to end as units (1,2,3 → a|bb|ccc), move the cursor one
  // stride (5) per call from unit 0, pick the server under it: units 5,4,3,2,1,6.
  const three = wrrFromFirst("127.0.0.1:8001 1", "127.0.0.1:8002 2", "127.0.0.1:8003 3");
  assertEquals(ports(three, 12).join(""), "332213332213");
  // 1,4,2,3,1 (sum 11, stride 2): units 2,4,6,8,10,1,3,5,7,9,11.
  const five = wrrFromFirst(
    "127.0.0.1:8001 1",
    "127.0.0.1:8002 4",
    "127.0.0.1:8003 2",
    "127.0.0.1:8004 3",
    "127.0.0.1:8005 1",
  );
  assertEquals(ports(five, 11).join(""), "22344122345");
  // Equal weights: plain alternation.
  assertEquals(ports(wrrFromFirst("127.0.0.1:8001", "127.0.0.1:8002"), 4), [1, 2, 1, 2]);
});

test("wrr: any sum(weights) consecutive picks hold each server exactly its weight", () => {
  const weights = [5, 3, 2, 7, 1];
  const lb = new WeightedRoundRobinBalancer("wrr", {}, { random: seeded(9) });
  lb.setServers(servers(...weights.map((w, i) => `127.0.0.1:${8001 + i} ${w}`)));
  const sum = weights.reduce((a, b) => a + b);
  const seq = Array.from({ length: sum * 6 }, () => Number(lb.select(NONE)!.slice(-1)) - 1);
  for (let start = 0; start + sum <= seq.length; start++) {
    const counts = weights.map(() => 0);
    for (const i of seq.slice(start, start + sum)) counts[i]++;
    assertEquals(counts, weights, `window at ${start}`);
  }
  // Smooth, not in runs: the heaviest server (7 of 18) never takes more than 2 picks in a row.
  let run = 0, longest = 0;
  for (let i = 0; i < seq.length; i++) {
    run = i > 0 && seq[i] === seq[i - 1] ? run + 1 : 1;
    longest = Math.max(longest, run);
  }
  assert(longest <= 2, `a run of ${longest}`);
});

test("wrr: a changed list keeps exact shares; an excluded server is skipped", () => {
  const lb = wrrFromFirst("127.0.0.1:8001 1", "127.0.0.1:8002 2");
  ports(lb, 2);
  lb.setServers(servers("127.0.0.1:8001 2", "127.0.0.1:8002 2", "127.0.0.1:8003 4"));
  assertEquals(countPicks(lb, 80), {
    "127.0.0.1:8001": 20,
    "127.0.0.1:8002": 20,
    "127.0.0.1:8003": 40,
  });
  const ex = { excluded: new Set(["127.0.0.1:8003"]) };
  const c = countPicks(lb, 100, ex);
  assertEquals(c["127.0.0.1:8003"], undefined);
  assertEquals(c["127.0.0.1:8001"] + c["127.0.0.1:8002"], 100);
});

test("wr: shares in proportion to the weights (seeded, within 2.5 % of all picks)", () => {
  const lb = new WeightedRandomBalancer("wr", {}, { random: seeded(2024) });
  lb.setServers(servers("127.0.0.1:8001 1", "127.0.0.1:8002 2", "127.0.0.1:8003 3"));
  const n = 60_000;
  const c = countPicks(lb, n);
  for (const [port, w] of [[8001, 1], [8002, 2], [8003, 3]]) {
    const got = c[`127.0.0.1:${port}`];
    assert(Math.abs(got - n * w / 6) < n * 0.025, `${port}: ${got} of ${n}`);
  }
  // A heavier server gets more, a weight-1 server still gets some.
  assert(c["127.0.0.1:8003"] > c["127.0.0.1:8002"] && c["127.0.0.1:8002"] > c["127.0.0.1:8001"]);
});

test("wr: an excluded draw is drawn again; the rest keep their relative shares", () => {
  const lb = new WeightedRandomBalancer("wr", {}, { random: seeded(5) });
  lb.setServers(servers("127.0.0.1:8001 1", "127.0.0.1:8002 8", "127.0.0.1:8003 3"));
  const c = countPicks(lb, 40_000, { excluded: new Set(["127.0.0.1:8002"]) });
  assertEquals(c["127.0.0.1:8002"], undefined);
  const ratio = c["127.0.0.1:8003"] / c["127.0.0.1:8001"];
  assert(ratio > 2.6 && ratio < 3.4, `ratio ${ratio}`);
});
