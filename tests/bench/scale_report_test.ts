/**
 * The scale report's targets table (bench/scale/report.ts, issue 10): ratios against the
 * 10-session baseline of the same runtime, the steady-state ECHO (after idling) apart from the one
 * right after setup, the settled idle window preferred, and a count that did not set up every
 * session never taken for the largest.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { type CountResult, markdown, targets } from "../../bench/scale/report.ts";

function count(
  sessions: number,
  o: {
    p50: number;
    idleP50?: number;
    perS: number;
    cpu: number;
    settled?: number;
    threads: number;
    complete?: boolean;
  },
): CountResult {
  return {
    runtime: "deno",
    sessions,
    status: "ok",
    setup: { reached: sessions, complete: o.complete ?? true, sessionsPerS: o.perS, seconds: 1 },
    serverAfterSetup: { threads: o.threads },
    echo: { p50Us: o.p50, p99Us: 2 * o.p50, bestRoundP50Us: o.p50, complete: true },
    ...(o.idleP50 === undefined ? {} : { echoIdle: { p50Us: o.idleP50, p99Us: 3 * o.idleP50 } }),
    idle: { serverCpuPct: o.cpu },
    ...(o.settled === undefined ? {} : { idleSettled: { serverCpuPct: o.settled } }),
  };
}

test("scale targets: after-idling p50 ratio, setup rate, settled idle CPU, threads", () => {
  const rows = targets([
    count(10, { p50: 4, idleP50: 2, perS: 200, cpu: 0.2, threads: 7 }),
    count(1000, { p50: 5, idleP50: 2.2, perS: 900, cpu: 0.3, threads: 7 }),
    count(10000, { p50: 10, idleP50: 2.8, perS: 1900, cpu: 1.4, settled: 0.4, threads: 7 }),
  ]);
  assertEquals(rows.map((r) => r.value), ["1.4×", "2.5×", "1900/s", "0.4 %", "1×"]);
  assertEquals(rows.map((r) => r.met), [true, false, true, true, true]);
  assert(rows[0].target.includes("10,000 sessions") && rows[0].target.includes("after idling"));
  assert(rows[3].target.includes("settled"), rows[3].target);
});

test("scale targets: misses are reported as not met, missing figures as unknown", () => {
  const rows = targets([
    count(10, { p50: 3, perS: 150, cpu: 0.2, threads: 7 }),
    count(10000, { p50: 9, idleP50: undefined, perS: 800, cpu: 2, threads: 14 }),
  ]);
  assertEquals(rows.map((r) => r.met), [null, false, false, false, false]);
  assertEquals(rows[0].value, "–");
});

test("scale targets: the largest count that set up every session is the one judged", () => {
  const rows = targets([
    count(10, { p50: 4, idleP50: 2, perS: 200, cpu: 0.2, threads: 7 }),
    count(1000, { p50: 4, idleP50: 2, perS: 1100, cpu: 0.2, threads: 7 }),
    count(10000, { p50: 40, idleP50: 20, perS: 300, cpu: 5, threads: 7, complete: false }),
  ]);
  assert(rows[0].target.includes("1,000 sessions"), rows[0].target);
  assertEquals(rows.map((r) => r.met), [true, true, true, true, true]);
  assertEquals(targets([count(10, { p50: 4, perS: 200, cpu: 0.2, threads: 7 })]), []);
});

test("scale report: the markdown carries the after-idling columns and the targets table", () => {
  const md = markdown({
    date: "d",
    commit: "c",
    root: "/r",
    fabric: "shm",
    machine: "2 cores",
    fdLimit: "n",
    maxSeconds: 180,
    versions: {},
    note: "",
    results: [
      count(10, { p50: 4, idleP50: 2, perS: 200, cpu: 0.2, threads: 7 }),
      count(10000, { p50: 10, idleP50: 2.8, perS: 1900, cpu: 0.4, threads: 7 }),
    ],
  });
  assert(md.includes("after idling: ECHO p50 µs"), "column");
  assert(md.includes("| ECHO p50, 10,000 sessions ÷ 10, after idling | 1.4× | ≤ 1.5× | yes |"), md);
  // The row's after-idling p50 and p99 sit next to the right-after-setup ones.
  assert(md.includes("| 10 | 10 | 1 | 200 | – / – | 4 | 8 | 4 | 2 | 6 |"), md);
});
