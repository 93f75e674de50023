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
import { spawnSync } from "node:child_process";
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
import process from "node:process";
import { analyze, type CpuProfile, type SideReport } from "./analyze.ts";
import { CATEGORIES } from "./categories.ts";
import { arg, numArg } from "./common.ts";
import { lastJson } from "../common/child_json.ts";

const HERE = resolve(new URL(".", import.meta.url).pathname);
const ROOT = resolve(HERE, "../..");
const which = arg("runtime", "both");
const runtimes = which === "both" ? ["deno", "bun"] : [which];
if (!runtimes.every((rt) => rt === "deno" || rt === "bun")) {
  throw new Error(`--runtime expects deno, bun or both, not "${which}"`);
}
const windows = arg("windows", "1,32").split(",").map(Number);
const calls = numArg("calls", 500_000), interval = numArg("interval", 50);
const root = resolve(arg("root", ROOT));

interface Case {
  runtime: string;
  window: number;
  us_per_call: number;
  report: SideReport;
}

function profile(rt: string, window: number): Case {
  const dir = mkdtempSync(join(tmpdir(), "verbus-1t-"));
  try {
    const bin = resolve(ROOT, "node_modules/.bin", rt);
    const prof = ["--cpu-prof", "--cpu-prof-dir", dir, "--cpu-prof-interval", String(interval)];
    const script = [join(HERE, "one_thread.ts"), "--marks", "--reps", "1"];
    const argv = rt === "deno" ? ["run", "-A", ...prof, ...script] : [...prof, ...script];
    const p = spawnSync(bin, [...argv, "--calls", String(calls), "--window", String(window)], {
      env: { ...process.env, VERBUS_ROOT: root },
      encoding: "utf8",
      timeout: 600_000,
    });
    const r = lastJson([bin, argv], p.stdout ?? "", `exit ${p.status}: ${p.stderr}`);
    const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
    if (p.status !== 0 || !file) throw new Error(`${rt} w=${window}: exit ${p.status}, no profile`);
    const cpu = JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile;
    const made = Math.ceil(calls / window) * window;
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
