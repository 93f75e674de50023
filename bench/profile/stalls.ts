/**
 * Where the throughput of many calls in flight goes when the per-call work is small: stalls.
 * Starts the profile echo server (`echo_server.ts`, same runtime) and, in this process, runs N
 * ECHO calls with W in flight over one path, recording when every answer arrived. Prints one JSON
 * line: calls/s, latency percentiles, the CPU share each process used (100 = one core), and the gaps between consecutive answers — how many gaps
 * passed 50 µs / 200 µs / 1 ms and what share of the wall time they took — plus this process's
 * progress-engine counters (turns, idle sleeps, spins cut short) per 1,000 calls.
 *
 *   deno run -A bench/profile/stalls.ts [--path shm|tcp] [--calls 200000] [--window 32]
 *       [--spin-us N] [--idle-after-ms N]   (progress-loop options of both sides)
 *       [--batch-budget N]                  (the server's requests per session round)
 *       [--wrap N]                          (N extra async functions around each call)
 *   bun bench/profile/stalls.ts …
 *
 * If the time per call is far above the work per call (`bench/profile/run.ts`) and most of the
 * wall time sits in a few long gaps, the loss is waiting (sleeps, yields, descheduling), not work.
 * @module
 */
import { startServe } from "../../cli/self.ts";
import { readFileSync } from "node:fs";
import { arg, engineUrl, loadVerbus, numArg, progressArgs, SERVICE } from "./common.ts";

const { ProgressEngine } = await import(engineUrl());

const path = arg("path", "shm");
const calls = numArg("calls", 200_000);
const window = Math.max(1, numArg("window", 32));
const warmup = numArg("warmup", 5000);
/** Extra `async` layers around each call (a caller one or more awaits away from the promise). */
const wrap = Math.max(0, numArg("wrap", 0));
// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const self = g.Deno ? [g.Deno.execPath(), ["run", "-A"]] : [process.execPath, []];
const forwarded = ["spin-us", "idle-after-ms", "batch-budget"].flatMap((n) =>
  arg(n, "") === "" ? [] : [`--${n}`, arg(n, "")]
);
const serverScript = new URL("./echo_server.ts", import.meta.url).pathname;
const srv = await startServe([self[0] as string, [
  ...self[1] as string[],
  serverScript,
  ...forwarded,
]]);
const port = srv.port;

const { connect } = await loadVerbus();
const client = await connect(
  { host: "127.0.0.1", port },
  path === "shm"
    ? { fabric: "shm", forcePath: "EAGER", progress: progressArgs() }
    : { fabric: "tcp" },
);
const req = new Uint8Array(64).fill(0x61);
const engine = await ProgressEngine.forThread();

async function wrapped(depth: number): Promise<unknown> {
  return depth === 0 ? await client.call(SERVICE, "Echo", req) : await wrapped(depth - 1);
}

async function run(n: number, lat: Float64Array | null, done: Float64Array | null) {
  let next = 0, k = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const a = performance.now();
      if (wrap === 0) await client.call(SERVICE, "Echo", req);
      else await wrapped(wrap - 1);
      const b = performance.now();
      if (lat) lat[i] = b - a;
      if (done) done[k++] = b;
    }
  };
  await Promise.all(Array.from({ length: Math.min(window, n) }, worker));
}

/** CPU seconds (user + system) of a process so far, from /proc (Linux). */
function cpuSeconds(pid: number | "self"): number {
  const f = readFileSync(`/proc/${pid}/stat`, "latin1");
  const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}
const serverStats = async () =>
  JSON.parse(
    new TextDecoder().decode((await client.call(SERVICE, "Stats", new Uint8Array(0))).response),
  );
await run(warmup, null, null);
const sBefore = await serverStats();
const lat = new Float64Array(calls), done = new Float64Array(calls);
const before = engine.loopCounters;
const cpu0 = [cpuSeconds("self"), cpuSeconds(srv.pid)];
const t0 = performance.now();
await run(calls, lat, done);
const wall = performance.now() - t0;
const after = engine.loopCounters;
const cpu1 = [cpuSeconds("self"), cpuSeconds(srv.pid)];
const sAfter = await serverStats();
lat.sort();
const pct = (p: number) => +(lat[Math.min(calls - 1, Math.floor(calls * p))] * 1000).toFixed(1);
const gaps = { over50us: 0, over200us: 0, over1ms: 0, msOver200us: 0, msOver1ms: 0 };
let prev = t0;
for (let i = 0; i < calls; i++) {
  const gap = done[i] - prev;
  prev = done[i];
  if (gap > 0.05) gaps.over50us++;
  if (gap > 0.2) (gaps.over200us++, gaps.msOver200us += gap);
  if (gap > 1) (gaps.over1ms++, gaps.msOver1ms += gap);
}
const per1k = (x: number) => +((x * 1000) / calls).toFixed(2);
console.log(JSON.stringify({
  runtime: g.Deno ? "deno" : "bun",
  path: client.fabric,
  window,
  wrap,
  calls,
  calls_per_s: Math.round(calls / (wall / 1000)),
  p50_us: pct(0.5),
  p90_us: pct(0.9),
  p99_us: pct(0.99),
  p999_us: pct(0.999),
  max_us: pct(1),
  cpu_pct: {
    client: Math.round(((cpu1[0] - cpu0[0]) * 1e5) / wall),
    server: Math.round(((cpu1[1] - cpu0[1]) * 1e5) / wall),
  },
  gaps: {
    ...gaps,
    shareOver200us: +(gaps.msOver200us / wall).toFixed(3),
    shareOver1ms: +(gaps.msOver1ms / wall).toFixed(3),
  },
  clientPer1kCalls: {
    turns: per1k(after.turns - before.turns),
    sleeps: per1k(after.sleeps - before.sleeps),
    shortSpins: per1k(after.shortSpins - before.shortSpins),
  },
  serverPer1kCalls: {
    turns: per1k(sAfter.turns - sBefore.turns),
    sleeps: per1k(sAfter.sleeps - sBefore.sleeps),
    shortSpins: per1k(sAfter.shortSpins - sBefore.shortSpins),
  },
}));
await client.call(SERVICE, "Quit", new Uint8Array(0)).catch(() => {});
client.close?.();
await srv.stop();
setTimeout(() => process.exit(0), 200);
