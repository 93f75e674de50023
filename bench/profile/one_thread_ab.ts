/**
 * A/B of `one_thread.ts` (the CPU cost of one call, client and server in one thread) between two
 * checkouts, the runs alternating A, B, A, B… so both see the same machine; per runtime the median
 * of the rounds' figures and B ÷ A.
 *
 *   deno run -A bench/profile/one_thread_ab.ts --a /path/to/base --b . [--runtime deno|bun|both]
 *       [--rounds 5] [--calls 300000] [--window 1] [--out FILE.json]
 *
 * Both checkouts are run by this checkout's runtimes and script (`VERBUS_ROOT` picks the verbus
 * measured); each needs its `build/` (the helper). Prints one JSON line per runtime.
 * @module
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { arg, numArg, runOneThread, runtimesArg } from "./common.ts";
import { median } from "../common/median.ts";

const a = resolve(arg("a", "")), b = resolve(arg("b", "."));
const rounds = Math.max(1, numArg("rounds", 5)), calls = numArg("calls", 300_000);
const window = numArg("window", 1);
const runtimes = runtimesArg();
if (!arg("a", "")) throw new Error("--a DIR (the base checkout) is required");

const once = (rt: "deno" | "bun", root: string): number =>
  runOneThread(rt, root, ["--calls", String(calls), "--window", String(window)])
    .us_per_call as number;

const results = [];
for (const rt of runtimes) {
  const av: number[] = [], bv: number[] = [];
  for (let r = 0; r < rounds; r++) {
    av.push(once(rt, a));
    bv.push(once(rt, b));
  }
  const res = {
    runtime: rt,
    a,
    b,
    window,
    a_us_per_call: median(av),
    b_us_per_call: median(bv),
    b_over_a: Math.round(median(bv) / median(av) * 1000) / 1000,
    a_rounds: av,
    b_rounds: bv,
  };
  console.log(JSON.stringify(res));
  results.push(res);
}
const out = arg("out", "");
if (out) writeFileSync(out, JSON.stringify(results, null, 2) + "\n");
