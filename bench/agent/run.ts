/**
 * The agent benchmark (issue 15 item 5). Runs under Deno:
 *
 *   node_modules/.bin/deno run -A bench/agent/run.ts [--runtime deno|bun|both] [--procs 8]
 *       [--rounds 2] [--seconds 5] [--window 32] [--bytes 16] [--idle-after-ms 0.2]
 *       [--agent-idle-after-ms N (the agent's alone; default: --idle-after-ms)]
 *       [--out bench/results] [--name agent]
 *       [--fabric shm|verbs --server-addr A --client-addr B]   (verbs: in the Soft-RoCE VM,
 *                                                               `make bench-agent-vm`)
 *
 * Per runtime: one `verbus serve` (shm + TCP), then rounds alternating A/B — A: `verbus agent`
 * and `--procs` worker processes calling through it; B: the same workers, each with its own
 * connection — every worker keeping `--window` ECHO calls in flight for `--seconds`. Reports
 * calls/s (sum over workers) per round and the best of each mode, their ratio, and what the
 * server carried mid-run: its established TCP connections, the shm session objects it maps
 * (`/dev/shm/verbus-<pid>-<n>`) and its threads. Everything runs on this machine's cores
 * (the agent is one more process competing for them): the ratio is the figure, not the rates.
 * Writes `<out>/<name>.md` and `<out>/<name>.json`.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { arg, numArg, sleep } from "../common/args.ts";

const ROOT = resolve(new URL("../..", import.meta.url).pathname);
type Rt = "deno" | "bun";
const RUNTIMES =
  (arg("runtime", "both") === "both" ? ["deno", "bun"] : [arg("runtime", "")]) as Rt[];
const PROCS = numArg("procs", 8), ROUNDS = numArg("rounds", 2), SECONDS = numArg("seconds", 5);
const WINDOW = numArg("window", 32), BYTES = numArg("bytes", 16);
const IDLE = arg("idle-after-ms", "0.2"); // the agent client's and the agent's
const AGENT_IDLE = arg("agent-idle-after-ms", IDLE); // the agent's alone, when given
const OUT = resolve(arg("out", join(ROOT, "bench/results"))), NAME = arg("name", "agent");
/** The remote leg: shm on this host (default), or verbs between two RDMA addresses (the VM's). */
const FABRIC = arg("fabric", "shm");
const SERVER_ADDR = arg("server-addr", "127.0.0.1"), CLIENT_ADDR = arg("client-addr", "");
if (FABRIC !== "shm" && FABRIC !== "verbs") throw new Error("--fabric expects shm or verbs");
if (FABRIC === "verbs" && !CLIENT_ADDR) throw new Error("--fabric verbs needs --client-addr");
/** What the agent and the direct workers add to reach the server over verbs from CLIENT_ADDR. */
const VIA = FABRIC === "verbs" ? ["--source-addr", CLIENT_ADDR] : [];
const BIN: Record<Rt, string> = {
  deno: join(ROOT, "node_modules/.bin/deno"),
  bun: join(ROOT, "node_modules/.bin/bun"),
};

interface Proc {
  child: ChildProcess;
  out: () => string;
}

function start(rt: Rt, script: string, args: string[]): Proc {
  const argv = rt === "deno"
    ? ["run", "-A", "--config", join(ROOT, "deno.json"), script, ...args]
    : [script, ...args];
  const child = spawn(BIN[rt], argv, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (b) => (out += b));
  child.stderr!.on("data", (b) => (out += b));
  return { child, out: () => out };
}

async function until(p: Proc, re: RegExp, what: string, ms = 120_000): Promise<RegExpExecArray> {
  const end = performance.now() + ms;
  for (;;) {
    const m = re.exec(p.out());
    if (m) return m;
    if (p.child.exitCode !== null || performance.now() > end) {
      throw new Error(`${what}: no ${re} (exit ${p.child.exitCode})\n${p.out()}`);
    }
    await sleep(20);
  }
}

async function stop(p: Proc, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const done = new Promise((r) => p.child.once("exit", r));
  p.child.kill(signal);
  await Promise.race([done, sleep(10_000).then(() => p.child.kill("SIGKILL"))]);
}

/**
 * What the server process carries now: its established TCP connections (from /proc/net/tcp*,
 * local port = the server's), the shm session objects it has mapped (unlinked once the client
 * mapped them, or sealed memfds: read from /proc/<pid>/maps) and its threads.
 */
function serverLoad(
  pid: number,
  port: number,
): { connections: number; shmSessions: number; threads: number } {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  let connections = 0;
  for (const f of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(f, "utf8").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 3 && cols[1].endsWith(`:${hexPort}`) && cols[3] === "01") connections++;
    }
  }
  const maps = readFileSync(`/proc/${pid}/maps`, "utf8");
  // sealed memfds (`/memfd:verbus-<pid>-<n> (deleted)`), or named objects (`/dev/shm/verbus-…`)
  const shmSessions = new Set(maps.match(/(?:\/dev\/shm\/|\/memfd:)verbus-\d+-\d+\b/g) ?? []).size;
  const threads = Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]);
  return { connections, shmSessions, threads };
}

