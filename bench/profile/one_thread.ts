/**
 * The CPU cost of one call, client and server together, without any waiting: a verbus server and
 * a client in ONE process (one thread, one progress engine) over the shm fabric, ECHO 64 B at 1 in
 * flight, forced EAGER. Every call is submitted, found by the server's session, answered and
 * completed in consecutive turns of the same loop, so its time per call is the sum of what the two
 * sides of a two-process call spend on the CPU in series — the floor of the latency at 1 in flight
 * — free of the scheduling and spin noise of two processes. Run it under `--cpu-prof` to see where
 * that time goes (every sample is verbus work or the runtime under it). With `--window W` it keeps
 * W calls in flight (W loops of awaited calls): the time per call is then the CPU one call costs
 * under load, where the rounds carry batches — what bounds the calls/s of a loaded 2-core host.
 *
 *   deno run -A bench/profile/one_thread.ts [--calls 300000] [--reps 3] [--warmup 20000] [--window 1]
 *   bun bench/profile/one_thread.ts …
 *
 * `VERBUS_ROOT=DIR` measures another checkout (`one_thread_ab.ts` does that, alternating);
 * `--marks` brackets the measured reps with the profile's phase markers (`one_thread_profile.ts`).
 * Prints one JSON line: runtime, calls, window, reps, us_per_call (the best rep), us_per_call_reps,
 * cpu_us_per_call (the process's CPU time per call, user + kernel, all threads: the best rep),
 * cpu_us_per_call_reps,
 * calls_made (by the measured reps: `calls` rounded up to whole lanes, times reps), and `per_call`: the progress engine's counters of the measured reps divided by their calls —
 * loop turns, session rounds (sessions stepped), announcements collected, clock reads, macrotask
 * yields are what a call pays beyond its own work.
 * @module
 */
import { cpuUsage } from "node:process";
import {
  ARGS,
  engineUrl,
  exit,
  loadVerbus,
  numArg,
  SERVICE,
  verbusProfileMarkEnd,
  verbusProfileMarkStart,
} from "./common.ts";

const { serve, connect, RUNTIME } = await loadVerbus();
const { ProgressEngine } = await import(engineUrl());
const calls = numArg("calls", 300_000), reps = Math.max(1, numArg("reps", 3));
const warmup = numArg("warmup", 20_000), window = Math.max(1, numArg("window", 1));

const server = await serve({
  port: 0,
  services: { [SERVICE]: { Echo: (request: Uint8Array): Uint8Array => request } },
  fabric: { fabrics: ["shm"] },
  logger: { warn: (m: string) => console.error(`one_thread: ${m}`), info: () => {} },
});
const client = await connect(
  { host: "127.0.0.1", port: server.port },
  { fabric: "shm", forcePath: "EAGER" },
);
const req = new Uint8Array(64).fill(0x61);
let wrong = "";
async function lane(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const r = await client.call(SERVICE, "Echo", req);
    if (r.path !== "EAGER" || r.fabric !== "shm" || r.response.length !== 64) {
      wrong ||= `${r.path}/${r.fabric}/${r.response.length} B`;
    }
  }
}
/** The CPU (µs, user + kernel, all threads) per call of the last {@link run}. */
let lastCpu = 0;
async function run(n: number): Promise<number> {
  const perLane = Math.ceil(n / window), t0 = performance.now(), c0 = cpuUsage();
  await Promise.all(Array.from({ length: window }, () => lane(perLane)));
  const c = cpuUsage(c0);
  lastCpu = (c.user + c.system) / (perLane * window);
  return (performance.now() - t0) * 1000 / (perLane * window);
}
await run(warmup);
const engine = await ProgressEngine.forThread();
const counted = (): Record<string, number> => ({ ...engine.counters, ...engine.loopCounters });
const before = counted();
const perRep: number[] = [], cpuPerRep: number[] = [];
const marks = ARGS.includes("--marks"); // phase markers for one_thread_profile.ts (30 ms spins)
if (marks) verbusProfileMarkStart();
for (let r = 0; r < reps; r++) {
  perRep.push(Math.round((await run(calls)) * 1000) / 1000);
  cpuPerRep.push(Math.round(lastCpu * 1000) / 1000);
}
if (marks) verbusProfileMarkEnd();
const after = counted(), made = Math.ceil(calls / window) * window * reps;
const perCall: Record<string, number> = {};
for (const k of Object.keys(after)) {
  if (typeof after[k] === "number") perCall[k] = +((after[k] - before[k]) / made).toFixed(3);
}
await client.close();
await server.close();
console.log(JSON.stringify({
  runtime: RUNTIME,
  calls,
  window,
  reps,
  us_per_call: Math.min(...perRep),
  us_per_call_reps: perRep,
  // CPU time per call (getrusage: all threads): unlike the wall time, hardly moved by what else
  // runs on the host
  cpu_us_per_call: Math.min(...cpuPerRep),
  cpu_us_per_call_reps: cpuPerRep,
  calls_made: made,
  per_call: perCall,
  ...(wrong ? { wrong_path: wrong } : {}),
}));
exit(wrong ? 1 : 0);
