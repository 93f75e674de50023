/**
 * The end-to-end benchmark, one script, one run (`make bench-e2e`, or
 * `deno run -A bench/e2e/run.ts [--quick] [--rounds R]`). For each runtime (Deno, Bun) it starts a verbus
 * server on that runtime and drives it with `verbus call --async-bench` on the same runtime:
 *   - ECHO 64 B at 1 and 32 in flight over TCP (baidu_std) and over the shm fabric (EAGER)
 *   - LARGE_GET 64 KiB over TCP and LAZY, BIGPUT 16 KiB over TCP and BULK
 *   - ECHO 64 B from 4 clients × 32 in flight at once, over TCP and over shm (calls/s summed)
 * and runs, in the same script, the baselines: a raw length-prefixed TCP echo on the same runtime
 * (the ceiling of any framing), @grpc/grpc-js on Node doing the same unary echo, two processes
 * ping-ponging one 32-bit word through shared memory (the latency limit of any shm RPC), and a
 * minimal promise-per-call shared-memory ring (`baselines/shm_ring.ts`: 32 slots of 64 B, one
 * promise per call, no meta or dispatch — the throughput limit of a JS shm RPC). The issue-11
 * targets are checked as ratios of rows of one round (section "targets").
 * `--rounds R` (default 3; 1 with `--quick`): every row is measured R times, the runtimes' order
 * alternating between rounds; ratios and targets are computed within each round and reported as
 * the median over the rounds, with each round's value (`report.ts`): one round's verdict swings
 * with the machine.
 * Prints a markdown table with ratios and writes bench/results/e2e.{md,json}.
 * The rows at 32 in flight (1 and 4 clients, TCP, shm and the promise-per-call ring) also give the
 * CPU per call, µs user + kernel of the clients and of the server (`cpu_rows.ts`), and the report
 * the ratio shm ÷ TCP of it (`cpu_report.ts`).
 * `--tcp-only` runs only the verbus TCP and raw TCP echo rows (ECHO 64 B) and writes no files.
 * `--cpu-only` runs only the rows with CPU per call and writes bench/results/e2e-cpu.{md,json}.
 * Only ratios between rows of the same run mean anything.
 * @module
 */
import { numArg } from "../common/args.ts";
import { asyncBenchArgs } from "../common/bench_call.ts";
import { type ChildCommand, childJson, lastJson } from "../common/child_json.ts";
import { spawnSync } from "node:child_process";
import { startServe } from "../../cli/self.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { argv as nodeArgv } from "node:process";
import { availableParallelism, loadavg } from "node:os";
import { CLIENTS, markdown, type Row, summary, targets } from "./report.ts";
import {
  baselineCpuPerCall,
  type ClientFigures,
  combined,
  cpuPerCall,
  runSynced,
} from "./cpu_rows.ts";
import { cpuMarkdown, cpuRatios, cpuRows, cpuTargets } from "./cpu_report.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = g.Deno ? g.Deno.args : nodeArgv.slice(2);
const quick = args.includes("--quick");
/** `--tcp-only`: only verbus TCP and the raw TCP echo (ECHO 64 B), no files written. */
const tcpOnly = args.includes("--tcp-only");
/** `--cpu-only`: only the rows with CPU per call (32 in flight), written to e2e-cpu.{md,json}. */
const cpuOnly = args.includes("--cpu-only");
const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const BIN = {
  deno: join(ROOT, "node_modules/.bin/deno"),
  bun: join(ROOT, "node_modules/.bin/bun"),
};
const N_SMALL = quick ? 5000 : 100000, N_LARGE = quick ? 500 : 4000;
/**
 * Calls per client of a row with many in flight: at ~1M calls/s a 100k-call row lasted 0.1 s and
 * measured the JIT tiering up, not the steady state (shm at 32 in flight: 0.49M calls/s in such a
 * row, 1.1M over 3M calls, Deno and Bun alike). Each row stops after {@link ROW_SECONDS} anyway.
 */
const N_WIDE = quick ? 20000 : 1_000_000;
/** Longest measured phase of one row, s (`--async-seconds`). */
const ROW_SECONDS = quick ? 2 : 4;
/**
 * Calls every client makes first, not measured, with the row's number in flight (JIT tiers up,
 * slots warm): rows measure steady state. Rows with many in flight warm up longer.
 */
const WARM_SMALL = quick ? 500 : 5000,
  WARM_WIDE = quick ? 2000 : 200_000,
  WARM_LARGE = quick ? 50 : 500;
