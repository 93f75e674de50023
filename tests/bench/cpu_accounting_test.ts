/**
 * CPU per call in the e2e bench (`bench/common/proc_cpu.ts`, `bench/e2e/cpu_rows.ts`,
 * `bench/e2e/cpu_report.ts`): utime/stime read from a fake process table (ticks to ms, a command
 * name with spaces and parentheses, every thread's switches); the server read when the last
 * client is ready and again after the last one's figures, never while one still warms up or
 * runs; per call = the CPU of each side ÷ the calls the clients counted; a side not measured is
 * unknown, never 0; shm ÷ TCP taken within a round, then the median over rounds.
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { procUsage, type Usage } from "../../bench/common/proc_cpu.ts";
import { baselineCpuPerCall, combined, cpuPerCall, runSynced } from "../../bench/e2e/cpu_rows.ts";
import { cpuMarkdown, cpuTargets } from "../../bench/e2e/cpu_report.ts";
import type { Row } from "../../bench/e2e/report.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";

/** A fake /proc with process `pid`: its stat (utime, stime in ticks) and threads' switch counts. */
function fakeProc(pid: number, utime: number, stime: number, threads: [number, number][]): string {
  const root = mkdtempSync(join(tmpdir(), "verbus-fakeproc-"));
  mkdirSync(join(root, String(pid), "task"), { recursive: true });
  // fields 3.. after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime …
  writeFileSync(
    join(root, String(pid), "stat"),
    `${pid} (deno (main) x) S 1 2 3 0 -1 4194304 100 0 0 0 ${utime} ${stime} 0 0 20 0 5 0\n`,
  );
  threads.forEach(([v, nv], i) => {
    const dir = join(root, String(pid), "task", String(pid + i));
    mkdirSync(dir);
    writeFileSync(
      join(dir, "status"),
      `Name:\tdeno\nvoluntary_ctxt_switches:\t${v}\nnonvoluntary_ctxt_switches:\t${nv}\n`,
    );
  });
  return root;
}

test("procUsage: utime and stime from a fake /proc in ms, the name's spaces and ')' skipped, switches of every thread", () => {
  const root = fakeProc(4242, 250, 40, [[7, 1], [3, 2]]);
  try {
    assertEquals(procUsage(4242, { procRoot: root }), { user: 2500, sys: 400, vcsw: 10, ivcsw: 3 });
    assertEquals(
      procUsage(4242, { procRoot: root, ticksPerSecond: 250, switches: false }),
      { user: 1000, sys: 160, vcsw: 0, ivcsw: 0 },
    );
    let why = "";
    try {
      procUsage(4243, { procRoot: root });
    } catch (e) {
      why = (e as Error).message;
    }
    assert(why.includes("process 4243") && why.includes("ended"), why);
  } finally {
    rmSync(root, { recursive: true });
  }
});

test("procUsage of this process: its own CPU, which only grows", () => {
  const a = procUsage("self", { switches: false });
  const t = performance.now();
  while (performance.now() - t < 30) { /* spin */ }
  const b = procUsage("self", { switches: false });
  assert(a.user + a.sys > 0 && b.user + b.sys >= a.user + a.sys, JSON.stringify([a, b]));
});

const fake = (args: string[]) => {
  const script = join(REPO_ROOT, "tests/bench/fixtures/fake_bench_client.ts");
  const bin = runtimeBinary(RUNTIME as RuntimeName);
  return [bin, RUNTIME === "deno" ? ["run", "-A", script, ...args] : [script, ...args]] as const;
};

test("runSynced: the server read once all clients are ready and once all printed; CPU per call of each side", async () => {
  const reads: number[] = [];
  const table: Usage[] = [
    { user: 100, sys: 50, vcsw: 0, ivcsw: 0 }, // ms, at the release
    { user: 104, sys: 51, vcsw: 0, ivcsw: 0 }, // after the last figures: 5 ms = 5000 µs
  ];
  const read = (pid: number) => {
    assertEquals(pid, 777, "the server's pid is read");
    reads.push(Date.now());
    return table[reads.length - 1];
  };
  const { results, server } = await runSynced(
    [fake(["1000", "3000", "1000"]), fake(["1000", "2000", "2000"])],
    777,
    REPO_ROOT,
    read,
  );
  assertEquals(reads.length, 2, "read twice");
  for (const r of results) {
    const res = r.result as unknown as { released: number; printed: number };
    assert(reads[0] <= res.released, "the first read comes before any client is released");
    assert(reads[1] >= res.printed, "the second read comes after every client printed");
  }
  assertEquals(server, { user: 4000, system: 1000 });
  // clients: (4000 + 4000) µs over 2000 calls; server: 5000 µs over the same 2000
  assertEquals(cpuPerCall(results, server), {
    cpu_client_us: 4,
    cpu_server_us: 2.5,
    cpu_client_kernel_us: 1.5, // (1000 + 2000) µs of kernel time over 2000 calls
    cpu_server_kernel_us: 0.5,
  });
});

