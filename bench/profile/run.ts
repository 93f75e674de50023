/**
 * The per-call profile of verbus (issue 11, "a profile first"). Runs under Deno:
 *
 *   node_modules/.bin/deno run -A bench/profile/run.ts [--root DIR] [--runtime deno|bun|both]
 *       [--calls 200000] [--windows 1,32] [--paths shm,tcp] [--interval 100] [--warmup 5000]
 *       [--out bench/results] [--name profile] [--note TEXT] [--keep] [--counters]
 *
 * For each runtime × path (shm EAGER, TCP) × calls in flight it starts `echo_server.ts` and then
 * `echo_client.ts` (same runtime, two processes) under the runtime's CPU profiler
 * (`deno run --cpu-prof --cpu-prof-dir D --cpu-prof-interval µs`, `bun --cpu-prof …` — both write
 * a DevTools `.cpuprofile` on exit), attributes the self time of the measured phase to the
 * categories of `categories.ts` (see `analyze.ts`), and writes `<out>/<name>.md` and
 * `<out>/<name>.json` (default `bench/results/profile.{md,json}` of this checkout).
 *
 * `--root DIR` profiles another checkout of verbus (the same public API): the scripts of
 * `DIR/bench/profile/` are run if that checkout has them, else this checkout's; either way they
 * import `DIR/mod.ts` (the `VERBUS_ROOT` environment variable, read by `common.ts`), Deno with
 * `--config DIR/deno.json`, and the runtimes are this checkout's `node_modules/.bin/` ones, so a
 * before/after pair differs only in verbus. Nothing is copied or written into DIR.
 *
 * `--counters`: no profiler; both processes wrap the methods reachable from the public API
 * objects with timers (`counters.ts`) and the report (`<name>-counters.{md,json}`) lists exact
 * invocations and self ns per call by method.
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { analyze, type CpuProfile, type SideReport } from "./analyze.ts";
import { countersMarkdown, markdown } from "./report.ts";
import { arg, ARGS, runtimesArg, sleep, within } from "../common/args.ts";

const opt = arg;
const HERE = resolve(new URL(".", import.meta.url).pathname);
const SELF_ROOT = resolve(HERE, "../..");
const ROOT = resolve(opt("root", SELF_ROOT));
// Where profiled files may live: the checkout, its realpath, and this checkout (the scripts).
const ROOTS = [...new Set([ROOT, realpathSync(ROOT), SELF_ROOT, realpathSync(SELF_ROOT)])];
const RUNTIMES: Rt[] = runtimesArg();
const CALLS = Number(opt("calls", "200000"));
const WINDOWS = opt("windows", "1,32").split(",").map(Number);
const PATHS = opt("paths", "shm,tcp").split(",") as Path[];
const INTERVAL = Number(opt("interval", "100"));
/** `--log-bytes N`: the verbs server's write log (0: off), for A/B runs in the VM. */
const LOG_BYTES = opt("log-bytes", "");
const WARMUP = Number(opt("warmup", "5000"));
const OUT = resolve(opt("out", join(SELF_ROOT, "bench/results")));
const NAME = opt("name", "profile");
const NOTE = opt("note", "");
const KEEP = ARGS.includes("--keep");
const COUNTERS = ARGS.includes("--counters");
const BIN = {
  deno: join(SELF_ROOT, "node_modules/.bin/deno"),
  bun: join(SELF_ROOT, "node_modules/.bin/bun"),
};
type Rt = "deno" | "bun";
/** shm or verbs EAGER (verbs only in the Soft-RoCE VM), or TCP. */
type Path = "shm" | "tcp" | "verbs";
if (!existsSync(join(ROOT, "mod.ts"))) throw new Error(`--root ${ROOT}: no mod.ts there`);
const SCRIPTS = existsSync(join(ROOT, "bench/profile/echo_server.ts"))
  ? join(ROOT, "bench/profile")
  : HERE;

/** The command line of `script` under `rt`'s CPU profiler writing into `dir` (with
 * `--counters`: no profiler, the script's own counters instead). */
function command(rt: Rt, script: string, dir: string, args: string[]): [string, string[]] {
  const s = join(SCRIPTS, script);
  const prof = COUNTERS
    ? []
    : ["--cpu-prof", `--cpu-prof-dir=${dir}`, `--cpu-prof-interval=${INTERVAL}`];
  const a = COUNTERS ? [...args, "--counters"] : args;
  if (rt === "deno") {
    return [BIN.deno, ["run", "-A", "--config", join(ROOT, "deno.json"), ...prof, s, ...a]];
  }
  return [BIN.bun, [...prof, s, ...a]];
}

interface Proc {
  exited: Promise<number>;
  stdout: () => string;
  stderr: () => string;
  kill: (sig: "SIGTERM" | "SIGKILL") => void;
}

function start(cmd: [string, string[]]): Proc {
  const p = spawn(cmd[0], cmd[1], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, VERBUS_ROOT: ROOT, NO_COLOR: "1" },
  });
  let out = "", err = "";
  p.stdout!.on("data", (d) => (out += d));
  p.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number>((r) => p.on("exit", (c) => r(c ?? -1)));
  return { exited, stdout: () => out, stderr: () => err, kill: (s) => void p.kill(s) };
}

