/**
 * CPU per call of the TCP path, the figure that survives a busy shared machine: the raw
 * length-prefixed echo of the runtime (`bench/e2e/baselines/raw_tcp.ts`) against verbus TCP
 * through the public `Client` (`bench/e2e/channel_echo.ts --client`), ECHO 64 B, 32 in flight,
 * client and server on the same runtime, in alternating rounds, for one or two checkouts.
 *
 *   deno run -A bench/tcp/cpu.ts [--a DIR] [--b DIR] [--rounds 3] [--calls 200000]
 *                                [--runtime deno|bun|both] [--name tcp-cpu] [--cli]
 *
 * `--cli`: verbus as `make bench-e2e` runs it instead — a `verbus serve` (the demo service's Echo)
 * driven by `verbus call --fabric tcp --async-bench` — each measured as the raw echo is (below).
 *
 * verbus: channel_echo reports each process's CPU time (user + system) over the measured calls.
 * raw: the server's CPU from `/proc/<pid>/stat` around each client run, the client's from
 * `/usr/bin/time`; the per-call figure is the difference between a run of N + calls and one of N
 * (so start-up cancels out). "throughput-equivalent" = what the CPU figures predict for the
 * calls/s ratio verbus ÷ raw: 1/max(client, server) when each process has a core of its own,
 * 1/(client + server) when they share one. Writes `bench/results/<name>.{md,json}`.
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { startServe } from "../../cli/self.ts";
import { asyncBenchArgs } from "../common/bench_call.ts";
import { median } from "../common/median.ts";
import { procUsage } from "../common/proc_cpu.ts";

const args = Deno.args;
const opt = (k: string, d: string) => {
  const i = args.indexOf(`--${k}`);
  return i >= 0 ? args[i + 1] : d;
};
const HERE = resolve(new URL("../..", import.meta.url).pathname);
const dirs: [string, string][] = [["A", resolve(opt("a", HERE))]];
if (args.includes("--b")) dirs.push(["B", resolve(opt("b", HERE))]);
const rounds = Number(opt("rounds", "3"));
const calls = Number(opt("calls", "200000"));
const rts = opt("runtime", "both") === "both" ? ["deno", "bun"] : [opt("runtime", "both")];
const name = opt("name", "tcp-cpu");
const WARM = 20_000;
/** `--cli`: verbus through `verbus serve` / `verbus call --async-bench`, as `make bench-e2e`. */
const CLI = args.includes("--cli");

const cmd = (rt: string, dir: string, script: string, a: string[]) =>
  rt === "deno"
    ? [join(dir, "node_modules/.bin/deno"), "run", "-A", join(dir, script), ...a]
    : [join(dir, "node_modules/.bin/bun"), join(dir, script), ...a];

/** CPU seconds (user + system, all threads) of a live process. */
function procCpu(pid: number): number {
  const u = procUsage(pid, { switches: false });
  return (u.user + u.sys) / 1000;
}

type M = { client: number; server: number; qps: number };

async function raw(rt: string, dir: string): Promise<M> {
  const [bin, ...a] = cmd(rt, dir, "bench/e2e/baselines/raw_tcp.ts", [
    "--serve",
    "--port",
    "0",
    "--exit-on-stdin-eof",
  ]);
  const srv = spawn(bin, a, { stdio: ["pipe", "pipe", "inherit"] });
  const port = await new Promise<number>((res) => {
    let out = "";
    srv.stdout!.on("data", (d: Uint8Array) => {
      out += String(d);
      const m = /PORT (\d+)/.exec(out);
      if (m) res(Number(m[1]));
    });
  });
  const one = (n: number) => {
    const s0 = procCpu(srv.pid!);
    const c = cmd(rt, dir, "bench/e2e/baselines/raw_tcp.ts", [
      "--connect",
      `127.0.0.1:${port}`,
      "--payload",
      "64",
      "--inflight",
      "32",
      "--calls",
      String(n),
      "--warmup",
      "2000",
    ]);
    const r = spawnSync("/usr/bin/time", ["-f", "TIME %U %S", ...c], { encoding: "utf8" });
    const t = /TIME ([\d.]+) ([\d.]+)/.exec(r.stderr)!;
    const j = JSON.parse(r.stdout.trim().split("\n").pop()!);
    return { client: Number(t[1]) + Number(t[2]), server: procCpu(srv.pid!) - s0, qps: j.qps };
  };
  const small = one(WARM), big = one(WARM + calls);
  srv.stdin!.end();
  srv.kill("SIGTERM");
  return {
    client: Math.round((big.client - small.client) * 1e9 / calls),
    server: Math.round((big.server - small.server) * 1e9 / calls),
    qps: big.qps,
  };
}

