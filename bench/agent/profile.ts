/**
 * Where the agent's time goes: one `verbus serve`, one `verbus agent`, `--procs` workers through
 * it for `--seconds`; then, per forwarded call:
 * - the CPU (user + kernel, all threads, /proc) of server, agent and workers from 10 % to 75 % of
 *   the run, in ns per call;
 * - default (`--cpu-prof`): the agent under its runtime's CPU profiler, top functions by self time
 *   (wall-clock samples: a function whose thread was preempted keeps the time), % and ns per call
 *   over the whole profile (startup included: compare the per-call rows, not "(idle)");
 * - `--perf`: `perf record` (CPU-clock samples, kernel included) of the agent and of worker 0
 *   over the same window instead, top symbols per process in ns of CPU per call (Deno's JIT
 *   frames named through `--perf-basic-prof`; Bun's show as `[unknown]` / JIT addresses).
 *
 *   node_modules/.bin/deno run -A bench/agent/profile.ts [--runtime deno|bun] [--workers bun|deno]
 *       [--procs 8] [--seconds 5] [--top 30] [--perf] [--root DIR (another checkout)]
 *       [--direct (no agent: the workers with their own connections, for the comparison;
 *                  with --perf, worker 0 is recorded)]
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { arg, ARGS, numArg, sleep } from "../common/args.ts";
import type { CpuProfile } from "../profile/analyze.ts";

const ROOT = resolve(arg("root", new URL("../..", import.meta.url).pathname));
const rt = arg("runtime", "deno") as "deno" | "bun";
const workersRt = arg("workers", "bun") as "deno" | "bun";
const PROCS = numArg("procs", 8), SECONDS = numArg("seconds", 5), TOP = numArg("top", 30);
const PERF = ARGS.includes("--perf"), DIRECT = ARGS.includes("--direct");
if (DIRECT && !PERF) throw new Error("--direct profiles with --perf only");
const bin = (r: string) => join(ROOT, `node_modules/.bin/${r}`);
const dir = mkdtempSync(join(tmpdir(), "verbus-agent-prof-"));
const name = `prof-${Math.random().toString(36).slice(2, 6)}`;

function run(r: string, args: string[], extra: string[] = []) {
  const argv = r === "deno" ? ["run", "-A", ...extra, ...args] : [...extra, ...args];
  const c = spawn(bin(r), argv, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  c.stdout!.on("data", (b) => (out += b));
  c.stderr!.on("data", (b) => (out += b));
  return { c, out: () => out };
}
async function until(p: { out(): string }, re: RegExp): Promise<RegExpExecArray> {
  for (let i = 0; i < 6000; i++) {
    const m = re.exec(p.out());
    if (m) return m;
    await sleep(20);
  }
  throw new Error(`no ${re}:\n${p.out()}`);
}
/** CPU ms (user + kernel, all threads) of `pid` so far. */
function cpuMs(pid: number | undefined): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}
/** Context switches of `pid`'s threads so far: [voluntary (waits), involuntary (preempted, yields)]. */
function switches(pid: number | undefined): [number, number] {
  let v = 0, n = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const st = readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8");
        v += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(st)?.[1] ?? 0);
        n += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(st)?.[1] ?? 0);
      } catch { /* the thread ended */ }
    }
  } catch { /* the process ended */ }
  return [v, n];
}
/** What makes a process's JIT frames nameable by perf (Deno: V8's perf map). */
const perfFlags = (r: string) =>
  PERF && r === "deno" ? [`--v8-flags=--perf-basic-prof,--logfile=${dir}/v8.log`] : [];

const server = run("bun", ["cli/main.ts", "serve", "--port", "0", "--json"]);
const port = (await until(server, /"port":(\d+)/))[1];
const prof = PERF ? perfFlags(rt) : ["--cpu-prof", `--cpu-prof-dir=${dir}`];
const agentArgs = ["cli/main.ts", "agent", "--connect", `127.0.0.1:${port}`, "--listen", name];
const agent = DIRECT ? null : run(rt, agentArgs, prof);
if (agent) await until(agent, /listening on agent:/);
const target = agent ? ["--agent", name] : ["--address", `127.0.0.1:${port}`];
const go = join(dir, "go");
const workers = Array.from(
  { length: PROCS },
  () =>
    run(workersRt, [
      "bench/agent/worker.ts",
      ...target,
      "--go",
      go,
      "--seconds",
      String(SECONDS),
    ], perfFlags(workersRt)),
);
for (const w of workers) await until(w, /^ready$/m);
const load0 = loadavg()[0];
writeFileSync(go, "");
await sleep(SECONDS * 100);
const pids = [server.c.pid, agent?.c.pid, ...workers.map((w) => w.c.pid)];
const c0 = pids.map(cpuMs), s0 = pids.map(switches), t0 = performance.now();
const perfData = join(dir, "perf.data");
const perf = PERF
  ? spawn("perf", [
    "record",
    "-F",
    "999",
    "-g",
    "-o",
    perfData,
    "-p",
    agent ? `${agent.c.pid},${workers[0].c.pid}` : `${workers[0].c.pid}`,
    "--",
    "sleep",
    String(SECONDS * 0.65),
  ], { stdio: "ignore" })
  : null;
