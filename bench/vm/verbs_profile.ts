/**
 * Where a verbs EAGER call's time goes, INSIDE the Soft-RoCE VM (issue 11's VM targets).
 * Starts a server process on rxe1 (same runtime; `--server-mode`) and, here, a client on rxe0
 * (`--client-mode`), runs `--calls` ECHO 64 B calls with `--window` in flight, and prints one
 * JSON line per client mode:
 * - latency: p50/p99 of the whole call, and its two legs — client submit → server handler
 *   (request post, rxe, the server's CQ wake and poll, decode, dispatch) and handler → client
 *   resolve (answer post, rxe, the client's wake, complete): the handler answers the time it ran
 *   (performance.timeOrigin + now; both processes read the same host clock);
 * - CPU per call, µs: client and server user/system (`/proc/PID/stat`), the VM's softirq time
 *   and its ksoftirqd threads (where rxe's tasklets and the veth's packets run), and the idle
 *   share of the VM's 2 vCPUs — the rest of a call's wall time is waiting;
 * - per call: progress-loop turns, idle sleeps, spins cut short, hub CQ polls and channel sleeps,
 *   on both sides (`perf trace -s` in the VM counts the syscalls: doorbells are `write`s);
 *   context switches (voluntary/involuntary) of both processes;
 * - the runnable-task count the spin policy reads (/proc/loadavg), sampled every 20 ms.
 *
 *   SR_SHARE=$PWD ../../shared/softroce/run-in-vm.sh \
 *     'node_modules/.bin/deno run -A bench/vm/verbs_profile.ts --calls 2000'
 *   … 'node_modules/.bin/bun bench/vm/verbs_profile.ts --window 16'
 *   VERBUS_ROOT=/work/main …  (profile another checkout's library with this script)
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { arg, ARGS, env, numArg } from "../common/args.ts";
import { progressArgs } from "../profile/common.ts";
import { spawnServerRole, VM_BENCH_REGION } from "./vm_common.ts";

const SERVER = "10.77.0.2", CLIENT = "10.77.0.1", SERVICE = "bench.VmProfile";
const ROOT = (env("VERBUS_ROOT") ?? new URL("../..", import.meta.url).pathname).replace(/\/$/, "");
const lib = (p: string) => import(new URL(`file://${ROOT}/${p}`).href);
const { serve, connect, RUNTIME } = await lib("mod.ts");
const { ProgressEngine } = await lib("rpc/session/engine/engine.ts");
const { VerbsHub } = await lib("transport/verbs/hub.ts");
const enc = new TextEncoder(), dec = new TextDecoder();
const now = () => performance.timeOrigin + performance.now();

/** This process's progress-loop and verbs hub counters. */
async function counters(): Promise<Record<string, number>> {
  const e = await ProgressEngine.forThread();
  const out: Record<string, number> = { ...e.loopCounters };
  // deno-lint-ignore no-explicit-any
  for (const h of VerbsHub.all() as any[]) {
    out.cqPolls = (out.cqPolls ?? 0) + h.counters.polls;
    out.cqSleeps = (out.cqSleeps ?? 0) + h.counters.sleeps;
    out.completions = (out.completions ?? 0) + h.counters.completions;
  }
  return out;
}

if (ARGS.includes("--serve")) {
  const server = await serve({
    port: 0,
    host: SERVER,
    services: {
      [SERVICE]: {
        Echo(): Uint8Array {
          const b = new Uint8Array(64);
          new DataView(b.buffer).setFloat64(0, now(), true);
          return b;
        },
        async Stats(): Promise<Uint8Array> {
          return enc.encode(JSON.stringify(await counters()));
        },
      },
    },
    fabric: {
      fabrics: ["verbs"],
      providerOptions: { verbs: { addr: SERVER, port: 0, mode: arg("mode", "event") } },
      region: VM_BENCH_REGION,
      progress: progressArgs(),
    },
    logger: { warn: (m: string) => console.error(`profile server: ${m}`), info: () => {} },
  });
  console.log(`listening on ${server.port}`);
} else {
  await main();
}

