/**
 * The spin policy's machine reading (mitata): the runnable-task count of `/proc/loadavg`, as
 * `transport/cpu.ts` reads it now (one `pread` of a descriptor kept open, parsed from bytes)
 * against how it read it before (`readFileSync` + a regex: open, read, close and a string per
 * reading), side by side in one process, so only the ratio matters.
 * Run: `deno run -A bench/cpu_bench.ts` or `bun bench/cpu_bench.ts` (`make bench-ffi` runs both).
 * Prints mitata's table, then one JSON line with the medians and the ratio.
 */
import { readFileSync } from "node:fs";
import { bench, do_not_optimize, run, summary } from "mitata";
import { RUNTIME } from "../ffi/runtime.ts";
import { runnableTasks } from "../transport/cpu.ts";

const RE = /^\S+ \S+ \S+ (\d+)\//;
function before(): number {
  const m = RE.exec(readFileSync("/proc/loadavg", "latin1"));
  return m ? Number(m[1]) : -1;
}

summary(() => {
  bench("before: readFileSync + regex", () => do_not_optimize(before())).baseline(true);
  bench("now: pread of a kept descriptor + byte parse", () => do_not_optimize(runnableTasks()));
});

const res = await run();
const med: Record<string, number> = {};
for (const t of res.benchmarks) {
  const st = t.runs[0]?.stats as { p50?: number } | undefined;
  if (st?.p50 !== undefined) med[t.alias] = st.p50;
}
console.log(JSON.stringify({
  runtime: RUNTIME,
  median_ns: Object.fromEntries(Object.entries(med).map(([k, v]) => [k, +v.toFixed(1)])),
  now_vs_before: +(med["now: pread of a kept descriptor + byte parse"] /
    med["before: readFileSync + regex"]).toFixed(2),
}));