await sleep(SECONDS * 650);
const c1 = pids.map(cpuMs), s1 = pids.map(switches), window = (performance.now() - t0) / 1000;
if (perf) await new Promise((r) => perf.once("exit", r));
const results = await Promise.all(workers.map((w) => until(w, /result (\{.*\})/)));
const rates = results.map((m) => JSON.parse(m[1])).map((r) => r.calls / r.seconds);
const calls = rates.reduce((a, r) => a + r, 0);
if (agent) {
  agent.c.kill("SIGTERM");
  await new Promise((r) => agent.c.once("exit", r));
}
server.c.kill("SIGTERM");
const nsPer = (i: number) => ((c1[i] - c0[i]) * 1e6) / (calls * window);
let wNs = 0;
for (let i = 2; i < pids.length; i++) wNs += nsPer(i);
console.log(
  `${agent ? `agent (${rt})` : "direct"} with ${PROCS} ${workersRt} workers: ${
    Math.round(calls)
  } calls/s (load ${load0.toFixed(1)}); CPU ns/call (/proc): server ${nsPer(0).toFixed(0)}, agent ${
    nsPer(1).toFixed(0)
  }, workers ${wNs.toFixed(0)} (worker 0: ${
    (nsPer(2) * calls / rates[0]).toFixed(0)
  } per own call)`,
);

/** Switches per call of the processes `from`.. `to` (exclusive): "voluntary + involuntary". */
const sw = (from: number, to: number) => {
  let v = 0, n = 0;
  for (let i = from; i < to; i++) v += s1[i][0] - s0[i][0], n += s1[i][1] - s0[i][1];
  const per = calls * window;
  return `${(v / per).toFixed(3)} + ${(n / per).toFixed(3)}`;
};
console.log(
  `context switches per call (voluntary + involuntary): server ${sw(0, 1)}, agent ${
    sw(1, 2)
  }, workers ${sw(2, pids.length)}`,
);
if (PERF) {
  // Per process: symbols by self samples (CPU clock), as ns of CPU per call of that process.
  const perCall = [...(agent ? [{ pid: agent.c.pid!, what: "agent", n: calls }] : []), {
    pid: workers[0].c.pid!,
    what: "worker 0",
    n: rates[0],
  }];
  for (const { pid, what, n } of perCall) {
    const rep = spawnSync("perf", [
      "report",
      "-i",
      perfData,
      "--pid",
      String(pid),
      "--no-children",
      "-n",
      "--sort",
      "dso,sym",
      "--stdio",
      "-g",
      "none",
    ], { encoding: "utf8", maxBuffer: 64 << 20 });
    // Rows: "  pct%  samples  dso  [.] sym"; ns of CPU per call = samples / 999 Hz / calls.
    const rows = rep.stdout.split("\n").map((l) => /^\s+(\d+\.\d+)%\s+(\d+)\s+(.*)$/.exec(l))
      .filter((m) => m !== null) as RegExpExecArray[];
    const total = rows.reduce((a, m) => a + Number(m[2]), 0);
    const ns = (samples: number) => (samples / 999) * 1e9 / (n * SECONDS * 0.65);
    console.log(
      `\n${what} (pid ${pid}): ${total} samples ≈ ${ns(total).toFixed(0)} ns CPU per call`,
    );
    const kernel = rows.filter((m) => m[3].includes("[kernel")).reduce(
      (a, m) => a + Number(m[2]),
      0,
    );
    console.log(`  kernel ${ns(kernel).toFixed(0)} ns, user ${ns(total - kernel).toFixed(0)} ns`);
    for (const m of rows.slice(0, TOP)) {
      console.log(
        `${ns(Number(m[2])).toFixed(0).padStart(6)} ns  ${
          m[3].replace(/\s+/g, " ").replace(`file://${ROOT}/`, "")
        }`,
      );
    }
  }
} else {
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) throw new Error(`no profile in ${dir}:\n${agent?.out()}`);
  const p: CpuProfile = JSON.parse(readFileSync(join(dir, file), "utf8"));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i + 1] ?? 0)));
  const byFn = new Map<string, number>();
  let total = 0;
  for (const n of p.nodes) {
    const us = self.get(n.id) ?? 0;
    total += us;
    const f = n.callFrame;
    const key = `${f.functionName || "(anon)"} ${f.url.replace(`file://${ROOT}/`, "")}:${
      (f.lineNumber ?? 0) + 1
    }`;
    byFn.set(key, (byFn.get(key) ?? 0) + us);
  }
  const forwarded = calls * SECONDS;
  console.log(`profile ${(total / 1e6).toFixed(1)} s over ~${Math.round(forwarded)} calls`);
  for (const [k, us] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
    console.log(
      `${(us / total * 100).toFixed(1).padStart(5)} % ${
        (us * 1000 / forwarded).toFixed(0).padStart(6)
      } ns/call  ${k}`,
    );
  }
}
rmSync(dir, { recursive: true, force: true });