/**
 * The warm-up of a fabric row at 1 in flight: 5,000 calls are ~15 ms of shm calls, before the JIT
 * has tiered the call path up (on f23dc30 Deno read 4.8–5.5 µs p50 in three runs after them and
 * 2.5–2.7 µs in three after 100,000). TCP rows at 1 in flight (~10k calls/s) keep
 * {@link WARM_SMALL}.
 */
const WARM_ONE = quick ? 2000 : 100_000;

/** Warm-up calls of a row (see the constants above). */
function warmupOf(bytes: number, window: number, fabric: string): number {
  if (bytes > 4096) return WARM_LARGE;
  if (window > 1) return WARM_WIDE;
  return fabric === "tcp" ? WARM_SMALL : WARM_ONE;
}

type Rt = "deno" | "bun";
const run = (rt: Rt, script: string, a: string[]) =>
  rt === "deno"
    ? [BIN.deno, ["run", "-A", join(ROOT, script), ...a]] as const
    : [BIN.bun, [join(ROOT, script), ...a]] as const;

function json(cmd: readonly [string, readonly string[]]): Record<string, unknown> {
  const r = spawnSync(cmd[0], [...cmd[1]], { cwd: ROOT, encoding: "utf8", timeout: 300_000 });
  return lastJson(cmd, r.stdout ?? "", `exit ${r.status}: ${r.stderr}`);
}

/** Runs the commands at once; their JSON lines, in order. */
function jsonParallel(cmds: ChildCommand[]): Promise<Record<string, unknown>[]> {
  return Promise.all(cmds.map((cmd) => childJson(cmd, ROOT)));
}

/** A server of the run: its port, and its pid (its CPU is read from /proc). */
interface Srv {
  port: number;
  pid: number;
}

async function withServer<T>(rt: Rt, fn: (server: Srv) => T | Promise<T>): Promise<T> {
  const [bin, a] = run(rt, "cli/main.ts", ["serve", "--port", "0", "--json", "--exit-with-stdin"]);
  const server = await startServe([bin, a], ROOT);
  try {
    return await fn({ port: server.port, pid: server.pid });
  } finally {
    await server.stop();
  }
}

const rows: Row[] = [];
/** `--rounds R`: every row measured R times (default 3, `--quick` 1); ratios per round, then the median. */
const ROUNDS = Math.max(1, numArg("rounds", quick || tcpOnly ? 1 : 3));
/** The round being measured (rows are tagged with it). */
let round = 0;

function benchCmd(
  rt: Rt,
  port: number,
  op: string,
  bytes: number,
  window: number,
  n: number,
  fabric: string,
  sync = false,
) {
  return run(
    rt,
    "cli/main.ts",
    asyncBenchArgs({
      port,
      fabric,
      op,
      bytes,
      window,
      calls: n,
      warmup: warmupOf(bytes, window, fabric),
      seconds: ROW_SECONDS,
      sync,
    }),
  );
}

function bench(
  rt: Rt,
  port: number,
  name: string,
  op: string,
  bytes: number,
  window: number,
  n: number,
  fabric: string,
  system: string,
) {
  const r = json(benchCmd(rt, port, op, bytes, window, n, fabric));
  const res = r.result as Record<string, number>;
  if (!r.ok) throw new Error(`${system} ${name} failed: ${JSON.stringify(r)}`);
  rows.push({
    round,
    runtime: rt,
    case: name,
    system,
    inflight: window,
    mean_us: res.mean_us,
    p50_us: res.p50_us,
    p99_us: res.p99_us,
    p999_us: res.p999_us,
    qps: res.qps,
    path: String(r.path),
  });
}

/** A row of a baseline's JSON line (ECHO 64 B). */
function baselineRow(rt: string, system: string, inflight: number, r: Record<string, unknown>) {
  rows.push({
    round,
    runtime: rt,
    case: "ECHO 64 B",
    system,
    inflight,
    mean_us: r.mean_us as number,
    p50_us: r.p50_us as number,
    p99_us: r.p99_us as number,
    p999_us: r.p999_us as number,
    qps: r.qps as number,
  });
}

/**
 * `clients` clients of 32 in flight each (ECHO 64 B), started together after their warm-up: one
 * row of their figures (`combined`) and the CPU per call of the clients and of the server.
 */