/** utime, stime (µs) and voluntary/involuntary context switches of `pid`. */
function procCpu(pid: number | "self"): number[] {
  const status = readFileSync(`/proc/${pid}/status`, "latin1");
  const sw = (n: string) => Number(new RegExp(`${n}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  // Threads: sum over /proc/PID/task (a runtime's helper threads count too).
  let u = 0, s = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const ts = readFileSync(`/proc/${pid}/task/${t}/stat`, "latin1");
    const g = ts.slice(ts.lastIndexOf(")") + 2).split(" ");
    u += Number(g[11]);
    s += Number(g[12]);
  }
  return [u * 1e4, s * 1e4, sw("voluntary_ctxt_switches"), sw("nonvoluntary_ctxt_switches")];
}

/** The VM: [softirq, idle] µs from /proc/stat, and ksoftirqd/kworker CPU µs. */
/**
 * rxe's packet counters of both devices (`hw_counters`: what the NIC model sent and received),
 * `[rxe0 sent, rxe0 received, rxe1 sent, rxe1 received]`; zeros where a counter is missing.
 * Soft-RoCE's cost in this VM is per packet, so packets per call say what a call costs the fabric.
 */
function rxePackets(): number[] {
  const read = (dev: string, c: string) => {
    try {
      return Number(
        readFileSync(`/sys/class/infiniband/${dev}/ports/1/hw_counters/${c}`, "latin1").trim(),
      );
    } catch {
      return 0;
    }
  };
  return ["rxe0", "rxe1"].flatMap((d) => [read(d, "sent_pkts"), read(d, "rcvd_pkts")]);
}

function vmCpu(): number[] {
  const c = readFileSync("/proc/stat", "latin1").split("\n")[0].trim().split(/\s+/).map(Number);
  let kthreads = 0;
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const comm = readFileSync(`/proc/${p}/comm`, "latin1");
      if (!/^(ksoftirqd|kworker|rxe)/.test(comm)) continue;
      const f = readFileSync(`/proc/${p}/stat`, "latin1");
      const g = f.slice(f.lastIndexOf(")") + 2).split(" ");
      kthreads += Number(g[11]) + Number(g[12]);
    } catch { /* gone */ }
  }
  return [c[7] * 1e4, c[4] * 1e4, kthreads * 1e4, (c[3] + c[6]) * 1e4];
}

function pct(a: Float64Array, q: number): number {
  return a[Math.min(a.length - 1, Math.floor(a.length * q))];
}

// deno-lint-ignore no-explicit-any
async function measure(c: any, serverPid: number, calls: number, window: number) {
  const req = new Uint8Array(64).fill(7);
  const stats = async () =>
    JSON.parse(
      dec.decode((await c.call(SERVICE, "Stats", req, { forcePath: "TCP_FALLBACK" })).response),
    );
  for (let i = 0; i < 300; i++) await c.call(SERVICE, "Echo", req, { forcePath: "EAGER" });
  const rt = new Float64Array(calls),
    leg1 = new Float64Array(calls),
    leg2 = new Float64Array(calls);
  const s0 = await stats(), c0 = await counters();
  const p0 = procCpu("self"), q0 = procCpu(serverPid), v0 = vmCpu(), x0 = rxePackets();
  const runnable: number[] = [];
  const sampler = setInterval(() => {
    const m = /^\S+ \S+ \S+ (\d+)\//.exec(readFileSync("/proc/loadavg", "latin1"));
    if (m) runnable.push(Number(m[1]));
  }, 20);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: window }, async () => {
    while (next < calls) {
      const i = next++;
      const a = now();
      const r = await c.call(SERVICE, "Echo", req, { forcePath: "EAGER" });
      const b = now();
      if (r.path !== "EAGER") throw new Error(`went ${r.path}`);
      const h = new DataView(r.response.buffer, r.response.byteOffset).getFloat64(0, true);
      rt[i] = (b - a) * 1000;
      leg1[i] = (h - a) * 1000;
      leg2[i] = (b - h) * 1000;
    }
  }));
  const wall = (performance.now() - t0) * 1000;
  clearInterval(sampler);
  const p1 = procCpu("self"), q1 = procCpu(serverPid), v1 = vmCpu(), x1 = rxePackets();
  const c1 = await counters(), s1 = await stats();
  for (const a of [rt, leg1, leg2]) a.sort();
  const per = (x: number) => +(x / calls).toFixed(2);
  const delta = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(Object.keys(b).map((k) => [k, per(b[k] - (a[k] ?? 0))]));
  runnable.sort((a, b) => a - b);
  return {
    calls,
    window,
    calls_per_s: Math.round(calls / (wall / 1e6)),
    p50_us: +pct(rt, 0.5).toFixed(1),
    p99_us: +pct(rt, 0.99).toFixed(1),
    leg_request_p50_us: +pct(leg1, 0.5).toFixed(1),
    leg_answer_p50_us: +pct(leg2, 0.5).toFixed(1),
    wall_per_call_us: per(wall),
    cpu_per_call_us: {
      client_user: per(p1[0] - p0[0]),
      client_sys: per(p1[1] - p0[1]),
      server_user: per(q1[0] - q0[0]),
      server_sys: per(q1[1] - q0[1]),
      vm_softirq: per(v1[0] - v0[0]),
      vm_system: per(v1[1] - v0[1]),
      kthreads: per(v1[2] - v0[2]),
      vm_idle_2cpu: per(v1[3] - v0[3]),
    },
    ctx_switches_per_call: {
      client_vol: per(p1[2] - p0[2]),
      client_invol: per(p1[3] - p0[3]),
      server_vol: per(q1[2] - q0[2]),
      server_invol: per(q1[3] - q0[3]),
    },
    rxe_packets_per_call: {
      client_sent: per(x1[0] - x0[0]),
      client_received: per(x1[1] - x0[1]),
      server_sent: per(x1[2] - x0[2]),
      server_received: per(x1[3] - x0[3]),
    },
    client_per_call: delta(c0, c1),
    server_per_call: delta(s0, s1),
    runnable: { min: runnable[0], p50: runnable[runnable.length >> 1], max: runnable.at(-1) },
  };
}

async function main(): Promise<void> {
  const calls = numArg("calls", 2000), window = numArg("window", 1);
  const forwarded = ["spin-us", "idle-after-ms"].flatMap((n) =>
    arg(n, "") === "" ? [] : [`--${n}`, arg(n, "")]
  );
  const srv = await spawnServerRole("bench/vm/verbs_profile.ts", [
    "--serve",
    "--mode",
    arg("server-mode", "event"),
    ...forwarded,
  ]);
  try {
    for (const mode of arg("client-modes", "poll,event").split(",")) {
      const c = await connect({ host: SERVER, port: srv.port }, {
        fabric: "verbs",
        region: VM_BENCH_REGION,
        providerOptions: { verbs: { sourceAddr: CLIENT, mode } },
        timeoutMs: 20_000,
        progress: progressArgs(),
      });
      try {
        if (c.fabric !== "verbs") throw new Error(`no verbs session: ${c.handshake.reason}`);
        const r = await measure(c, srv.pid, calls, window);
        console.log(JSON.stringify({
          runtime: RUNTIME,
          root: ROOT,
          client_mode: mode,
          server_mode: arg("server-mode", "event"),
          progress: progressArgs(),
          ...r,
        }));
      } finally {
        await c.close();
      }
    }
  } finally {
    srv.kill();
  }
}
