/**
 * Before/after table of `bench/scale/run.ts --fabric urma` runs (the SIMULATED liburma): one
 * active ECHO among N idle URMA sessions, idle server CPU, threads, setup rate — for each tree,
 * runtime and count, with ratios against the same run's 10 sessions and after/before at equal
 * counts. Usage:
 *   deno run -A bench/scale/urma_compare.ts --before a.json[,b.json] --after c.json[,d.json]
 * Prints Markdown. Each JSON is one run.ts report; several per side are rounds (all listed).
 * @module
 */
import { readFileSync } from "node:fs";
import { RUNTIME } from "../../ffi/runtime.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const opt = (name: string) => {
  const i = args.indexOf(`--${name}`);
  if (i < 0 || !args[i + 1]) throw new Error(`--${name} FILE[,FILE] is required`);
  return args[i + 1].split(",");
};

interface Row {
  runtime: string;
  sessions: number;
  urma: number;
  p50: number;
  best: number;
  idle: number;
  threads: number;
  rate: number;
  /** The fabric the timed session ran on (a TCP one makes its row meaningless here). */
  active: string;
}

function rows(file: string): Row[] {
  // deno-lint-ignore no-explicit-any
  const report = JSON.parse(readFileSync(file, "utf8")) as { results: any[] };
  return report.results.map((r) => ({
    runtime: r.runtime,
    sessions: r.sessions,
    urma: r.setup?.fallbackReasons?.["urma (simulated)"] ?? r.setup?.onFabric ?? 0,
    p50: r.echo?.p50Us ?? NaN,
    best: r.echo?.bestRoundP50Us ?? NaN,
    idle: r.idle?.serverCpuPct ?? NaN,
    threads: r.idle?.server?.threads ?? r.serverAfterSetup?.threads ?? NaN,
    rate: r.setup?.sessionsPerS ?? NaN,
    active: r.echo?.fabric ?? "?",
  }));
}

const x = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : "–");
const sides = { before: opt("before"), after: opt("after") };
const out: string[] = [];
for (const runtime of ["deno", "bun"]) {
  out.push(`### ${runtime}`, "");
  out.push(
    "| tree | round | sessions | on URMA | timed on | ECHO p50 µs | ×10 | best-round p50 µs | ×10 | idle server CPU % | server threads | setup sessions/s |",
    "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
  );
  for (const [tree, files] of Object.entries(sides)) {
    files.forEach((file, k) => {
      const rs = rows(file).filter((r) => r.runtime === runtime);
      const base = rs.find((r) => r.sessions === 10);
      for (const r of rs) {
        out.push(
          `| ${tree} | ${k + 1} | ${r.sessions} | ${r.urma} | ${r.active} | ${r.p50} | ${
            x(r.p50, base?.p50 ?? 0)
          } | ${r.best} | ${x(r.best, base?.best ?? 0)} | ${r.idle} | ${r.threads} | ${r.rate} |`,
        );
      }
    });
  }
  out.push("");
}
console.log(out.join("\n"));
