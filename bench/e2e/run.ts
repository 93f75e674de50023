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
 * `--tcp-only` runs only the verbus TCP and raw TCP echo rows (ECHO 64 B) and writes no files.
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

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = g.Deno ? g.Deno.args : nodeArgv.slice(2);
const quick = args.includes("--quick");
/** `--tcp-only`: only verbus TCP and the raw TCP echo (ECHO 64 B), no files written. */
const tcpOnly = args.includes("--tcp-only");
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

async function withServer<T>(rt: Rt, fn: (port: number) => T | Promise<T>): Promise<T> {
  const [bin, a] = run(rt, "cli/main.ts", ["serve", "--port", "0", "--json", "--exit-with-stdin"]);
  const server = await startServe([bin, a], ROOT);
  try {
    return await fn(server.port);
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

/** `CLIENTS` clients of `window` in flight each, at once: calls/s summed, median p50, worst p99. */
async function benchClients(
  rt: Rt,
  port: number,
  window: number,
  n: number,
  fabric: string,
  system: string,
) {
  const cmds = Array.from(
    { length: CLIENTS },
    () => benchCmd(rt, port, "echo", 64, window, n, fabric),
  );
  const rs = await jsonParallel(cmds);
  for (const r of rs) {
    if (!r.ok) throw new Error(`${system} ×${CLIENTS} failed: ${JSON.stringify(r)}`);
  }
  const res = rs.map((r) => r.result as Record<string, number>);
  const p50s = res.map((r) => r.p50_us).sort((x, y) => x - y);
  rows.push({
    round,
    runtime: rt,
    case: `ECHO 64 B, ${CLIENTS} clients`,
    system,
    inflight: window,
    // the mean over every call (each client's weighted by its calls), the worst p99 and p99.9
    mean_us: +(res.reduce((x, r) => x + r.mean_us * r.count, 0) /
      res.reduce((x, r) => x + r.count, 0)).toFixed(1),
    p50_us: p50s[Math.floor(p50s.length / 2)],
    p99_us: Math.max(...res.map((r) => r.p99_us)),
    p999_us: Math.max(...res.map((r) => r.p999_us)),
    qps: res.reduce((x, r) => x + r.qps, 0),
    path: String(rs[0].path),
  });
}

async function measureRound(order: Rt[]): Promise<void> {
  for (const rt of order) {
    console.error(`== ${rt} (round ${round + 1} of ${ROUNDS}) ==`);
    await withServer(rt, async (port) => {
      for (const w of [1, 32]) {
        if (tcpOnly) {
          bench(rt, port, "ECHO 64 B", "echo", 64, w, Math.min(2000, N_SMALL), "tcp", "warmup");
          bench(
            rt,
            port,
            "ECHO 64 B",
            "echo",
            64,
            w,
            w > 1 ? N_WIDE : N_SMALL,
            "tcp",
            "verbus TCP",
          );
          continue;
        }
        for (let warm = 0; warm < 1; warm++) {
          bench(rt, port, "ECHO 64 B", "echo", 64, w, Math.min(2000, N_SMALL), "shm", "warmup");
        }
        const n = w > 1 ? N_WIDE : N_SMALL;
        bench(rt, port, "ECHO 64 B", "echo", 64, w, n, "tcp", "verbus TCP");
        bench(rt, port, "ECHO 64 B", "echo", 64, w, n, "shm", "verbus shm");
      }
      if (tcpOnly) return;
      await benchClients(rt, port, 32, N_WIDE / 2, "tcp", "verbus TCP");
      await benchClients(rt, port, 32, N_WIDE / 2, "shm", "verbus shm");
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
    for (const w of [1, 32]) {
      const r = json(run(rt, "bench/e2e/baselines/shm_ring.ts", [
        "--inflight",
        String(w),
        "--calls",
        String(quick ? 50000 : w > 1 ? 2_000_000 : 200000),
      ]));
      baselineRow(rt, "shm ring (promise per call)", w, r);
    }
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
// Rounds alternate the runtimes' order, so neither always runs on the warmer (or busier) machine.
for (; round < ROUNDS; round++) await measureRound(round % 2 ? ["bun", "deno"] : ["deno", "bun"]);
const real = rows.filter((r) => r.system !== "warmup");
const header = `${ROUNDS} round${
  ROUNDS > 1 ? "s" : ""
} (each measures every row; the runtimes' order alternates). Calls per row: ECHO at 1 in flight ${N_SMALL} after ${WARM_ONE} warm-up calls (TCP: ${WARM_SMALL}); ECHO at 32 in flight ${N_WIDE} (${CLIENTS}-client rows: ${
  N_WIDE / 2
} per client) after ${WARM_WIDE} warm-up calls with as many in flight; LARGE_GET/BIGPUT ${N_LARGE} after ${WARM_LARGE}; a row stops after ${ROW_SECONDS} s. Load average at the end ${
  loadavg().map((x) => x.toFixed(2)).join(" ")
} on ${availableParallelism()} cores. Only ratios of rows of one round mean anything.`;
const md = markdown(real, header);
if (!tcpOnly) {
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(join(ROOT, "bench/results/e2e.md"), md + "\n");
  writeFileSync(
    join(ROOT, "bench/results/e2e.json"),
    JSON.stringify(
      { rounds: ROUNDS, rows: real, summary: summary(real), targets: targets(real), quick },
      null,
      2,
    ) + "\n",
  );
}
console.log(md);
