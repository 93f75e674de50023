/**
 * Verbs fabric benchmark, run INSIDE the Soft-RoCE VM by bench/vm/verbs_bench.sh (which first
 * runs perftest and passes its numbers with `--perftest FILE`). Starts a verbus server process
 * (demo service, same runtime) on rxe1 and a client bound to rxe0, and measures:
 * EAGER ECHO 64 B round trip and calls/s, LARGE_GET 64 KiB on the LAZY path, and the same calls
 * over verbus's own TCP path; and ECHO over shm between the same two processes' runtimes in this
 * VM — no fabric at all, so its calls/s at 16 in flight ÷ TCP's is the most any fabric can reach
 * here (the JS floor of a call under TCG). Calls/s at 16 in flight are `--rounds` (3) interleaved
 * rounds of 0.8 s per case, compared within a round. Prints a table of ratios; writes
 * build/bench/verbs-<runtime>.json.
 *
 *   deno run -A bench/vm/verbs_bench.ts --perftest build/bench/perftest.json [--rounds 3]
 *   bun bench/vm/verbs_bench.ts --serve --mode poll      (the server role, used internally)
 * @module
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import { type Client, connect } from "../../rpc/client/client.ts";
import { encodeKeyRequest } from "../../examples/demo/codec.ts";
import { demoService } from "../../examples/demo/service.ts";
import { serve } from "../../rpc/server/server.ts";
import { endpointPingPong } from "./endpoint_pingpong.ts";
import { spawnServerRole, VM_BENCH_REGION } from "./vm_common.ts";
import { median } from "../common/median.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const opt = (n: string, d: string) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const SERVER = "10.77.0.2", CLIENT = "10.77.0.1";
const REGION = VM_BENCH_REGION;
/** Rounds of the 16-in-flight measurement (`--rounds`), and each case's window in one round. */
const ROUNDS = Number(opt("--rounds", "3")), WINDOW_MS = 800;
/** The ECHO request of every call (module constants sit above `main()`, which runs at load). */
const ECHO_64 = new Uint8Array(64).fill(7);
const ROOT = resolve(new URL("../..", import.meta.url).pathname);

if (args.includes("--serve")) {
  const server = await serve({
    port: 0,
    host: SERVER,
    services: demoService({}),
    fabric: {
      fabrics: ["verbs", "shm"], // shm: the JS floor of a call in this VM (no fabric at all)
      providerOptions: { verbs: { addr: SERVER, port: 0, mode: opt("--mode", "poll") } },
      region: REGION,
    },
    logger: { warn: (m) => console.error(`bench server: ${m}`) },
  });
  console.log(`listening on ${server.port}`);
} else {
  await main();
}

/** Spawns this script as a server on the same runtime; resolves with its port and a kill. */
function spawnServer(mode: string): Promise<{ port: number; startMs: number; kill(): void }> {
  return spawnServerRole("bench/vm/verbs_bench.ts", ["--serve", "--mode", mode]);
}

interface Rtt {
  p50: number;
  p99: number;
  mean: number;
}

async function rtt(n: number, fn: () => Promise<unknown>): Promise<Rtt> {
  for (let i = 0; i < Math.min(300, n); i++) await fn(); // warm-up (JIT, caches, CQ state)
  const t = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    t[i] = (performance.now() - t0) * 1000;
  }
  t.sort();
  let sum = 0;
  for (const x of t) sum += x;
  return { p50: t[n >> 1], p99: t[Math.floor(n * 0.99)], mean: sum / n };
}

async function throughput(window: number, ms: number, fn: () => Promise<unknown>): Promise<number> {
  let n = 0;
  const end = performance.now() + ms;
  await Promise.all(Array.from({ length: window }, async () => {
    while (performance.now() < end) {
      await fn();
      n++;
    }
  }));
  return n / (ms / 1000);
}

/**
 * Calls/s at 16 in flight of every case, `ROUNDS` times in turn, `WINDOW_MS` each: the VM's
 * speed drifts within a run (one case measured in one block of 2 s met another machine than the
 * next), so cases are interleaved and compared within a round.
 */
async function rounds(
  cases: Record<string, () => Promise<unknown>>,
): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, call] of Object.entries(cases)) {
      (out[name] ??= []).push(await throughput(16, WINDOW_MS, call));
    }
  }
  return out;
}

