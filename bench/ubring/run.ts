/**
 * `make bench-ubring BRPC_UBRING_DIR=…`: verbus beside stock brpc UBRing on this host, same run,
 * calls/s and latency at 1 and 32 calls in flight with attachments of 0, 4 KiB and 64 KiB
 * (echoed back). Rows:
 *   - brpc → brpc        `ubring_performance_client --use_ubring` → `ubring_performance_server --use_ubring`
 *   - brpc → verbus      the same client → `verbus serve --brpc-ubring` (per runtime)
 *   - verbus → brpc      `client.ts --mode ubring` (per runtime) → the brpc server
 *   - verbus → verbus    `client.ts --mode shm` → `verbus serve` over verbus's shm fabric
 * brpc's client prints its QPS in whole thousands, its average and p90/p99 latency but no p50:
 * its rows give calls/s as depth ÷ average latency (Little's law, closed loop) beside its QPS,
 * and the p50 its latency recorder gives over its HTTP port near the end (see `brpcClient`). Writes bench/results/ubring.{md,json} with the brpc commit (`--brpc-commit`, else
 * read from `--brpc-src`'s git), the host's load average before and after, and the arguments.
 *
 *   run.ts --brpc DIR [--brpc-src SRC | --brpc-commit C] [--seconds 3] [--runtime deno|bun|both]
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { type AddressInfo, createServer } from "node:net";
import { existsSync, writeFileSync } from "node:fs";
import { loadavg as osLoadavg } from "node:os";
import { join, resolve } from "node:path";
import { arg, exit, numArg, runtimesArg } from "../common/args.ts";
import { childJson } from "../common/child_json.ts";
import { RUNTIME_BIN, verbusCli } from "../common/verbus_cli.ts";
import { BRPC_SERVER_READY, startReady } from "./ready_process.ts";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
const DIR = arg("brpc", "");
const SECONDS = numArg("seconds", 3);
const RUNTIMES = runtimesArg();
const DEPTHS = [1, 32];
const ATTACHMENTS = [0, 4096, 65536];

if (!DIR || !existsSync(join(DIR, "ubring_performance_client"))) {
  console.error(
    `bench-ubring: --brpc DIR must hold ubring_performance_client and _server (README: Talking to brpc over UBRing); got "${DIR}"`,
  );
  exit(2);
}
const SRC = arg("brpc-src", "");
const COMMIT = arg("brpc-commit", "") ||
  (SRC
    ? spawnSync("git", ["-C", SRC, "rev-parse", "HEAD"], { encoding: "utf8" }).stdout.trim()
    : "unknown");

/** One measured cell. */
interface Row {
  row: string;
  runtime: string;
  depth: number;
  attachment: number;
  callsPerSec: number;
  /** brpc's printed QPS (whole thousands), brpc-client rows only. */
  brpcQpsK?: number;
  p50Us?: number;
  avgUs: number;
  p90Us: number;
  p99Us: number;
  errors?: number;
  transport?: string;
}
const rows: Row[] = [];

const startServer = (cmd: [string, string[]], ready: RegExp) => startReady(cmd, ready, ROOT);

/** A TCP port free right now (for brpc's client's built-in HTTP server). */
function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => res(port));
    });
  });
}

/**
 * brpc's client against `port`: its printed figures, and its p50. The client prints no p50, but
 * its latency recorder's first exposed percentile is computed with `--bvar_latency_p1` when read
 * (the variable keeps the name it got at static init, `client_latency_80`), over a 10 s window:
 * read over the client's HTTP port (`--dummy_port`) shortly before its test ends, it is the p50
 * of the run so far. Absent (—) when that read fails.
 */