async function benchWide(rt: Rt, server: Srv, clients: number, fabric: string, system: string) {
  const n = clients > 1 ? N_WIDE / 2 : N_WIDE;
  const cmds = Array.from(
    { length: clients },
    () => benchCmd(rt, server.port, "echo", 64, 32, n, fabric, true),
  );
  const { results: rs, server: serverCpu } = await runSynced(cmds, server.pid, ROOT);
  for (const r of rs) {
    if (!r.ok) throw new Error(`${system} ×${clients} failed: ${JSON.stringify(r)}`);
  }
  rows.push({
    round,
    runtime: rt,
    case: clients > 1 ? `ECHO 64 B, ${clients} clients` : "ECHO 64 B",
    system,
    inflight: 32,
    ...combined(rs.map((r) => r.result as unknown as ClientFigures)),
    path: String(rs[0].path),
    ...cpuPerCall(rs, serverCpu),
  });
}

/** The promise-per-call ring at 32 in flight, `pairs` client/server pairs at once (CPU per call). */
async function ringRows(rt: Rt) {
  for (const pairs of [1, CLIENTS]) {
    const calls = quick ? 50000 : pairs > 1 ? 500_000 : 2_000_000;
    const rs = await jsonParallel(
      Array.from(
        { length: pairs },
        () =>
          run(rt, "bench/e2e/baselines/shm_ring.ts", [
            "--inflight",
            "32",
            "--calls",
            String(calls),
          ]),
      ),
    );
    rows.push({
      round,
      runtime: rt,
      case: pairs > 1 ? `ECHO 64 B, ${pairs} clients` : "ECHO 64 B",
      system: "shm ring (promise per call)",
      inflight: 32,
      ...combined(rs.map((r) => ({ ...r, count: r.calls }) as unknown as ClientFigures)),
      ...baselineCpuPerCall(rs),
    });
  }
}

/** `--cpu-only`: the rows with CPU per call (TCP, shm, the ring; 1 and 4 clients × 32). */
async function measureCpuRound(order: Rt[]): Promise<void> {
  for (const rt of order) {
    console.error(`== ${rt} CPU per call (round ${round + 1} of ${ROUNDS}) ==`);
    await withServer(rt, async (server) => {
      bench(rt, server.port, "ECHO 64 B", "echo", 64, 32, Math.min(2000, N_SMALL), "shm", "warmup");
      for (const clients of [1, CLIENTS]) {
        await benchWide(rt, server, clients, "tcp", "verbus TCP");
        await benchWide(rt, server, clients, "shm", "verbus shm");
      }
    });
    await ringRows(rt);
  }
}