/** An ECHO 64 B call of `c` forced onto `path` (one request buffer for every call). */
function echoOf(c: Client, path: "EAGER" | "TCP_FALLBACK"): () => ReturnType<Client["call"]> {
  return () => c.call("verbus.Demo", "Echo", ECHO_64, { forcePath: path });
}

/** Round trips of ECHO 64 B and LARGE_GET 64 KiB over `path`, and the ECHO call (checked once). */
async function measure(c: Client, path: "EAGER" | "TCP_FALLBACK", iters: number) {
  const key = encodeKeyRequest("big:64k");
  const lazyPath = path === "EAGER" ? "LAZY" : "TCP_FALLBACK";
  const echoCall = echoOf(c, path);
  const r = await echoCall();
  if (r.response.length !== 64 || r.path !== path) {
    throw new Error(`echo went ${r.path} over ${r.fabric}`);
  }
  const lg = await c.call("verbus.Demo", "LargeGet", key, { forcePath: lazyPath });
  if (lg.response.length !== 65536 || lg.path !== lazyPath) {
    throw new Error(`LargeGet went ${lg.path} (${lg.response.length} B)`);
  }
  return {
    echo: await rtt(iters, echoCall),
    large: await rtt(
      Math.max(200, iters >> 2),
      () => c.call("verbus.Demo", "LargeGet", key, { forcePath: lazyPath }),
    ),
    echoCall,
  };
}

/** A client of the bench server over `fabric` (verbs in `mode`, or shm), checked to have it. */
async function client(port: number, fabric: "verbs" | "shm", mode = "event"): Promise<Client> {
  const c = await connect({ host: SERVER, port }, {
    fabric,
    region: REGION,
    providerOptions: { verbs: { sourceAddr: CLIENT, mode } },
    timeoutMs: 10_000,
  });
  if (c.fabric !== fabric) {
    await c.close();
    throw new Error(`no ${fabric} session: ${c.handshake.reason}`);
  }
  return c;
}

async function main(): Promise<void> {
  const perf = JSON.parse(readFileSync(opt("--perftest", "build/bench/perftest.json"), "utf8"));
  const iters = Number(opt("--iters", "2000"));
  const results: Record<string, unknown> = { runtime: RUNTIME, perftest: perf, region: REGION };
  results.endpoint = await endpointPingPong(SERVER, CLIENT, REGION, iters);
  // One server process in event mode (it busy-polls while there is work, sleeps when idle: a
  // poll-mode server would pin one of the VM's two vCPUs forever); the client in both modes, one
  // after the other (a poll-mode endpoint makes its process's hub busy-poll: no event client
  // beside it), each phase with its own rounds of verbs, TCP (and shm) at 16 in flight.
  const srv = await spawnServer(opt("--server-mode", "event"));
  results.server_start_ms = Math.round(srv.startMs);
  const tcpRounds: number[] = [];
  /** Keeps the figures of a phase: each case's median and its per-round ratio to TCP. */
  const keep = (
    name: string,
    m: Omit<Awaited<ReturnType<typeof measure>>, "echoCall">,
    xs: number[],
    tcp: number[],
  ) => {
    results[name] = {
      echo: m.echo,
      large: m.large,
      callsPerSec: median(xs),
      callsPerSecRounds: xs,
      vsTcpRounds: xs.map((x, i) => x / tcp[i]),
    };
  };
  try {
    const poll = await client(srv.port, "verbs", "poll");
    try {
      const v = await measure(poll, "EAGER", iters);
      const t = await measure(poll, "TCP_FALLBACK", Math.max(500, iters >> 1));
      const r = await rounds({ verbs: v.echoCall, tcp: t.echoCall });
      keep("verbs_poll", v, r.verbs, r.tcp);
      results.tcp = { echo: t.echo, large: t.large };
      tcpRounds.push(...r.tcp);
    } finally {
      await poll.close();
    }
    const event = await client(srv.port, "verbs", "event");
    const shm = await client(srv.port, "shm");
    try {
      const v = await measure(event, "EAGER", iters);
      const s = await measure(shm, "EAGER", Math.max(500, iters >> 1));
      const tcp = echoOf(event, "TCP_FALLBACK");
      const r = await rounds({ verbs: v.echoCall, tcp, shm: s.echoCall });
      keep("verbs_event", v, r.verbs, r.tcp);
      keep("shm", s, r.shm, r.tcp);
      tcpRounds.push(...r.tcp);
    } finally {
      await shm.close();
      await event.close();
    }
    Object.assign(results.tcp as object, {
      callsPerSec: median(tcpRounds),
      callsPerSecRounds: tcpRounds,
    });
  } finally {
    srv.kill();
  }
  mkdirSync(join(ROOT, "build/bench"), { recursive: true });
  writeFileSync(join(ROOT, `build/bench/verbs-${RUNTIME}.json`), JSON.stringify(results, null, 2));
  printTable(results);
}