async function brpcClient(
  port: number,
  depth: number,
  attachment: number,
): Promise<Omit<Row, "row" | "runtime">> {
  const dummy = await freePort();
  const p = spawn(join(DIR, "ubring_performance_client"), [
    "--use_ubring",
    `--servers=127.0.0.1:${port}`,
    "--thread_num=1",
    `--queue_depth=${depth}`,
    `--attachment_size=${attachment}`,
    ...(attachment > 0 ? ["--echo_attachment"] : []),
    `--test_seconds=${SECONDS}`,
    `--dummy_port=${dummy}`,
    "--bvar_latency_p1=50",
  ], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  p.stdout!.on("data", (d) => out += d);
  p.stderr!.on("data", (d) => out += d);
  const exited = new Promise<void>((r) => p.once("exit", () => r()));
  const kill = setTimeout(() => p.kill("SIGKILL"), (SECONDS + 60) * 1000);
  let p50Us: number | undefined;
  await new Promise((r) => setTimeout(r, Math.max(0, SECONDS * 1000 - 300)));
  try {
    // brpc answers a client it takes for a browser with HTML that hides this variable: be curl.
    const text = await (await fetch(`http://127.0.0.1:${dummy}/vars/client_latency_80`, {
      headers: { "user-agent": "curl/8.0" },
    })).text();
    const m = /client_latency_80 : (\d+)/.exec(text);
    if (m) p50Us = Number(m[1]);
  } catch { /* the client already ended or serves no variables: no p50 */ }
  await exited;
  clearTimeout(kill);
  const m = /Avg-Latency: ([\d.]+), 90th-Latency: ([\d.]+), 99th-Latency: ([\d.]+).*QPS: (\d+)k/
    .exec(out);
  if (!m) throw new Error(`ubring_performance_client printed no figures:\n${out}`);
  const avg = Number(m[1]);
  return {
    depth,
    attachment,
    callsPerSec: Math.round(depth / (avg / 1e6)),
    brpcQpsK: Number(m[4]),
    p50Us,
    avgUs: avg,
    p90Us: Number(m[2]),
    p99Us: Number(m[3]),
  };
}

async function verbusClient(
  rt: string,
  mode: string,
  port: number,
  depth: number,
  attachment: number,
) {
  const cmd: [string, string[]] = rt === "deno"
    ? [RUNTIME_BIN.deno, ["run", "-A", join(ROOT, "bench/ubring/client.ts")]]
    : [RUNTIME_BIN.bun, [join(ROOT, "bench/ubring/client.ts")]];
  cmd[1].push("--mode", mode, "--port", String(port), "--depth", String(depth));
  cmd[1].push("--attachment", String(attachment), "--seconds", String(SECONDS));
  const j = await childJson(cmd, ROOT, (SECONDS + 60) * 1000) as unknown as Omit<
    Row,
    "row" | "runtime"
  >;
  return { ...j, depth, attachment };
}

/** The 1-minute load average, 2 decimals. */
const loadavg = () => osLoadavg()[0].toFixed(2);

const cells = DEPTHS.flatMap((d) => ATTACHMENTS.map((a) => [d, a] as const));
const note = (r: Row) =>
  console.error(
    `${r.row.padEnd(18)} ${r.runtime.padEnd(5)} d=${r.depth} a=${r.attachment}: ${r.callsPerSec}/s`,
  );
const loadBefore = loadavg();

const brpcServer = await startServer(
  [join(DIR, "ubring_performance_server"), ["--use_ubring", "--port=0"]],
  BRPC_SERVER_READY,
);
try {
  for (const [d, a] of cells) {
    const r = { row: "brpc → brpc", runtime: "c++", ...(await brpcClient(brpcServer.port, d, a)) };
    rows.push(r);
    note(r);
  }
  for (const rt of RUNTIMES) {
    for (const [d, a] of cells) {
      const r = {
        row: "verbus → brpc",
        runtime: rt,
        ...(await verbusClient(rt, "ubring", brpcServer.port, d, a)),
      };
      rows.push(r);
      note(r);
    }
  }
} finally {
  await brpcServer.stop();
}
for (const rt of RUNTIMES) {
  const ub = await startServer(
    verbusCli(rt, ROOT, ["serve", "--port", "0", "--brpc-ubring", "--fabric", "none"]),
    /listening on [^\s]+:(\d+)/,
  );
  try {
    for (const [d, a] of cells) {
      const r = { row: "brpc → verbus", runtime: rt, ...(await brpcClient(ub.port, d, a)) };
      rows.push(r);
      note(r);
    }
  } finally {
    await ub.stop();
  }
  const shm = await startServer(
    verbusCli(rt, ROOT, ["serve", "--port", "0", "--fabric", "shm"]),
    /listening on [^\s]+:(\d+)/,
  );
  try {
    for (const [d, a] of cells) {
      const r = {
        row: "verbus → verbus",
        runtime: rt,
        ...(await verbusClient(rt, "shm", shm.port, d, a)),
      };
      rows.push(r);
      note(r);
    }
  } finally {
    await shm.stop();
  }
}
const loadAfter = loadavg();

const when = new Date().toISOString();
const fmt = (n: number | undefined) => (n === undefined ? "—" : String(n));
const md = [
  "# verbus beside stock brpc UBRing (same host, same run)",
  "",
  `${when}; brpc ${COMMIT}; ${SECONDS} s per cell; load average ${loadBefore} before, ${loadAfter} after ` +
  "(2 cores shared with other work: figures show the shape, not the machine's best).",
  "",
  "Calls/s of brpc-client rows: depth ÷ its average latency (its own QPS, in whole thousands, beside);",
  "their p50 is brpc's latency recorder's (`--bvar_latency_p1=50`, read from the client's `/vars` near",
  "the end of its test). Attachments are echoed back. `make bench-ubring BRPC_UBRING_DIR=…`.",
  "",
  "| row | runtime | depth | attachment | calls/s | brpc QPS | p50 µs | avg µs | p90 µs | p99 µs |",
  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map((r) =>
    `| ${r.row} | ${r.runtime} | ${r.depth} | ${r.attachment} | ${r.callsPerSec} | ${
      r.brpcQpsK === undefined ? "—" : `${r.brpcQpsK}k`
    } | ${fmt(r.p50Us)} | ${r.avgUs} | ${r.p90Us} | ${r.p99Us} |`
  ),
  "",
].join("\n");
writeFileSync(join(ROOT, "bench/results/ubring.md"), md);
writeFileSync(
  join(ROOT, "bench/results/ubring.json"),
  JSON.stringify(
    { when, brpcCommit: COMMIT, seconds: SECONDS, loadBefore, loadAfter, rows },
    null,
    2,
  ),
);
console.log(md);
exit(0);