test("runSynced: a client that ends without figures fails the row, naming it", async () => {
  await assertRejects(
    () =>
      runSynced([fake(["10", "1", "1"]), fake(["fail"])], 1, REPO_ROOT, () => ({
        user: 0,
        sys: 0,
        vcsw: 0,
        ivcsw: 0,
      })),
    Error,
    "with no figures",
  );
});

test("CPU per call: a side not reported is unknown (null), not free; the ring sums its pairs", () => {
  const withCpu = { result: { count: 100, cpu_us: { user: 150, system: 50 } } };
  const without = { result: { count: 100 } };
  assertEquals(cpuPerCall([withCpu, without], { user: 400, system: 0 }), {
    cpu_client_us: null,
    cpu_server_us: 2,
    cpu_client_kernel_us: null,
    cpu_server_kernel_us: 0,
  });
  assertEquals(cpuPerCall([], { user: 1, system: 0 }), {
    cpu_client_us: null,
    cpu_server_us: null,
    cpu_client_kernel_us: null,
    cpu_server_kernel_us: null,
  });
  const ring = (calls: number, c: number, s: number) => ({
    calls,
    cpu_us: { user: c, system: 0 },
    server_cpu_us: { user: 0, system: s },
  });
  assertEquals(baselineCpuPerCall([ring(1000, 500, 1000), ring(3000, 1500, 1000)]), {
    cpu_client_us: 0.5,
    cpu_server_us: 0.5,
    cpu_client_kernel_us: 0,
    cpu_server_kernel_us: 0.5,
  });
});

const cpuRow = (round: number, system: string, clients: number, c: number, s: number): Row => ({
  round,
  runtime: "deno",
  case: clients > 1 ? `ECHO 64 B, ${clients} clients` : "ECHO 64 B",
  system,
  inflight: 32,
  p50_us: 1,
  p99_us: 2,
  qps: 1000,
  cpu_client_us: c,
  cpu_server_us: s,
  cpu_client_kernel_us: c / 2,
  cpu_server_kernel_us: 0,
});

test("shm ÷ TCP CPU per call: within each round, then the median; target ≤ 0.33; unmeasured shows —", () => {
  const rows = [
    // round 0: shm 1.0 ÷ TCP 4.0 = 0.25; round 1: 2.0 ÷ 4.0 = 0.5; round 2: 1.2 ÷ 4.0 = 0.3
    cpuRow(0, "verbus TCP", 4, 3, 1),
    cpuRow(0, "verbus shm", 4, 0.75, 0.25),
    cpuRow(1, "verbus TCP", 4, 2, 2),
    cpuRow(1, "verbus shm", 4, 1.5, 0.5),
    cpuRow(2, "verbus TCP", 4, 3.5, 0.5),
    cpuRow(2, "verbus shm", 4, 1, 0.2),
    cpuRow(0, "verbus TCP", 1, 2, 2),
    { ...cpuRow(0, "verbus shm", 1, 1, 1), cpu_server_us: null },
  ];
  const t = cpuTargets(rows).filter((x) => x.runtime === "deno");
  assertEquals(t.map((x) => [x.value, x.met]), [[null, null], [0.3, true]]);
  assertEquals(t[1].perRound, [0.25, 0.5, 0.3]);
  const md = cpuMarkdown(rows);
  // kernel share: half the clients' CPU over both sides': 0.375 of 1, 0.75 of 2, 0.5 of 1.2
  assert(
    md.includes("| deno | 4 × 32 | verbus shm | 1 | 0.25 | 1.2 (1, 2, 1.2) | 0.38 | 1000 |"),
    md,
  );
  assert(md.includes("4 × 32 | deno | 0.3 (0.25, 0.5, 0.3) | ≤ 0.33 | yes |"), md);
  assert(md.includes("1 × 32 | deno | — (—, —, —) | ≤ 0.33 | — |"), md);
  assert(md.includes("| deno 4 × 32: shm_vs_tcp_cpu | 0.3 |"), md);
  assert(md.includes("| deno 4 × 32: ring_vs_tcp_cpu | — |"), md);
});

test("clients run at once as one row: calls/s summed, the mean weighted by calls, median p50, worst tails", () => {
  const c = (count: number, mean: number, p50: number, p99: number, qps: number) => ({
    count,
    mean_us: mean,
    p50_us: p50,
    p99_us: p99,
    p999_us: p99 * 2,
    qps,
  });
  assertEquals(combined([c(100, 10, 5, 50, 1000), c(300, 30, 7, 40, 3000), c(0, 0, 9, 1, 0)]), {
    mean_us: 25,
    p50_us: 7,
    p99_us: 50,
    p999_us: 100,
    qps: 4000,
  });
});