/** verbus as the e2e bench runs it (`--cli`), measured as {@link raw} measures the echo. */
async function verbusCli(rt: string, dir: string): Promise<M> {
  const [bin, ...a] = cmd(rt, dir, "cli/main.ts", ["serve", "--port", "0", "--json"]);
  const srv = await startServe([bin, a], dir);
  try {
    const one = (n: number) => {
      const s0 = procCpu(srv.pid);
      const c = cmd(
        rt,
        dir,
        "cli/main.ts",
        asyncBenchArgs({
          port: srv.port,
          fabric: "tcp",
          op: "echo",
          bytes: 64,
          window: 32,
          calls: n,
          warmup: 2000,
        }),
      );
      const r = spawnSync("/usr/bin/time", ["-f", "TIME %U %S", ...c], {
        cwd: dir,
        encoding: "utf8",
      });
      const t = /TIME ([\d.]+) ([\d.]+)/.exec(r.stderr)!;
      const j = JSON.parse(r.stdout.trim().split("\n").filter((l) => l.startsWith("{")).pop()!);
      return {
        client: Number(t[1]) + Number(t[2]),
        server: procCpu(srv.pid) - s0,
        qps: j.result.qps as number,
      };
    };
    const small = one(WARM), big = one(WARM + calls);
    return {
      client: Math.round((big.client - small.client) * 1e9 / calls),
      server: Math.round((big.server - small.server) * 1e9 / calls),
      qps: big.qps,
    };
  } finally {
    await srv.stop();
  }
}

function verbus(rt: string, dir: string): M {
  const c = cmd(rt, dir, "bench/e2e/channel_echo.ts", [
    "--client",
    "--inflight",
    "32",
    "--calls",
    String(calls),
  ]);
  const r = spawnSync(c[0], c.slice(1), { encoding: "utf8", timeout: 600_000 });
  const j = JSON.parse(r.stdout.trim().split("\n").filter((l) => l.startsWith("{")).pop()!);
  return { client: j.client_cpu_ns, server: j.server_cpu_ns, qps: j.qps };
}

const runs: { round: number; runtime: string; system: string; m: M }[] = [];
for (let i = 0; i < rounds; i++) {
  for (const rt of rts) {
    const systems: [string, () => Promise<M> | M][] = [
      ["raw", () => raw(rt, dirs[0][1])],
      ...dirs.map(([k, d]) =>
        [`verbus ${k}`, () => (CLI ? verbusCli(rt, d) : verbus(rt, d))] as [
          string,
          () => Promise<M> | M,
        ]
      ),
    ];
    if (i % 2 === 1) systems.reverse();
    for (const [system, f] of systems) {
      const m = await f();
      runs.push({ round: i + 1, runtime: rt, system, m });
      console.error(`round ${i + 1} ${rt} ${system}: ${JSON.stringify(m)}`);
    }
  }
}

const lines = [
  "# TCP: CPU per call, verbus vs the raw echo (ECHO 64 B, 32 in flight)",
  "",
  `Generated by \`bench/tcp/cpu.ts${CLI ? " --cli" : ""}\` on ${new Date().toISOString()}; ` +
  `verbus ${
    CLI
      ? "= verbus serve + verbus call --async-bench (as make bench-e2e)"
      : "= channel_echo --client"
  }; ${rounds} alternating ` +
  `rounds of ${calls} calls; ${dirs.map(([k, d]) => `${k} = \`${d}\``).join(", ")}; ` +
  `${cpus().length} cores, load average ${
    loadavg().map((x) => x.toFixed(2)).join(" ")
  } at the end.`,
  "",
  "| runtime | system | client ns/call | server ns/call | calls/s (this machine, noisy) | " +
  "throughput-equivalent vs raw: own cores | sharing a core |",
  "|---|---|---:|---:|---:|---:|---:|",
];
const summary: Record<string, unknown>[] = [];
for (const rt of rts) {
  const med = (system: string): M => {
    const xs = runs.filter((r) => r.runtime === rt && r.system === system).map((r) => r.m);
    return {
      client: median(xs.map((x) => x.client)),
      server: median(xs.map((x) => x.server)),
      qps: median(xs.map((x) => x.qps)),
    };
  };
  const r = med("raw");
  for (const system of ["raw", ...dirs.map(([k]) => `verbus ${k}`)]) {
    const m = med(system);
    const own = +(Math.max(r.client, r.server) / Math.max(m.client, m.server)).toFixed(3);
    const shared = +((r.client + r.server) / (m.client + m.server)).toFixed(3);
    summary.push({ runtime: rt, system, ...m, own_cores: own, shared_core: shared });
    lines.push(
      `| ${rt} | ${system} | ${m.client} | ${m.server} | ${m.qps} | ${own} | ${shared} |`,
    );
  }
}
const md = lines.join("\n") + "\n";
console.log(md);
writeFileSync(join(HERE, `bench/results/${name}.md`), md);
writeFileSync(
  join(HERE, `bench/results/${name}.json`),
  JSON.stringify(
    { dirs, cli: CLI, rounds, calls, load_at_end: loadavg(), summary, runs },
    null,
    2,
  ) +
    "\n",
);
