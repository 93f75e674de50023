/**
 * Where the CPU of a loaded host goes: one `verbus serve` and N `verbus call --async-bench`
 * clients of one runtime (the e2e "4 clients × 32" row), and over a window in the middle of the
 * run each process's CPU time (user and kernel, all threads, from `/proc/PID/stat`) and context
 * switches (voluntary and not, summed over `/proc/PID/task/*\/status`). It answers: is the row
 * CPU-bound, and which side spends the CPU — the server's work, or clients waiting.
 *
 *   deno run -A bench/profile/cpu_split.ts [--runtime deno|bun|both] [--clients 4] [--window 32]
 *       [--calls 4000000] [--fabric shm|tcp] [--settle-s 2] [--measure-s 2] [--reps 1]
 *       [--client-env K=V,K=V] [--root DIR] [--out FILE.json]
 *
 * `--client-env`: environment for the clients only (experiments behind an env switch).
 * Figures are per call over the window (calls/s = the clients' own rates, summed); run it on an
 * otherwise idle machine: another process's CPU is not in any column.
 * @module
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { arg, numArg, runtimesArg, sleep } from "../common/args.ts";
import { asyncBenchArgs } from "../common/bench_call.ts";
import { lastJson } from "../common/child_json.ts";
import { median } from "../common/median.ts";
import { minusUsage as minus, procUsage, sumUsage as sum, type Usage } from "../common/proc_cpu.ts";
import { verbusCli } from "../common/verbus_cli.ts";
import { startServe } from "../../cli/self.ts";

const HERE = resolve(new URL("../..", import.meta.url).pathname);
const ROOT = resolve(arg("root", HERE));
const RUNTIMES = runtimesArg();
const CLIENTS = Math.max(1, numArg("clients", 4)), WINDOW = numArg("window", 32);
const CALLS = numArg("calls", 4_000_000), FABRIC = arg("fabric", "shm");
const SETTLE_S = numArg("settle-s", 2), MEASURE_S = numArg("measure-s", 2);
const REPS = Math.max(1, numArg("reps", 1));
const CLIENT_ENV = Object.fromEntries(
  arg("client-env", "").split(",").filter(Boolean).map((kv) => kv.split("=", 2)),
);
const cmd = (rt: string, a: string[]) => verbusCli(rt, ROOT, a);

/** CPU ms and context switches of `pid` (see `bench/common/proc_cpu.ts`). */
function usage(pid: number): Usage {
  try {
    return procUsage(pid);
  } catch (e) {
    throw new Error(`${(e as Error).message}: raise --calls`);
  }
}

/** One side's figures over the window, per call (`calls` = calls/s × window). */
function side(u: Usage, wallMs: number, calls: number) {
  const cpu = u.user + u.sys;
  return {
    cpu_pct: +((cpu / wallMs) * 100).toFixed(1),
    kernel_share: cpu > 0 ? +(u.sys / cpu).toFixed(2) : 0,
    cpu_ns_per_call: +((cpu * 1e6) / calls).toFixed(0),
    switches_per_call: +((u.vcsw + u.ivcsw) / calls).toFixed(3),
    involuntary_per_call: +(u.ivcsw / calls).toFixed(3),
  };
}

async function once(rt: string) {
  const [sb, sa] = cmd(rt, ["serve", "--port", "0", "--json"]) as [string, string[]];
  const server = await startServe([sb, sa], ROOT);
  try {
    const [cb, ca] = cmd(
      rt,
      asyncBenchArgs({
        port: server.port,
        fabric: FABRIC,
        op: "echo",
        bytes: 64,
        window: WINDOW,
        calls: CALLS,
        warmup: 20_000,
      }),
    );
    const kids = Array.from({ length: CLIENTS }, () => {
      const p = spawn(cb, ca, {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, ...CLIENT_ENV },
      });
      let out = "", err = "";
      p.stdout!.on("data", (d) => (out += d));
      p.stderr!.on("data", (d) => (err += d));
      const done = new Promise<Record<string, unknown>>((res, rej) =>
        p.on("close", (code) => {
          try {
            res(lastJson([cb, ca], out, `exit ${code}: ${err}`));
          } catch (e) {
            rej(e);
          }
        })
      );
      return { pid: p.pid!, done };
    });
    await sleep(SETTLE_S * 1000);
    const pids = [server.pid, ...kids.map((k) => k.pid)];
    const u0 = pids.map(usage), t0 = performance.now();
    await sleep(MEASURE_S * 1000);
    const u1 = pids.map(usage), wall = performance.now() - t0;
    const results = await Promise.all(kids.map((k) => k.done));
    const qps = results.reduce((a, j) => a + Number((j.result as { qps: number }).qps), 0);
    const seconds = Math.min(
      ...results.map((j) => Number((j.result as { seconds: number }).seconds)),
    );
    if (seconds < SETTLE_S + MEASURE_S) {
      console.error(`warning: a client ran ${seconds} s, shorter than the window: raise --calls`);
    }
    const d = u1.map((u, i) => minus(u, u0[i]));
    const calls = (qps * wall) / 1000;
    return {
      qps,
      server: side(d[0], wall, calls),
      clients: side(sum(d.slice(1)), wall, calls),
    };
  } finally {
    await server.stop();
  }
}

const rows: Record<string, unknown>[] = [];
for (const rt of RUNTIMES) {
  const reps = [];
  for (let r = 0; r < REPS; r++) reps.push(await once(rt));
  // The rep with the median calls/s (its figures belong together).
  const mid = reps.slice().sort((a, b) => a.qps - b.qps)[Math.floor(reps.length / 2)];
  const row = {
    runtime: rt,
    fabric: FABRIC,
    client_count: CLIENTS,
    inflight: WINDOW,
    client_env: CLIENT_ENV,
    qps_median: median(reps.map((x) => x.qps)),
    ...mid,
  };
  rows.push(row);
  console.log(JSON.stringify(row));
}
const file = arg("out", "");
if (file) writeFileSync(file, JSON.stringify({ root: ROOT, reps: REPS, rows }, null, 2) + "\n");
