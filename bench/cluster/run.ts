/**
 * The cluster bench (`make bench-cluster`). Runs under Deno:
 *
 *   node_modules/.bin/deno run -A bench/cluster/run.ts [--runtime deno|bun|both] [--seconds 3]
 *       [--rounds 3] [--window 32] [--out bench/results] [--name cluster]
 *
 * For each runtime: three `verbus serve --fabric shm` of that runtime on this host, and one
 * client process (`client.ts`, same runtime) that measures, round after round, 64-byte Echo at
 * `--window` calls in flight over one direct connection to the first server, then through
 * `connect("list://…", { lb: "rr" })` over 1, 2 and 3 of them (calls/s and p50; the median of the
 * rounds is reported, each row beside the direct one as a ratio). Then a second client loads the
 * three-server cluster with idempotent calls and SIGKILLs the third server: the failover time is
 * from the kill until every call is again answered on its first attempt at the steady rate.
 *
 * Pinning (when `taskset` exists and the host has 2+ cores): the client on core 0, server k on
 * core 1 + (k mod (cores − 1)). On a 2-core host every server shares core 1, so more servers add
 * no CPU: the rows then measure what the cluster client costs and how it spreads, not scaling —
 * the report says so. Writes `<out>/<name>.md` and `<out>/<name>.json`.
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { arg, numArg, runtimesArg, within } from "../common/args.ts";
import { median } from "../common/median.ts";
import { BIN, type Rt, SELF_ROOT, serverPort, start, stop, sweepShm } from "../scale/procs.ts";

const RUNTIMES = runtimesArg();
const SECONDS = numArg("seconds", 3);
const ROUNDS = numArg("rounds", 3);
const WINDOW = numArg("window", 32);
const OUT = resolve(arg("out", join(SELF_ROOT, "bench/results")));
const NAME = arg("name", "cluster");
const SERVERS = 3;
const CORES = cpus().length;
const PIN = CORES >= 2 && existsSync("/usr/bin/taskset");

const pinned = (core: number, cmd: string[]) => PIN ? ["taskset", "-c", String(core), ...cmd] : cmd;
const serverCore = (k: number) => 1 + (k % (CORES - 1));

/** `script` (from the repo root) under `rt` with `args`. */
function script(rt: Rt, path: string, args: string[]): string[] {
  const s = join(SELF_ROOT, path);
  return rt === "deno"
    ? [BIN.deno, "run", "-A", "--config", join(SELF_ROOT, "deno.json"), s, ...args]
    : [BIN.bun, s, ...args];
}

