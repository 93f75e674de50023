/**
 * The e2e report (bench/e2e/report.ts, issue 11 item 7): ratios are taken within one round and
 * the targets report the median over the rounds with each round's value; rows are the median of
 * their rounds with the spread.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { markdown, medianRows, type Row, targets } from "../../bench/e2e/report.ts";

const echo = (
  round: number,
  runtime: string,
  system: string,
  inflight: number,
  qps: number,
  p50 = 10,
): Row => ({
  round,
  runtime,
  case: "ECHO 64 B",
  system,
  inflight,
  p50_us: p50,
  p99_us: 2 * p50,
  qps,
});

/** One round of Deno rows: shm and TCP at 32 in flight, the raw echo, and the ring. */
function round(k: number, shm: number, tcp: number): Row[] {
  return [
    echo(k, "deno", "verbus shm", 32, shm),
    echo(k, "deno", "verbus TCP", 32, tcp),
    echo(k, "deno", "raw TCP echo", 32, 2 * tcp),
    echo(k, "deno", "shm ring (promise per call)", 32, 4 * shm),
  ];
}

test("e2e targets: a ratio per round, the median over rounds, each round's value kept", () => {
  // Round 1 is slow on both sides: its ratio is as good as the others'.
  const rows = [...round(0, 900, 300), ...round(1, 300, 150), ...round(2, 1000, 250)];
  const t = targets(rows).find((x) =>
    x.runtime === "deno" && x.target.startsWith("shm ÷ verbus TCP calls/s, 32")
  )!;
  assertEquals(t.perRound, [3, 2, 4]);
  assertEquals(t.value, 3);
  assertEquals(t.met, true);
  const raw = targets(rows).find((x) =>
    x.runtime === "deno" && x.target.startsWith("verbus TCP ÷ raw")
  )!;
  assertEquals([raw.value, raw.met], [0.5, true]);
  const missing = targets(rows).find((x) =>
    x.runtime === "bun" && x.target.startsWith("shm ÷ verbus TCP calls/s, 32")
  )!;
  assertEquals([missing.value, missing.met, missing.perRound], [null, null, [null, null, null]]);
});

test("e2e targets: the ratio is never taken across rounds", () => {
  // Pooled medians would give shm 900 ÷ TCP 250 = 3.6; within rounds it is 2, 2, 2.
  const rows = [...round(0, 900, 450), ...round(1, 500, 250), ...round(2, 200, 100)];
  const t = targets(rows).find((x) =>
    x.runtime === "deno" && x.target.startsWith("shm ÷ verbus TCP calls/s, 32")
  )!;
  assertEquals([t.value, t.met], [2, false]);
});

test("e2e rows: the median of the rounds, the slowest and fastest beside it; markdown says so", () => {
  const rows = [...round(0, 900, 300), ...round(1, 300, 150), ...round(2, 1000, 250)];
  const shm = medianRows(rows).find((r) => r.system === "verbus shm")!;
  assertEquals([shm.qps, shm.qpsMin, shm.qpsMax, shm.rounds], [900, 300, 1000, 3]);
  const md = markdown(rows, "header");
  assert(md.startsWith("header\n"), md);
  assert(
    md.includes("| shm ÷ verbus TCP calls/s, 32 in flight | deno | 3 (3, 2, 4) | ≥ 3 | yes |"),
    md,
  );
  assert(
    md.includes("| deno | ECHO 64 B | verbus shm |  | 32 | — | 10 | 20 | — | 900 | 300–1000 |"),
    md,
  );
  const one = markdown(round(0, 900, 300), "h");
  assert(one.includes("| shm ÷ verbus TCP calls/s, 32 in flight | deno | 3 | ≥ 3 | yes |"), one);
});