async function measureRound(order: Rt[]): Promise<void> {
  for (const rt of order) {
    console.error(`== ${rt} (round ${round + 1} of ${ROUNDS}) ==`);
    await withServer(rt, async (server) => {
      const port = server.port;
      for (const w of [1, 32]) {
        const n = w > 1 ? N_WIDE : N_SMALL;
        if (tcpOnly) {
          bench(rt, port, "ECHO 64 B", "echo", 64, w, Math.min(2000, N_SMALL), "tcp", "warmup");
          bench(rt, port, "ECHO 64 B", "echo", 64, w, n, "tcp", "verbus TCP");
          continue;
        }
        bench(rt, port, "ECHO 64 B", "echo", 64, w, Math.min(2000, N_SMALL), "shm", "warmup");
        if (w > 1) continue; // 32 in flight: below, with the CPU per call
        bench(rt, port, "ECHO 64 B", "echo", 64, w, n, "tcp", "verbus TCP");
        bench(rt, port, "ECHO 64 B", "echo", 64, w, n, "shm", "verbus shm");
      }
      if (tcpOnly) return;
      for (const clients of [1, CLIENTS]) {
        await benchWide(rt, server, clients, "tcp", "verbus TCP");
        await benchWide(rt, server, clients, "shm", "verbus shm");
      }
      bench(rt, port, "LARGE_GET 64 KiB", "large-get", 65536, 1, N_LARGE, "tcp", "verbus TCP");
      bench(rt, port, "LARGE_GET 64 KiB", "large-get", 65536, 1, N_LARGE, "shm", "verbus shm");
      bench(rt, port, "BIGPUT 16 KiB", "put", 16384, 1, N_LARGE, "tcp", "verbus TCP");
      bench(rt, port, "BIGPUT 16 KiB", "put", 16384, 1, N_LARGE, "shm", "verbus shm");
    });
    for (const w of [1, 32]) {
      const r = json(
        run(rt, "bench/e2e/baselines/raw_tcp.ts", [
          "--payload",
          "64",
          "--inflight",
          String(w),
          "--calls",
          String(w > 1 ? N_WIDE : N_SMALL),
          "--warmup",
          String(w > 1 ? WARM_WIDE : WARM_SMALL),
        ]),
      );
      baselineRow(rt, "raw TCP echo", w, r);
    }
    if (tcpOnly) continue;
    const ring1 = json(run(rt, "bench/e2e/baselines/shm_ring.ts", [
      "--inflight",
      "1",
      "--calls",
      String(quick ? 50000 : 200000),
    ]));
    baselineRow(rt, "shm ring (promise per call)", 1, ring1);
    await ringRows(rt); // 32 in flight, with the CPU per call
    const pp = json(run(rt, "bench/e2e/shm_pingpong.ts", ["--iters", quick ? "50000" : "200000"]));
    rows.push({
      round,
      runtime: rt,
      case: "ECHO 64 B",
      system: "shm ping-pong (u32)",
      inflight: 1,
      mean_us: pp.mean_us as number,
      p50_us: pp.p50_us as number,
      p99_us: pp.p99_us as number,
      p999_us: pp.p999_us as number,
      qps: Math.round(1e6 / (pp.mean_us as number)),
    });
  }
  if (!tcpOnly) console.error("== grpc-js (node) ==");
  for (const w of tcpOnly ? [] : [1, 32]) {
    const r = json(["node", [
      join(ROOT, "bench/e2e/baselines/grpc_node.mjs"),
      "--payload",
      "64",
      "--inflight",
      String(w),
      "--calls",
      String(quick ? 3000 : 20000),
      "--warmup",
      "1000",
    ]]);
    rows.push({
      round,
      runtime: "node",
      case: "ECHO 64 B",
      system: "grpc-js",
      inflight: w,
      mean_us: r.mean_us as number,
      p50_us: r.p50_us as number,
      p99_us: r.p99_us as number,
      p999_us: r.p999_us as number,
      qps: r.qps as number,
    });
  }
}
// Rounds alternate the runtimes' order, so neither always runs on the warmer (or busier) machine;
// the load average after each round shows others' work on the host.
const roundLoads: string[] = [];
for (; round < ROUNDS; round++) {
  const order: Rt[] = round % 2 ? ["bun", "deno"] : ["deno", "bun"];
  await (cpuOnly ? measureCpuRound(order) : measureRound(order));
  roundLoads.push(loadavg().map((x) => x.toFixed(2)).join(" "));
}
const real = rows.filter((r) => r.system !== "warmup");
const header = `${ROUNDS} round${
  ROUNDS > 1 ? "s" : ""
} (each measures every row; the runtimes' order alternates). Calls per row: ECHO at 1 in flight ${N_SMALL} after ${WARM_ONE} warm-up calls (TCP: ${WARM_SMALL}); ECHO at 32 in flight ${N_WIDE} (${CLIENTS}-client rows: ${
  N_WIDE / 2
} per client) after ${WARM_WIDE} warm-up calls with as many in flight; LARGE_GET/BIGPUT ${N_LARGE} after ${WARM_LARGE}; a row stops after ${ROW_SECONDS} s. Load average (1, 5, 15 min) after each round: ${
  roundLoads.map((l, i) => `${i + 1}: ${l}`).join("; ")
} on ${availableParallelism()} cores. Only ratios of rows of one round mean anything.`;
const cpuNote =
  "CPU per call hardly depends on what else runs on the cores (a call's work costs what it costs; a process waiting costs little), unlike calls/s; it still moves some with cache and scheduler contention.";
const md = cpuOnly
  ? `${header} ${cpuNote}\n\n${cpuMarkdown(real)}`
  : `${markdown(real, header)}\n\n${cpuMarkdown(real)}`;
const cpu = { targets: cpuTargets(real), rows: cpuRows(real), ratios: cpuRatios(real) };
if (cpuOnly) {
  writeFileSync(join(ROOT, "bench/results/e2e-cpu.md"), md + "\n");
  writeFileSync(
    join(ROOT, "bench/results/e2e-cpu.json"),
    JSON.stringify({ rounds: ROUNDS, roundLoads, rows: real, cpu, quick }, null, 2) + "\n",
  );
} else if (!tcpOnly) {
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(join(ROOT, "bench/results/e2e.md"), md + "\n");
  writeFileSync(
    join(ROOT, "bench/results/e2e.json"),
    JSON.stringify(
      { rounds: ROUNDS, rows: real, summary: summary(real), targets: targets(real), cpu, quick },
      null,
      2,
    ) + "\n",
  );
}
console.log(md);
