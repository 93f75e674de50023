/**
 * The end-to-end benchmark, one script, one run (`make bench-e2e`, or
 * `deno run -A bench/e2e/run.ts [--quick]`). For each runtime (Deno, Bun) it starts a verbus
 * server on that runtime and drives it with `verbus call --async-bench` on the same runtime:
 *   - ECHO 64 B at 1 and 32 in flight over TCP (baidu_std) and over the shm fabric (EAGER)
 *   - LARGE_GET 64 KiB over TCP and LAZY, BIGPUT 16 KiB over TCP and BULK
 * and runs, in the same script, the baselines: a raw length-prefixed TCP echo on the same runtime
 * (the ceiling of any framing), @grpc/grpc-js on Node doing the same unary echo, and two processes
 * ping-ponging one 32-bit word through shared memory (the ceiling of any shm RPC).
 * Prints a markdown table with ratios and writes bench/results/e2e.{md,json}.
 * `--tcp-only` runs only the verbus TCP and raw TCP echo rows (ECHO 64 B) and writes no files.
 * Only ratios between rows of the same run mean anything.
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { argv as nodeArgv } from "node:process";

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
const N_SMALL = quick ? 5000 : 40000, N_LARGE = quick ? 500 : 4000;

type Rt = "deno" | "bun";
const run = (rt: Rt, script: string, a: string[]) =>
  rt === "deno"
    ? [BIN.deno, ["run", "-A", join(ROOT, script), ...a]] as const
    : [BIN.bun, [join(ROOT, script), ...a]] as const;

function json(cmd: readonly [string, readonly string[]]): Record<string, unknown> {
  const r = spawnSync(cmd[0], [...cmd[1]], { cwd: ROOT, encoding: "utf8", timeout: 300_000 });
  const line = (r.stdout ?? "").trim().split("\n").filter((l) => l.startsWith("{")).pop();
  if (!line) throw new Error(`${cmd[1].join(" ")} printed no JSON (exit ${r.status}): ${r.stderr}`);
  return JSON.parse(line);
}

async function withServer<T>(rt: Rt, fn: (port: number) => T): Promise<T> {
  const [bin, a] = run(rt, "cli/main.ts", ["serve", "--port", "0", "--json"]);
  const p = spawn(bin, [...a], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((res, rej) => {
    let out = "";
    p.stdout!.on("data", (d) => {
      out += d;
      const m = /"port":(\d+)/.exec(out);
      if (m) res(Number(m[1]));
    });
    p.on("exit", (c) => rej(new Error(`server exited ${c}`)));
  });
  try {
    return fn(port);
  } finally {
    p.kill("SIGTERM");
    await new Promise((r) => p.on("exit", r));
  }
}

interface Row {
  runtime: string;
  case: string;
  system: string;
  inflight: number;
  p50_us: number;
  p99_us: number;
  qps: number;
  path?: string;
}
const rows: Row[] = [];

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
  const r = json(run(rt, "cli/main.ts", [
    "call",
    "--port",
    String(port),
    "--json",
    "--fabric",
    fabric,
    "--async-bench",
    String(n),
    "--bench-op",
    op,
    "--bench-bytes",
    String(bytes),
    "--async-window",
    String(window),
    "--timeout-ms",
    "30000",
  ]));
  const res = r.result as Record<string, number>;
  if (!r.ok) throw new Error(`${system} ${name} failed: ${JSON.stringify(r)}`);
  rows.push({
    runtime: rt,
    case: name,
    system,
    inflight: window,
    p50_us: res.p50_us,
    p99_us: res.p99_us,
    qps: res.qps,
    path: String(r.path),
  });
}

for (const rt of ["deno", "bun"] as Rt[]) {
  console.error(`== ${rt} ==`);
  await withServer(rt, (port) => {
    for (const w of [1, 32]) {
      if (tcpOnly) {
        bench(rt, port, "ECHO 64 B", "echo", 64, w, Math.min(2000, N_SMALL), "tcp", "warmup");
        bench(rt, port, "ECHO 64 B", "echo", 64, w, N_SMALL, "tcp", "verbus TCP");
        continue;
      }
      for (let warm = 0; warm < 1; warm++) {
        bench(rt, port, "ECHO 64 B", "echo", 64, w, Math.min(2000, N_SMALL), "shm", "warmup");
      }
      bench(rt, port, "ECHO 64 B", "echo", 64, w, N_SMALL, "tcp", "verbus TCP");
      bench(rt, port, "ECHO 64 B", "echo", 64, w, N_SMALL, "shm", "verbus shm");
    }
    if (tcpOnly) return;
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
        String(N_SMALL),
        "--warmup",
        "2000",
      ]),
    );
    rows.push({
      runtime: rt,
      case: "ECHO 64 B",
      system: "raw TCP echo",
      inflight: w,
      p50_us: r.p50_us as number,
      p99_us: r.p99_us as number,
      qps: r.qps as number,
    });
  }
  if (tcpOnly) continue;
  const pp = json(run(rt, "bench/e2e/shm_pingpong.ts", ["--iters", quick ? "50000" : "200000"]));
  rows.push({
    runtime: rt,
    case: "ECHO 64 B",
    system: "shm ping-pong (u32)",
    inflight: 1,
    p50_us: pp.p50_us as number,
    p99_us: pp.p99_us as number,
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
    runtime: "node",
    case: "ECHO 64 B",
    system: "grpc-js",
    inflight: w,
    p50_us: r.p50_us as number,
    p99_us: r.p99_us as number,
    qps: r.qps as number,
  });
}
const real = rows.filter((r) => r.system !== "warmup");
const find = (rt: string, c: string, s: string, w: number) =>
  real.find((r) => r.runtime === rt && r.case === c && r.system === s && r.inflight === w);
const ratio = (a?: Row, b?: Row) => a && b ? +(a.qps / b.qps).toFixed(2) : null;
const summary: Record<string, unknown> = {};
for (const rt of ["deno", "bun"]) {
  for (const w of [1, 32]) {
    const tcp = find(rt, "ECHO 64 B", "verbus TCP", w),
      shm = find(rt, "ECHO 64 B", "verbus shm", w);
    summary[`${rt} ECHO inflight ${w}`] = {
      tcp_vs_grpc_qps: ratio(tcp, find("node", "ECHO 64 B", "grpc-js", w)),
      tcp_vs_raw_tcp_qps: ratio(tcp, find(rt, "ECHO 64 B", "raw TCP echo", w)),
      shm_vs_tcp_qps: ratio(shm, tcp),
      shm_p50_vs_tcp_p50: shm && tcp ? +(tcp.p50_us / shm.p50_us).toFixed(2) : null,
      shm_p50_vs_pingpong_p50: shm
        ? +(shm.p50_us / (find(rt, "ECHO 64 B", "shm ping-pong (u32)", 1)?.p50_us ?? NaN)).toFixed(
          1,
        )
        : null,
    };
  }
  for (const c of ["LARGE_GET 64 KiB", "BIGPUT 16 KiB"]) {
    summary[`${rt} ${c}`] = {
      shm_vs_tcp_qps: ratio(find(rt, c, "verbus shm", 1), find(rt, c, "verbus TCP", 1)),
    };
  }
}
const md = [
  "| runtime | case | system | path | in flight | p50 µs | p99 µs | calls/s |",
  "|---|---|---|---|---|---|---|---|",
  ...real.map((r) =>
    `| ${r.runtime} | ${r.case} | ${r.system} | ${
      r.path ?? ""
    } | ${r.inflight} | ${r.p50_us} | ${r.p99_us} | ${r.qps} |`
  ),
  "",
  "| ratio | value |",
  "|---|---|",
  ...Object.entries(summary).flatMap(([k, v]) =>
    Object.entries(v as Record<string, unknown>).map(([k2, v2]) => `| ${k}: ${k2} | ${v2} |`)
  ),
].join("\n");
if (!tcpOnly) {
  mkdirSync(join(ROOT, "bench/results"), { recursive: true });
  writeFileSync(join(ROOT, "bench/results/e2e.md"), md + "\n");
  writeFileSync(
    join(ROOT, "bench/results/e2e.json"),
    JSON.stringify({ rows: real, summary, quick }, null, 2) + "\n",
  );
}
console.log(md);
