/**
 * A/B of `one_thread.ts` (the CPU cost of one call, client and server in one thread) between two
 * checkouts, the runs alternating A, B, A, B… so both see the same machine; per runtime the median
 * of the rounds' figures and B ÷ A.
 *
 *   deno run -A bench/profile/one_thread_ab.ts [--a HEAD] [--b .] [--runtime deno|bun|both]
 *       [--rounds 5] [--calls 300000] [--window 1] [--metric wall|cpu] [--out FILE.json]
 *
 * `--metric cpu` compares the process's CPU time per call (user + kernel, all threads) instead
 * of the wall time: on a host other work shares, the wall time swings with it, the CPU time much
 * less.
 *
 * A side is a checkout directory (which needs its `build/`, the helper) or a git revision of
 * this repository, extracted and built in a temporary directory (`bench/common/revision_tree.ts`);
 * default `--a HEAD --b .`. Both are run by this checkout's runtimes and script (`VERBUS_ROOT`
 * picks the verbus measured); the side that goes first alternates between rounds. Prints one
 * JSON line per runtime.
 * @module
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { arg, numArg, runOneThread, runtimesArg } from "./common.ts";
import { median } from "../common/median.ts";
import { RevisionTrees } from "../common/revision_tree.ts";

const trees = new RevisionTrees(resolve(new URL("../..", import.meta.url).pathname));
const rounds = Math.max(1, numArg("rounds", 5)), calls = numArg("calls", 300_000);
const window = numArg("window", 1);
const runtimes = runtimesArg();

/** `--metric cpu`: CPU time per call (what the host's other load hardly moves); else wall time. */
const metric = arg("metric", "wall") === "cpu" ? "cpu_us_per_call" : "us_per_call";
const once = (rt: "deno" | "bun", root: string): number =>
  runOneThread(rt, root, ["--calls", String(calls), "--window", String(window)])[metric] as number;

const results: Record<string, unknown>[] = [];
let a = "", b = "";
try {
  a = trees.side(arg("a", "HEAD")).root;
  b = trees.side(arg("b", ".")).root;
  for (const rt of runtimes) measure(rt);
} finally {
  trees.close();
}

function measure(rt: "deno" | "bun"): void {
  const av: number[] = [], bv: number[] = [];
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) av.push(once(rt, a)), bv.push(once(rt, b));
    else bv.push(once(rt, b)), av.push(once(rt, a));
  }
  const res = {
    runtime: rt,
    a,
    b,
    window,
    metric,
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
