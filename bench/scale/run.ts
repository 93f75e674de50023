/**
 * The scale benchmark (issue 10 item 6). Runs under Deno:
 *
 *   node_modules/.bin/deno run -A bench/scale/run.ts [--runtime deno|bun|both]
 *       [--sessions 10,1000,10000] [--max-seconds 180] [--concurrency 64] [--calls 5000]
 *       [--warmup 20000] [--idle-ms 10000] [--settle-ms 45000] [--fabric shm|urma|verbs] [--root DIR] [--out bench/results] [--name scale]
 *       [--note TEXT] [--baseline-runs 3] [--rdma-addr A --source-addr A (with --fabric verbs)]
 *
 * For each runtime it runs N = 10 first (the baseline), then the larger counts, each with a fresh
 * `server.ts` and one `client.ts` (same runtime, two processes) that opens N sessions to it; see
 * `client.ts` for the phases. The baseline runs `--baseline-runs` times (default 3) and the
 * run with the median best-round ECHO p50 is kept, since the machine may be shared. A count that does not finish within `--max-seconds` is killed and
 * reported as "did not finish: reached K sessions in S s" with what was measured until then.
 * Children run under `bash -c 'ulimit -n 20000; exec …'` (lower if the hard limit is lower; the
 * report says so). Writes `<out>/<name>.md` and `<out>/<name>.json`.
 *
 * `--root DIR` measures another checkout of verbus through the same scripts (its `mod.ts`, by
 * `VERBUS_ROOT`; Deno with `--config DIR/deno.json`), e.g. a before/after pair.
 * @module
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { type CountResult, markdown, type Report } from "./report.ts";
import { arg, ARGS, within } from "../common/args.ts";
import {
  BIN,
  command as procCommand,
  fdLimit,
  type Rt,
  SELF_ROOT,
  serverPort,
  start as startProc,
  stop,
  sweepShm,
} from "./procs.ts";

const opt = arg;
const ROOT = resolve(opt("root", SELF_ROOT));
const RUNTIMES =
  (opt("runtime", "both") === "both" ? ["deno", "bun"] : [opt("runtime", "")]) as Rt[];
const requested = opt("sessions", "10,1000,10000").split(",").map(Number);
const COUNTS = [10, ...requested.filter((n) => n !== 10)];
const MAX_S = Number(opt("max-seconds", "180"));
const BASELINE_RUNS = Math.max(1, Number(opt("baseline-runs", "3")));
const FABRIC = opt("fabric", "shm");
/** `--fabric urma`: the children load VERBUS_LIBURMA, else ROOT's SIMULATED liburma (build/urma_sim). */
const URMA_ENV: Record<string, string> = FABRIC === "urma" && !process.env.VERBUS_LIBURMA
  ? { VERBUS_LIBURMA: join(ROOT, "build/urma_sim/liburma.so.0") }
  : {};
const OUT = resolve(opt("out", join(SELF_ROOT, "bench/results")));
const NAME = opt("name", "scale");
for (const rt of RUNTIMES) if (!(rt in BIN)) throw new Error("--runtime expects deno, bun or both");
for (const n of COUNTS) if (!(n >= 1)) throw new Error("--sessions expects numbers, e.g. 10,1000");
if (!existsSync(join(ROOT, "mod.ts"))) throw new Error(`--root ${ROOT}: no mod.ts there`);
/**
 * What the harness asks of each client unless told otherwise (client.ts's own defaults are for a
 * quick look): 20,000 warm-up calls before each ECHO phase (V8 and JSC drop optimised code of a
 * function left unused through a few collections, so the phase after idling tiers up again), an
 * idle window of 10 s, and the settled window 45 s after it — past the one-off collections a
 * runtime makes once activity stops (Deno's memory reducer: two full collections 25–40 s after
 * the last call, ~0.1 s CPU each at 10,000 sessions; Bun's GC timer: about 30 s).
 */
const RUN_DEFAULTS: Readonly<Record<string, string>> = {
  "warmup": "20000",
  "idle-ms": "10000",
  "settle-ms": "45000",
};
const passOn = ["concurrency", "calls", "idle-ms", "settle-ms", "warmup", "bytes", "source-addr"]
  .flatMap((k) =>
    ARGS.includes(`--${k}`)
      ? [`--${k}`, opt(k, "")]
      : k in RUN_DEFAULTS
      ? [`--${k}`, RUN_DEFAULTS[k]]
      : []
  );

const FD = fdLimit();
const command = (rt: Rt, script: string, args: string[]) =>
  procCommand(rt, ROOT, FD.limit, script, args);
const start = (cmd: string[]) => startProc(cmd, ROOT, URMA_ENV);

const tail = (s: string, n = 6) => s.trim().split("\n").slice(-n).join("\n");

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

