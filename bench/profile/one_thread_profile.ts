/**
 * The per-call cost breakdown of `one_thread.ts` (server and client in one thread over shm, ECHO
 * 64 B): runs it under each runtime's CPU profiler with the phase markers (`--marks`), then
 * attributes the measured phase's samples to the categories of `categories.ts` (side `both`: a
 * side's own frame, such as the payload copy-out, counts for its caller) with `analyze.ts`.
 * The ns per call add up to the profiled µs per call (the profiler slows the run: compare
 * categories between trees, not with `one_thread.ts`'s own figure).
 *
 *   deno run -A bench/profile/one_thread_profile.ts [--runtime deno|bun|both] [--windows 1,32]
 *       [--calls 500000] [--interval 50] [--root DIR] [--out FILE.json]
 *
 * Prints a Markdown table (categories × runtime/window, ns per call) and the top functions.
 * @module
 */
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { analyze, type CpuProfile, type SideReport } from "./analyze.ts";
import { CATEGORIES } from "./categories.ts";
import { arg, numArg, runOneThread, runtimesArg } from "./common.ts";

const runtimes = runtimesArg();
const windows = arg("windows", "1,32").split(",").map(Number);
const calls = numArg("calls", 500_000), interval = numArg("interval", 50);
const root = resolve(arg("root", resolve(new URL("../..", import.meta.url).pathname)));

interface Case {
  runtime: string;
  window: number;
  us_per_call: number;
  report: SideReport;
}

function profile(rt: "deno" | "bun", window: number): Case {
  const dir = mkdtempSync(join(tmpdir(), "verbus-1t-"));
  try {
    const prof = ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-interval", String(interval)];
    const args = ["--marks", "--reps", "1", "--calls", String(calls), "--window", String(window)];
    const r = runOneThread(rt, root, args, prof);
    const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
    if (!file) throw new Error(`${rt} w=${window}: no .cpuprofile in ${dir}`);
    const cpu = JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile;
    const made = r.calls_made as number;
    const report = analyze(cpu, "both", made, [root, realpathSync(root)], interval, 12);
    return { runtime: rt, window, us_per_call: r.us_per_call as number, report };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const cases: Case[] = [];
for (const rt of runtimes) for (const w of windows) cases.push(profile(rt, w));
const head = cases.map((c) => `${c.runtime} w=${c.window}`);
const lines = [
  `one_thread.ts under the profiler (${root}); ns per call of the measured phase`,
  "",
  `| category | ${head.join(" | ")} |`,
  `|---|${head.map(() => "---:").join("|")}|`,
];
for (const cat of CATEGORIES) {
  const v = cases.map((c) => c.report.categories[cat].nsPerCall);
  if (v.every((x) => x < 0.5)) continue;
  lines.push(`| ${cat} | ${v.map((x) => x.toFixed(0)).join(" | ")} |`);
}
lines.push(`| **wall** | ${cases.map((c) => c.report.wallNsPerCall.toFixed(0)).join(" | ")} |`);
for (const c of cases) {
  lines.push(
    "",
    `${c.runtime} w=${c.window} (markers ${c.report.windowed ? "found" : "NOT found"}):`,
  );
  for (const f of c.report.top) {
    lines.push(`- ${f.nsPerCall.toFixed(0)} ns ${f.fn} (${f.location}, ${f.category})`);
  }
}
console.log(lines.join("\n"));
const out = arg("out", "");
if (out) writeFileSync(out, JSON.stringify({ root, calls, cases }, null, 2) + "\n");