function lastJson(text: string): Record<string, unknown> | null {
  const line = text.trim().split("\n").filter((l) => l.startsWith("{")).pop();
  return line ? JSON.parse(line) : null;
}

function readProfile(dir: string): CpuProfile {
  const f = readdirSync(dir).filter((n) => n.endsWith(".cpuprofile"));
  if (f.length === 0) throw new Error(`no .cpuprofile written in ${dir}`);
  return JSON.parse(readFileSync(join(dir, f.sort().pop()!), "utf8"));
}

/** One profiled case: both processes' breakdowns and the client's own figures. */
export interface CaseReport {
  runtime: Rt;
  path: Path;
  window: number;
  calls: number;
  bench: Record<string, unknown>;
  server: SideReport | null;
  client: SideReport | null;
}

async function runCase(rt: Rt, path: Path, window: number): Promise<CaseReport> {
  const tmp = mkdtempSync(join(tmpdir(), `verbus-profile-${rt}-${path}-${window}-`));
  const sDir = join(tmp, "server"), cDir = join(tmp, "client");
  mkdirSync(sDir);
  mkdirSync(cDir);
  const server = start(command(rt, "echo_server.ts", sDir, [
    "--port",
    "0",
    ...(path === "verbs" ? ["--fabrics", "verbs"] : []),
    ...(path === "verbs" && LOG_BYTES !== "" ? ["--log-bytes", LOG_BYTES] : []),
  ]));
  let port = 0;
  for (let i = 0; i < 600 && !port; i++) {
    const m = /"port":(\d+)/.exec(server.stdout());
    if (m) port = Number(m[1]);
    else if ((await within(server.exited, 100)) !== "timeout") break;
  }
  if (!port) throw new Error(`${rt} server did not start: ${server.stderr()}`);
  const client = start(command(rt, "echo_client.ts", cDir, [
    "--port",
    String(port),
    "--path",
    path,
    "--calls",
    String(CALLS),
    "--window",
    String(window),
    "--warmup",
    String(WARMUP),
    "--quit",
  ]));
  const code = await within(client.exited, 900_000);
  if (code === "timeout") client.kill("SIGKILL");
  if ((await within(server.exited, 10_000)) === "timeout") {
    server.kill("SIGTERM"); // the server exits 0 on SIGTERM, so the profile is still written
    if ((await within(server.exited, 5_000)) === "timeout") server.kill("SIGKILL");
  }
  const bench = lastJson(client.stdout());
  if (code !== 0 || !bench) {
    throw new Error(
      `${rt} ${path} w=${window}: client exit ${code}: ${client.stderr()}${client.stdout()}`,
    );
  }
  await sleep(100);
  const r: CaseReport = {
    runtime: rt,
    path,
    window,
    calls: CALLS,
    bench,
    server: COUNTERS ? null : analyze(readProfile(sDir), "server", CALLS, ROOTS, INTERVAL),
    client: COUNTERS ? null : analyze(readProfile(cDir), "client", CALLS, ROOTS, INTERVAL),
  };
  if (KEEP) console.error(`  profiles kept in ${tmp}`);
  else rmSync(tmp, { recursive: true, force: true });
  return r;
}

function git(args: string[]): string {
  const r = spawnSync("git", ["-C", ROOT, ...args], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "";
}

const meta = {
  date: new Date().toISOString(),
  root: ROOT,
  commit: git(["rev-parse", "--short", "HEAD"]),
  branch: git(["rev-parse", "--abbrev-ref", "HEAD"]),
  dirty: git(["status", "--porcelain", "--untracked-files=no"]) !== "",
  scripts: SCRIPTS,
  calls: CALLS,
  warmup: WARMUP,
  intervalUs: INTERVAL,
  cores: cpus().length,
  loadavg: loadavg().map((x) => Math.round(x * 100) / 100),
  note: NOTE,
};
const cases: CaseReport[] = [];
for (const rt of RUNTIMES) {
  for (const path of PATHS) {
    for (const w of WINDOWS) {
      console.error(
        `== ${rt} ${path} ${path === "tcp" ? "TCP" : "EAGER"}, ${w} in flight, ${CALLS} calls`,
      );
      const c = await runCase(rt, path, w);
      console.error(
        `   ${c.bench.calls_per_s} calls/s, p50 ${c.bench.p50_us} µs` +
          (c.server && c.client
            ? `; samples server ${c.server.samples}, client ${c.client.samples}`
            : ""),
      );
      cases.push(c);
    }
  }
}
// deno-lint-ignore no-explicit-any
const md = COUNTERS ? countersMarkdown(meta, cases) : markdown(meta, cases as any);
const base = join(OUT, COUNTERS ? `${NAME}-counters` : NAME);
mkdirSync(OUT, { recursive: true });
writeFileSync(`${base}.md`, md);
writeFileSync(`${base}.json`, JSON.stringify({ meta, cases }, null, 2) + "\n");
console.log(md);
console.error(`wrote ${base}.md and .json`);
