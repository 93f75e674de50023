/**
 * `verbus bench`, short runs on this runtime (no timing asserted): the `--json` report has a
 * cell per fabric × workload × in flight × clients with real counts and a latency distribution,
 * each fabric cell next to its TCP cell; `--plot` writes vega's SVG (bars and CDF lines) naming
 * both the fabric and TCP; `--connect` benches a server of the other runtime, `--markdown`
 * writes the table; nothing answering and a server dying mid-cell exit 1 saying why; the
 * options parse in both forms and bad ones are named.
 */
import { spawnSync } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { parseBenchArgs } from "../../cli/bench.ts";
import { type CellResult, wrongPath } from "../../cli/bench_run.ts";
import { benchSpec, loadVega, type VegaImporter } from "../../cli/bench_plot.ts";
import { count } from "../../cli/plural.ts";
import { otherRuntime, REPO_ROOT, runtimeBinary, spawnScript, withChild } from "../util/proc.ts";

/** Runs `verbus bench ARGS` on this runtime. */
function bench(args: string[]) {
  const main = join(REPO_ROOT, "cli/main.ts");
  const argv = ["bench", ...args];
  return spawnSync(
    runtimeBinary(RUNTIME as "deno" | "bun"),
    RUNTIME === "deno" ? ["run", "-A", main, ...argv] : [main, ...argv],
    { cwd: REPO_ROOT, encoding: "utf8", timeout: 120_000 },
  );
}

/** The smallest `verbus bench --json` of the server at `port`: ECHO over shm and TCP, 1 × 1. */
function benchSmall(port: number, extra: string[]) {
  const small = ["--paths", "eager,tcp", "--inflight", "1", "--clients", "1", "--duration", "0.3"];
  return bench(["--connect", `127.0.0.1:${port}`, "--json", ...small, ...extra]);
}