/**
 * CPU ms (user + kernel, all threads) `pid` used so far; 0 without a pid (no agent), NaN when
 * the process ended (a worker that finished its run before the window's last sample, which a
 * crushed host makes happen: the round's CPU figures are then NaN, not a negative number).
 */
function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10; // utime, stime in USER_HZ (100) ticks
  } catch {
    return NaN;
  }
}

/** Context switches `pid`'s threads made by waiting (voluntary: futex sleeps, mostly) so far. */
function waits(pid: number | undefined): number {
  let n = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const st = readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8");
        n += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(st)?.[1] ?? 0);
      } catch { /* the thread ended */ }
    }
  } catch { /* the process ended */ }
  return n;
}

/** µs of CPU per call over the measured window, per role and in all (server + agent + workers). */
interface CpuPerCall {
  server: number;
  agent: number;
  workers: number;
  total: number;
}

interface Round {
  mode: "agent" | "direct";
  callsPerSec: number;
  cpuUsPerCall: CpuPerCall;
  /** Voluntary context switches (sleeps) per call, same window and roles. */
  waitsPerCall: CpuPerCall;
  perProcess: number[];
  server: ReturnType<typeof serverLoad>;
  fabric: string;
}

async function round(rt: Rt, mode: Round["mode"], port: number, serverPid: number): Promise<Round> {
  const name = `bench-${process.pid}-${Math.random().toString(36).slice(2, 6)}`;
  const go = join(tmpdir(), `${name}.go`);
  const agent = mode === "agent"
    ? start(rt, "cli/main.ts", [
      "agent",
      "--connect",
      `${SERVER_ADDR}:${port}`,
      "--fabric",
      FABRIC,
      ...VIA,
      "--listen",
      name,
      "--idle-after-ms",
      AGENT_IDLE,
    ])
    : null;
  if (agent) await until(agent, /listening on agent:/, "agent");
  const target = agent ? ["--agent", name] : ["--address", `${SERVER_ADDR}:${port}`, ...VIA];
  const workers = Array.from({ length: PROCS }, () =>
    start(rt, "bench/agent/worker.ts", [
      ...target,
      "--go",
      go,
      "--seconds",
      String(SECONDS),
      "--window",
      String(WINDOW),
      "--bytes",
      String(BYTES),
      "--idle-after-ms",
      IDLE,
    ]));
  try {
    for (const [i, w] of workers.entries()) await until(w, /^ready$/m, `worker ${i}`);
    // CPU per call: each role's CPU over [go + 10 %, go + 75 %] of the run (workers stop at
    // 100 % by their own clocks), over the calls made in that window (calls/s × its length) —
    // the steady figure on a host shared with others.
    const roles = () => [
      cpuMs(serverPid),
      cpuMs(agent?.child.pid),
      workers.reduce((a, w) => a + cpuMs(w.child.pid), 0),
      waits(serverPid),
      waits(agent?.child.pid),
      workers.reduce((a, w) => a + waits(w.child.pid), 0),
    ];
    writeFileSync(go, "");
    await sleep(SECONDS * 100);
    const t0 = performance.now(), c0 = roles();
    await sleep(SECONDS * 325);
    const server = serverLoad(serverPid, port);
    await sleep(SECONDS * 325);
    const c1 = roles(), window = (performance.now() - t0) / 1000;
    const results = await Promise.all(
      workers.map((w, i) => until(w, /result (\{.*\})/, `worker ${i}`, SECONDS * 1000 + 60_000)),
    );
    const parsed = results.map((m) => JSON.parse(m[1]));
    const perProcess = parsed.map((r) => Math.round(r.calls / r.seconds));
    const callsPerSec = perProcess.reduce((a, b) => a + b, 0);
    const us = (i: number) => ((c1[i] - c0[i]) * 1000) / (callsPerSec * window);
    const cpuUsPerCall = { server: us(0), agent: us(1), workers: us(2), total: 0 };
    cpuUsPerCall.total = cpuUsPerCall.server + cpuUsPerCall.agent + cpuUsPerCall.workers;
    const per = (i: number) => (c1[i] - c0[i]) / (callsPerSec * window);
    const waitsPerCall = { server: per(3), agent: per(4), workers: per(5), total: 0 };
    waitsPerCall.total = waitsPerCall.server + waitsPerCall.agent + waitsPerCall.workers;
    return {
      mode,
      callsPerSec,
      cpuUsPerCall,
      waitsPerCall,
      perProcess,
      server,
      fabric: `${parsed[0].fabric} (${parsed[0].via})`,
    };
  } finally {
    rmSync(go, { force: true });
    await Promise.all(workers.map((w) => stop(w, "SIGKILL")));
    if (agent) await stop(agent);
  }
}