async function runCount(rt: Rt, n: number): Promise<CountResult> {
  const t0 = performance.now();
  const load = loadavg()[0];
  const rdma = ARGS.includes("--rdma-addr") ? ["--rdma-addr", opt("rdma-addr", "")] : [];
  const server = start(command(rt, "server.ts", ["--fabric", FABRIC, ...rdma]));
  const { port, pid: serverPid } = await serverPort(server);
  if (!port) {
    await stop(server);
    return {
      runtime: rt,
      sessions: n,
      status: `server did not start: ${tail(server.stderr(), 3)}`,
    };
  }
  const client = start(command(rt, "client.ts", [
    "--port",
    String(port),
    "--sessions",
    String(n),
    "--max-seconds",
    String(MAX_S),
    "--fabric",
    FABRIC,
    ...passOn,
  ]));
  const code = await within(client.exited, (MAX_S + 20) * 1000);
  if (code === "timeout") await stop(client);
  const events: Json = {};
  const curve: number[] = []; // sessions reached at 0 s, 10 s, 20 s, … of the client's life
  for (const l of client.lines()) {
    try {
      const j = JSON.parse(l);
      events[j.event] = j;
      if (j.event === "progress" && j.elapsedMs >= curve.length * 10_000) curve.push(j.sessions);
    } catch { /* a partial last line */ }
  }
  const serverAlive = await within(server.exited, 0) === "timeout";
  await stop(server);
  const swept = sweepShm([serverPid, client.pid]);
  const seconds = Math.round((performance.now() - t0) / 100) / 10;
  const setup = events.setup, progress = events.progress;
  let status = "ok";
  if (!setup) {
    const k = progress?.sessions ?? 0, s = Math.round((progress?.elapsedMs ?? 0) / 1000);
    status = `did not finish: reached ${k} sessions in ${s} s (killed after ${MAX_S} s)`;
  } else if (!setup.complete) {
    status = `did not finish: reached ${setup.reached} sessions in ${setup.seconds} s ` +
      `(setup budget ${Math.round(0.55 * MAX_S)} s); the rest was measured with those`;
  }
  if (setup && !events.result) {
    const phase = ["echo", "idle", "echoIdle", "wake"].find((p) => !events[p]) ?? "the end";
    status = `${status === "ok" ? "" : `${status}; `}killed at the time limit during ${phase}`;
  }
  if (events.echo && !events.echo.complete) {
    status += `; ECHO made ${events.echo.calls} calls before its time limit`;
  }
  if (events.echoIdle && !events.echoIdle.complete) {
    status += `; ECHO after idling made ${events.echoIdle.calls} calls before its time limit`;
  }
  if (events.wake && !events.wake.complete) {
    status += `; wake-all answered ${events.wake.answered} of ${events.wake.sessions}`;
  }
  if (!serverAlive) status += `; the server exited by itself`;
  return {
    runtime: rt,
    sessions: n,
    status,
    seconds,
    loadavg1: Math.round(load * 100) / 100,
    clientExit: code === "timeout" ? "killed" : code,
    setup,
    serverAfterSetup: events.serverAfterSetup,
    echo: events.echo,
    echoIdle: events.echoIdle,
    idle: events.idle,
    idleSettled: events.idleSettled,
    wake: events.wake,
    setupCurve: curve,
    warnings: events.result?.warnings,
    shmSwept: swept,
    clientStderr: tail(client.stderr()),
    serverStderr: tail(server.stderr()),
  };
}

function version(rt: Rt): string {
  const r = spawnSync(BIN[rt], ["--version"], { encoding: "utf8" });
  return (r.stdout ?? "").split("\n")[0].trim();
}

function commit(): string {
  const git = (...a: string[]) => spawnSync("git", ["-C", ROOT, ...a], { encoding: "utf8" }).stdout;
  const head = git("rev-parse", "--short", "HEAD").trim();
  const dirty = git("status", "--porcelain", "--", ".", ":!bench/results").trim() !== "";
  return head + (dirty ? " + uncommitted changes" : "");
}

const report: Report = {
  date: new Date().toISOString(),
  commit: commit(),
  root: ROOT,
  fabric: FABRIC,
  machine: `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`,
  fdLimit: FD.note,
  maxSeconds: MAX_S,
  versions: Object.fromEntries(RUNTIMES.map((rt) => [rt, version(rt)])),
  note: opt("note", ""),
  results: [],
};
for (const rt of RUNTIMES) {
  for (const n of COUNTS) {
    console.error(`scale: ${rt}, ${n} sessions …`);
    // The baseline is run BASELINE_RUNS times and the run with the median best-round p50 kept:
    // one co-tenant burst on a shared machine would otherwise skew every ratio (the quietest
    // run, kept before, biased the ratios up: the larger counts run once).
    const tries: CountResult[] = [];
    for (let k = 0; k < (n === 10 ? BASELINE_RUNS : 1); k++) tries.push(await runCount(rt, n));
    const score = (x: CountResult) => x.echo?.bestRoundP50Us ?? Infinity;
    const r = [...tries].sort((a, b) => score(a) - score(b))[(tries.length - 1) >> 1];
    if (tries.length > 1) {
      r.status += `; the median of ${tries.length} runs (best-round p50 ` +
        `${tries.map((x) => score(x)).join(", ")} µs)`;
    }
    console.error(`scale: ${rt}, ${n} sessions: ${r.status} (${r.seconds} s)`);
    report.results.push(r);
  }
}
mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, `${NAME}.json`), JSON.stringify(report, null, 2) + "\n");
writeFileSync(join(OUT, `${NAME}.md`), markdown(report));
console.log(markdown(report));
console.error(`scale: wrote ${join(OUT, NAME)}.{md,json}`);