test(`verbus bench --json --plot (${RUNTIME}): shm next to TCP, vega SVG of both`, () => {
  const dir = mkdtempSync(join(tmpdir(), "verbus-bench-test-"));
  try {
    const svgFile = join(dir, "bench.svg");
    const r = bench([
      "--json",
      "--plot",
      svgFile,
      "--fabrics",
      "shm",
      "--paths",
      "eager,lazy,tcp",
      "--inflight",
      "1,4",
      "--clients",
      "1",
      "--duration",
      "0.3",
      "--warmup",
      "20",
    ]);
    assertEquals(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assertEquals(report.transports, ["shm", "tcp"]);
    assertEquals(report.server.started, true);
    assertEquals(report.cells.length, 2 * 2 * 2, "2 workloads × 2 in flight × (shm, tcp)");
    const key = (c: Record<string, unknown>) => `${c.workload}/${c.inflight}/${c.transport}`;
    assertEquals(report.cells.map(key), [
      "eager/1/shm",
      "eager/1/tcp",
      "eager/4/shm",
      "eager/4/tcp",
      "lazy/1/shm",
      "lazy/1/tcp",
      "lazy/4/shm",
      "lazy/4/tcp",
    ]);
    for (const c of report.cells) {
      assertEquals(c.error, undefined, JSON.stringify(c));
      assertEquals(c.path, c.transport === "tcp" ? "TCP_FALLBACK" : c.workload.toUpperCase());
      assertEquals(c.fabric, c.transport);
      assert(c.calls > 0 && c.failed === 0 && c.qps > 0, JSON.stringify(c));
      assert(c.quantiles.length > 10, "a latency distribution");
      const us = c.quantiles.map((q: [number, number]) => q[1]);
      assert(us.every((x: number, i: number) => i === 0 || x >= us[i - 1]), "quantiles ascend");
      assertEquals([c.p50_us <= c.p99_us, c.clients], [true, 1]);
    }
    const svg = readFileSync(svgFile, "utf8");
    assert(svg.startsWith("<svg") && svg.includes('class="marks"'), "vega's SVG renderer");
    assert(svg.includes("mark-rect role-mark"), "throughput bars");
    assert(svg.includes("mark-line role-mark"), "latency lines");
    for (const label of ["shm", "tcp", "ECHO 64 B", "LARGE_GET 64 KiB", "calls/s"]) {
      assert(svg.includes(`>${label}</text>`), `the SVG shows ${label}`);
    }
    assert(r.stderr.includes("[8/8]"), `progress on stderr: ${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, { timeoutMs: 120_000 });

test(`verbus bench --connect (${RUNTIME} → a ${otherRuntime()} server), --markdown`, async () => {
  await withChild(
    otherRuntime(),
    "cli/main.ts",
    { args: ["serve", "--port", "0"] },
    async (srv) => {
      const dir = mkdtempSync(join(tmpdir(), "verbus-bench-test-"));
      try {
        const md = join(dir, "bench.md");
        const r = benchSmall(srv.port, ["--markdown", md]);
        assertEquals(r.status, 0, r.stderr);
        const report = JSON.parse(r.stdout);
        assertEquals([report.server.started, report.server.port], [false, srv.port]);
        assertEquals(report.cells.map((c: { path: string }) => c.path), ["EAGER", "TCP_FALLBACK"]);
        const table = readFileSync(md, "utf8");
        assert(table.includes("| fabric | path |") && table.includes("| shm | EAGER |"), table);
        assert(table.includes("| tcp | TCP_FALLBACK |"), table);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
}, { timeoutMs: 120_000 });

test("verbus bench against nothing: exit 1, what failed on stderr (JSON with --json)", () => {
  const r = bench(["--connect", "127.0.0.1:1", "--paths", "tcp", "--json"]);
  assertEquals([r.status, r.stdout], [1, ""], r.stderr);
  const e = JSON.parse(r.stderr.trim().split("\n").pop()!);
  assertEquals([e.ok, e.command, e.exit], [false, "bench", 1]);
  assert(/nothing answered at 127\.0\.0\.1:1 \(tcp: cannot connect/.test(e.error), e.error);
});

test("a server that dies during a cell: the cell reports the error, exit 1", async () => {
  const srv = await spawnScript(otherRuntime(), "cli/main.ts", { args: ["serve", "--port", "0"] });
  try {
    const { spawn } = await import("node:child_process");
    const main = join(REPO_ROOT, "cli/main.ts");
    const argv = ["bench", "--connect", `127.0.0.1:${srv.port}`, "--json", "--paths", "tcp"];
    argv.push("--inflight", "1", "--clients", "1", "--duration", "4");
    const p = spawn(
      runtimeBinary(RUNTIME as "deno" | "bun"),
      RUNTIME === "deno" ? ["run", "-A", main, ...argv] : [main, ...argv],
      { cwd: REPO_ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "", err = "";
    p.stdout!.on("data", (d) => (out += d));
    p.stderr!.on("data", (d) => {
      err += d;
      if (err.includes("1 cell ×")) setTimeout(() => srv.kill("SIGKILL"), 1500);
    });
    // "close", not "exit": the exit can come before the last stdout bytes were read
    const code = await new Promise<number | null>((r) => p.on("close", r));
    assertEquals(code, 1, err);
    const cell = JSON.parse(out).cells[0];
    assert(cell.failed > 0 && typeof cell.error === "string", JSON.stringify(cell));
  } finally {
    await srv.kill();
  }
}, { timeoutMs: 120_000 });

test("a cell whose calls took another path than its label is an error, not a figure", () => {
  const cell = (transport: string, workload: "eager" | "lazy" | "bulk") => ({
    transport,
    workload,
    inflight: 1,
    clients: 1,
  });
  assertEquals(wrongPath(cell("shm", "lazy"), "LAZY"), undefined);
  assertEquals(wrongPath(cell("tcp", "bulk"), "TCP_FALLBACK"), undefined);
  assertEquals(
    wrongPath(cell("shm", "eager"), "TCP_FALLBACK"),
    "the calls went TCP_FALLBACK, not EAGER",
  );
  assertEquals(wrongPath(cell("urma", "bulk"), "mixed"), "the calls went mixed, not BULK");
  assertEquals(wrongPath(cell("tcp", "eager"), "EAGER"), "the calls went EAGER, not TCP_FALLBACK");
});

test("a fabric the server does not offer is skipped, saying where the calls went", async () => {
  await withChild(otherRuntime(), "cli/main.ts", {
    args: ["serve", "--port", "0", "--fabric", "none"],
  }, async (srv) => {
    const r = benchSmall(srv.port, ["--fabrics", "shm"]);
    assertEquals(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assertEquals(report.transports, ["tcp"]);
    assertEquals(report.skipped, [{ transport: "shm", reason: "the calls went over tcp" }]);
    assert(r.stderr.includes("skipping shm: the calls went over tcp"), r.stderr);
  });
}, { timeoutMs: 120_000 });

test("verbus bench options: lists, both forms, bad values named", () => {
  const a = parseBenchArgs(["--inflight", "1,32", "--clients=2", "--paths", "eager,tcp"]);
  assertEquals([a.inflight, a.clients, a.paths, a.duration], [[1, 32], [2], ["eager", "tcp"], 1]);
  assertEquals(parseBenchArgs(["--fabrics=shm,urma"]).fabrics, ["shm", "urma"]);
  const h = parseBenchArgs(["--host=10.77.0.2", "--source-addr", "10.77.0.1"]);
  assertEquals([h.host, h["source-addr"], parseBenchArgs([]).host], [
    "10.77.0.2",
    "10.77.0.1",
    "127.0.0.1",
  ]);
  assertThrows(() => parseBenchArgs(["--paths", "eager,sideways"]), Error, "sideways");
  assertThrows(() => parseBenchArgs(["--inflight", "0"]), Error, "inflight");
  assertThrows(() => parseBenchArgs(["--plot", "x.png"]), Error, ".svg");
  assertThrows(() => parseBenchArgs(["--connect", "nohost"]), Error, "HOST:PORT");
});

test("bench progress counts in words: 1 cell, 2 cells (and the plot's 1 client)", () => {
  assertEquals([count(1, "cell"), count(2, "cell"), count(0, "cell")], [
    "1 cell",
    "2 cells",
    "0 cells",
  ]);
  const cell = {
    transport: "tcp",
    workload: "eager",
    inflight: 1,
    clients: 1,
    path: "TCP_FALLBACK",
    fabric: "tcp",
    label: "ECHO 64 B",
    bytes: 64,
    calls: 10,
    failed: 0,
    seconds: 1,
    qps: 10,
    p50_us: 5,
    p99_us: 9,
    quantiles: [[0.5, 5]],
  } as CellResult;
  const info = { runtime: "x", server: "y", secondsPerCell: 1, date: "" };
  const spec = JSON.stringify(benchSpec([cell], info));
  assert(spec.includes('"1 in flight × 1 client"') && !spec.includes("1 clients"), spec);
});

test("--plot without vega fails at once, naming the packages, before any cell runs", async () => {
  const gone: VegaImporter = (name) => Promise.reject(new Error(`Cannot find package '${name}'`));
  await assertRejects(() => loadVega(gone), Error, "--plot needs the npm packages vega@");
  // The CLI as a user without vega has it: a copy of the sources whose node_modules lacks
  // vega and vega-lite (every other package linked in).
  const dir = mkdtempSync(join(tmpdir(), "verbus-novega-"));
  try {
    for (const f of ["cli", "util", "rpc", "transport", "ffi", "examples", "mod.ts", "errors.ts"]) {
      cpSync(join(REPO_ROOT, f), join(dir, f), { recursive: true });
    }
    for (const f of ["deno.json", "package.json"]) cpSync(join(REPO_ROOT, f), join(dir, f));
    mkdirSync(join(dir, "node_modules"));
    for (const p of readdirSync(join(REPO_ROOT, "node_modules"))) {
      if (p === "vega" || p === "vega-lite" || p === ".bin") continue;
      symlinkSync(join(REPO_ROOT, "node_modules", p), join(dir, "node_modules", p));
    }
    const main = join(dir, "cli/main.ts");
    const argv = ["bench", "--plot", join(dir, "x.svg"), "--paths", "tcp", "--inflight", "1"];
    argv.push("--clients", "1", "--duration", "0.2", "--warmup", "0");
    const r = spawnSync(
      runtimeBinary(RUNTIME as "deno" | "bun"),
      RUNTIME === "deno" ? ["run", "-A", main, ...argv] : [main, ...argv],
      { cwd: dir, encoding: "utf8", timeout: 120_000 },
    );
    assertEquals([r.status, r.stdout], [1, ""], r.stderr);
    assert(r.stderr.startsWith("verbus bench: --plot needs the npm packages vega@"), r.stderr);
    assert(!/cell|started verbus serve/.test(r.stderr), `no cell ran:\n${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, { timeoutMs: 120_000 });