function printTable(r: Record<string, unknown>): void {
  // deno-lint-ignore no-explicit-any
  const x = r as any;
  const w2 = 2 * x.perftest.write_lat_64.typical,
    s2 = 2 * x.perftest.send_lat_64.typical,
    rd = x.perftest.read_lat_64k.typical;
  const f = (v: number) => v.toFixed(1).padStart(9);
  const ratio = (a: number, b: number) => (a / b).toFixed(2).padStart(7) + "×";
  const rows: string[] = [
    `verbus ${RUNTIME} on Soft-RoCE (qemu TCG: only ratios mean anything); µs are p50 round trips`,
    `${"measurement".padEnd(44)}${"verbus".padStart(9)}  ${"baseline".padEnd(28)}${
      "ratio".padStart(8)
    }`,
  ];
  const row = (name: string, v: number, base: string, b: number) =>
    rows.push(`${name.padEnd(44)}${f(v)}  ${base.padEnd(19)}${f(b)}${ratio(v, b)}`);
  const perfOk = [w2, s2, rd].every((v) => Number.isFinite(v) && v > 0);
  if (!perfOk) rows.push("(perftest numbers missing: ratios against perftest are not shown)");
  const prow = (name: string, v: number, base: string, b: number) =>
    perfOk ? row(name, v, base, b) : rows.push(`${name.padEnd(44)}${f(v)}`);
  prow("endpoint ping-pong 64 B (fabric only)", x.endpoint.p50, "2 × ib_write_lat", w2);
  prow("EAGER ECHO 64 B RTT, client poll mode", x.verbs_poll.echo.p50, "2 × ib_write_lat", w2);
  prow("EAGER ECHO 64 B RTT, client poll mode", x.verbs_poll.echo.p50, "2 × ib_send_lat", s2);
  prow("EAGER ECHO 64 B RTT, client event mode", x.verbs_event.echo.p50, "2 × ib_write_lat", w2);
  prow("LARGE_GET 64 KiB LAZY RTT, client poll", x.verbs_poll.large.p50, "ib_read_lat 64 KiB", rd);
  prow(
    "LARGE_GET 64 KiB LAZY RTT, client event",
    x.verbs_event.large.p50,
    "ib_read_lat 64 KiB",
    rd,
  );
  row("TCP ECHO 64 B RTT", x.tcp.echo.p50, "verbs EAGER (poll)", x.verbs_poll.echo.p50);
  row("TCP LARGE_GET 64 KiB RTT", x.tcp.large.p50, "verbs LAZY (poll)", x.verbs_poll.large.p50);
  rows.push(
    `${"calls/s EAGER ECHO 64 B, 16 in flight".padEnd(44)}${
      x.verbs_poll.callsPerSec.toFixed(0).padStart(9)
    } (poll) ${x.verbs_event.callsPerSec.toFixed(0)} (event); TCP ${
      x.tcp.callsPerSec.toFixed(0)
    }; shm ${x.shm.callsPerSec.toFixed(0)} → verbs/TCP ${
      median(x.verbs_poll.vsTcpRounds).toFixed(2)
    }× (poll) ${median(x.verbs_event.vsTcpRounds).toFixed(2)}× (event), shm/TCP ${
      median(x.shm.vsTcpRounds).toFixed(2)
    }× (the JS floor in this VM); medians of ${ROUNDS} rounds`,
  );
  rows.push(
    `means (µs): EAGER poll ${x.verbs_poll.echo.mean.toFixed(1)}, event ${
      x.verbs_event.echo.mean.toFixed(1)
    }, TCP ${x.tcp.echo.mean.toFixed(1)}; server process start ${x.server_start_ms} ms`,
  );
  console.log(rows.join("\n"));
}