function cpuText(c: CpuPerCall, digits = 2): string {
  return `${c.server.toFixed(digits)} + ${c.agent.toFixed(digits)} + ${
    c.workers.toFixed(digits)
  } = ${c.total.toFixed(digits)}`;
}

/** The median of the numbers among `xs` (NaN: a round whose CPU could not be read). */
function medianOf(xs: number[]): number {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

const report: Record<string, unknown> = {
  date: new Date().toISOString(),
  machine: { cpus: cpus().length, loadavg: loadavg() },
  procs: PROCS,
  window: WINDOW,
  bytes: BYTES,
  seconds: SECONDS,
  rounds: ROUNDS,
  runtimes: {} as Record<string, unknown>,
};
const md: string[] = [
  `# verbus agent: ${PROCS} processes through one agent vs ${PROCS} with their own connections`,
  "",
  `${new Date().toISOString()}; ${cpus().length} cores (load ${
    loadavg().map((x) => x.toFixed(1)).join(" ")
  } at start); ` +
  `each process keeps ${WINDOW} ECHO calls of ${BYTES} B in flight for ${SECONDS} s; the remote leg is ${
    FABRIC === "verbs" ? `verbs (${CLIENT_ADDR} → ${SERVER_ADDR})` : "shm"
  }; rounds alternate A/B; ` +
  "server, agent and workers all on this machine, one runtime at a time. Server load sampled mid-run " +
  "(TCP connections = established ones on its port, /proc/net/tcp*; shm sessions = session objects it has mapped, /proc/<pid>/maps).",
  "",
  "CPU per call = µs of CPU (user + kernel, all threads, /proc/PID/stat) of server, agent and workers from 10 % to 75 % of the run, over the calls made meanwhile; sleeps per call = their voluntary context switches (/proc/PID/task/*/status: futex sleeps, mostly) over the same calls.",
  "",
  "| runtime | mode | round | calls/s (sum) | CPU µs/call (server + agent + workers = total) | sleeps/call (same) | server TCP conns | server shm sessions | server threads | fabric |",
  "|---|---|---|---|---|---|---|---|---|---|",
];
for (const rt of RUNTIMES) {
  const server = start(rt, "cli/main.ts", [
    "serve",
    "--port",
    "0",
    "--json",
    ...(FABRIC === "verbs" ? ["--host", SERVER_ADDR, "--fabric", "verbs"] : []),
  ]);
  const port = Number((await until(server, /"port":(\d+)/, "server"))[1]);
  const rounds: Round[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) {
      for (
        const mode of (r % 2 === 0 ? ["agent", "direct"] : ["direct", "agent"]) as Round["mode"][]
      ) {
        const x = await round(rt, mode, port, server.child.pid!);
        rounds.push(x);
        console.log(
          `${rt} ${mode} round ${r + 1}: ${x.callsPerSec} calls/s, ${
            cpuText(x.cpuUsPerCall)
          } µs CPU/call, server ${JSON.stringify(x.server)}`,
        );
        md.push(
          `| ${rt} | ${mode} | ${r + 1} | ${x.callsPerSec} | ${cpuText(x.cpuUsPerCall)} | ${
            cpuText(x.waitsPerCall, 3)
          } | ${x.server.connections} | ${x.server.shmSessions} | ${x.server.threads} | ${x.fabric} |`,
        );
      }
    }
  } finally {
    await stop(server);
  }
  // Each round ran both modes back to back: its ratio is the A/B figure (the machine is shared).
  const paired = Array.from({ length: ROUNDS }, (_, r) => {
    const [x, y] = rounds.slice(2 * r, 2 * r + 2);
    return (x.mode === "agent" ? x : y).callsPerSec / (x.mode === "agent" ? y : x).callsPerSec;
  });
  // CPU per call as direct ÷ agent: 1 = the agent costs no more CPU per call than direct calls.
  const pairedCpu = Array.from({ length: ROUNDS }, (_, r) => {
    const [x, y] = rounds.slice(2 * r, 2 * r + 2);
    const [a, d] = x.mode === "agent" ? [x, y] : [y, x];
    return d.cpuUsPerCall.total / a.cpuUsPerCall.total;
  });
  const median = medianOf(paired), medianCpu = medianOf(pairedCpu);
  (report.runtimes as Record<string, unknown>)[rt] = {
    rounds,
    pairedRatios: paired,
    medianRatio: median,
    pairedCpuRatios: pairedCpu,
    medianCpuRatio: medianCpu,
  };
  md.push(
    `| ${rt} | **agent / direct, per round** | | ${
      paired.map((x) => x.toFixed(2)).join(", ")
    } (median **${median.toFixed(2)}**) | CPU per call, direct ÷ agent: ${
      pairedCpu.map((x) => x.toFixed(2)).join(", ")
    } (median **${medianCpu.toFixed(2)}**) | | | | | |`,
  );
}
mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, `${NAME}.json`), JSON.stringify(report, null, 2) + "\n");
writeFileSync(join(OUT, `${NAME}.md`), md.join("\n") + "\n");
console.log(md.join("\n"));