/** Runs a client to its end; its JSON lines, or an error with its stderr. */
function runClient(cmd: string[], timeoutMs: number): Promise<Record<string, unknown>[]> {
  return new Promise((res, rej) => {
    const p = spawn(cmd[0], cmd.slice(1), { cwd: SELF_ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout!.on("data", (d) => (out += d));
    p.stderr!.on("data", (d) => (err = (err + d).slice(-20000)));
    const timer = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
    p.on("close", (code) => {
      clearTimeout(timer);
      const lines = out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
      if (code === 0) res(lines);
      else rej(new Error(`${cmd.join(" ")} exited ${code}:\n${err}`));
    });
  });
}

interface Row {
  row: string;
  round: number;
  callsPerSec: number;
  p50Us: number;
  p99Us: number;
  errors: number;
  fabric: string;
}
interface Summary {
  row: string;
  servers: number;
  callsPerSec: number;
  vsDirect: number;
  p50Us: number;
  p50VsDirect: number;
  p99Us: number;
  errors: number;
  fabric: string;
  rounds: number[];
}
type Failover = Record<string, number | number[]>;

async function bench(rt: Rt): Promise<{ raw: Row[]; summary: Summary[]; failover: Failover }> {
  const serve = ["serve", "--port", "0", "--fabric", "shm", "--json"];
  const servers = Array.from(
    { length: SERVERS },
    (_, k) => start(pinned(serverCore(k), script(rt, "cli/main.ts", serve)), SELF_ROOT),
  );
  const pids = servers.map((s) => s.pid);
  try {
    const up = await Promise.all(servers.map(serverPort));
    if (up.some((u) => !u.port)) {
      throw new Error(`a server did not start:\n${servers.map((s) => s.stderr()).join("\n")}`);
    }
    const ports = up.map((u) => u.port).join(",");
    console.error(`${rt}: servers on ${ports}; ${ROUNDS} rounds of direct, cluster-1..${SERVERS}`);
    const raw = await runClient(
      pinned(
        0,
        script(rt, "bench/cluster/client.ts", [
          ...["--mode", "rows", "--ports", ports, "--window", `${WINDOW}`],
          ...["--seconds", `${SECONDS}`, "--rounds", `${ROUNDS}`],
        ]),
      ),
      ROUNDS * (SERVERS + 1) * (SECONDS + 5) * 1000 + 30_000,
    ) as unknown as Row[];
    const direct = median(raw.filter((r) => r.row === "direct").map((r) => r.callsPerSec));
    const directP50 = median(raw.filter((r) => r.row === "direct").map((r) => r.p50Us));
    const summary = ["direct", ...Array.from({ length: SERVERS }, (_, i) => `cluster-${i + 1}`)]
      .map((row): Summary => {
        const rs = raw.filter((r) => r.row === row);
        const cps = median(rs.map((r) => r.callsPerSec));
        const p50 = median(rs.map((r) => r.p50Us));
        return {
          row,
          servers: row === "direct" ? 1 : Number(row.split("-")[1]),
          callsPerSec: Math.round(cps),
          vsDirect: Math.round((cps / direct) * 100) / 100,
          p50Us: Math.round(p50),
          p50VsDirect: Math.round((p50 / directP50) * 100) / 100,
          p99Us: Math.round(median(rs.map((r) => r.p99Us))),
          errors: rs.reduce((n, r) => n + r.errors, 0),
          fabric: rs[0]?.fabric ?? "?",
          rounds: rs.map((r) => r.callsPerSec),
        };
      });
    console.error(`${rt}: failover (SIGKILL of server 3 of 3 under load)`);
    const [fo] = await runClient(
      pinned(
        0,
        script(rt, "bench/cluster/client.ts", [
          ...["--mode", "failover", "--ports", ports, "--window", `${WINDOW}`],
          ...[
            "--kill-pid",
            `${up[SERVERS - 1].pid}`,
            "--kill-after-ms",
            "1500",
            "--after-ms",
            "3000",
          ],
        ]),
      ),
      60_000,
    );
    return { raw, summary, failover: (fo as { failover: Failover }).failover };
  } finally {
    await Promise.all(servers.map((s) => within(stop(s), 12_000)));
    sweepShm(pids);
  }
}

function markdown(report: {
  date: string;
  host: Record<string, unknown>;
  results: Record<string, Awaited<ReturnType<typeof bench>>>;
}): string {
  const h = report.host as {
    cpus: number;
    model: string;
    loadBefore: number[];
    loadAfter: number[];
  };
  const out = [
    `# Cluster client: 1, 2 and 3 servers beside one direct connection`,
    ``,
    `${report.date}; \`make bench-cluster\` (bench/cluster/run.ts). Host: ${h.cpus} × ${h.model}; ` +
    `load average ${h.loadBefore.map((x) => x.toFixed(2)).join(" ")} before, ` +
    `${h.loadAfter.map((x) => x.toFixed(2)).join(" ")} after (the host is shared).`,
    ``,
    `64-byte \`verbus.Demo/Echo\`, ${WINDOW} calls in flight from one client process, servers are ` +
    `\`verbus serve --fabric shm\` of the client's runtime on this host (every call rides shm). ` +
    `"cluster-N" is \`connect("list://…N servers", { lb: "rr" })\`; "direct" is ` +
    `\`connect("127.0.0.1:P")\` to the first server. Median of ${ROUNDS} rounds of ${SECONDS} s ` +
    `(after 1 s of warm-up each), rounds interleaved so drift hits every row alike.`,
    ``,
    PIN
      ? `Pinning: the client on core 0, server k on core 1 + (k mod ${CORES - 1}) (\`taskset\`).`
      : `Pinning: none (no taskset, or one core).`,
    ``,
  ];
  if (CORES <= 2) {
    out.push(
      `**This host has ${CORES} cores**: the client takes one and every server shares the other, ` +
        `so a second or third server adds no CPU — the rows measure what the cluster client ` +
        `costs per call and that rr spreads the load, not how a fleet scales. With a core (or a ` +
        `host) per server, a client at ${WINDOW} in flight stays bound by its own core; more ` +
        `servers help once one server is the bottleneck, i.e. with several clients.`,
      ``,
    );
  }
  const spread = Object.entries(report.results).map(([rt, r]) => {
    const d = r.summary.find((s) => s.row === "direct")!.rounds;
    return `${rt} ${(Math.max(...d) / Math.min(...d)).toFixed(1)}×`;
  });
  out.push(
    `Noise: the direct row's fastest round over its slowest was ${spread.join(", ")} in this run ` +
      `(other work on the host), so read ratios as a rough guide; the p50 ratios are steadier ` +
      `than calls/s.`,
    ``,
  );
  out.push(
    `| runtime | row | servers | calls/s | vs direct | p50 µs | p50 vs direct | p99 µs | errors | rounds (calls/s) |`,
    `|---|---|---:|---:|---:|---:|---:|---:|---:|---|`,
  );
  for (const [rt, r] of Object.entries(report.results)) {
    for (const s of r.summary) {
      out.push(
        `| ${rt} | ${s.row} | ${s.servers} | ${s.callsPerSec} | ${s.vsDirect.toFixed(2)} | ` +
          `${s.p50Us} | ${s.p50VsDirect.toFixed(2)} | ${s.p99Us} | ${s.errors} | ` +
          `${s.rounds.join(", ")} |`,
      );
    }
  }
  out.push(
    ``,
    `## Failover: one of three servers SIGKILLed under load`,
    ``,
    `The three-server cluster (rr, calls marked \`idempotent\`, ${WINDOW} in flight); after 1.5 s the ` +
      `client SIGKILLs the third server itself (one clock for the kill and the calls). ` +
      `"disturbed until": the last call after the kill that failed or needed a second server; ` +
      `"failover": from the kill until the first 100 ms window from which on every call is ` +
      `answered on its first attempt at ≥ 90 % of the after-kill steady rate.`,
    ``,
    `| runtime | calls/s before | calls/s after | errors | calls retried | disturbed until (ms) | failover (ms) | calls per 50 ms from −250 ms |`,
    `|---|---:|---:|---:|---:|---:|---:|---|`,
  );
  for (const [rt, r] of Object.entries(report.results)) {
    const f = r.failover;
    out.push(
      `| ${rt} | ${f.callsPerSecBefore} | ${f.callsPerSecAfter} | ${f.errors} | ${f.retried} | ` +
        `${f.lastDisturbedMs} | ${f.recoveredMs} | ${(f.buckets as number[]).join(" ")} |`,
    );
  }
  out.push(
    ``,
    `On this host the after-kill rate can beat the before rate: two server processes share ` +
      `core 1 instead of three (as cluster-2 against cluster-3 above).`,
    ``,
    `The killed server's shm session fails as soon as its TCP connection breaks; calls in flight ` +
      `on it are redone on the others (idempotent), and the next call that picks it finds the ` +
      `connection refused and takes it out of the rotation (probed every 3 s after).`,
    ``,
  );
  return out.join("\n");
}

const loadBefore = loadavg();
const t0 = performance.now();
const results: Record<string, Awaited<ReturnType<typeof bench>>> = {};
for (const rt of RUNTIMES) results[rt] = await bench(rt);
const report = {
  date: new Date().toISOString().slice(0, 10),
  host: { cpus: CORES, model: cpus()[0]?.model ?? "?", loadBefore, loadAfter: loadavg() },
  settings: { seconds: SECONDS, rounds: ROUNDS, window: WINDOW, pinned: PIN, servers: SERVERS },
  wallSeconds: Math.round((performance.now() - t0) / 1000),
  results,
};
mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, `${NAME}.json`), JSON.stringify(report, null, 2) + "\n");
writeFileSync(join(OUT, `${NAME}.md`), markdown(report));
console.log(markdown(report));
console.error(`wrote ${join(OUT, NAME)}.{md,json} in ${report.wallSeconds} s`);
