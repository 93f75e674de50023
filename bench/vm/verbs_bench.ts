/**
 * Verbs fabric benchmark, run INSIDE the Soft-RoCE VM by bench/vm/verbs_bench.sh (which first
 * runs perftest and passes its numbers with `--perftest FILE`). Starts a verbus server process
 * (demo service, same runtime) on rxe1 and a client bound to rxe0, and measures:
 * EAGER ECHO 64 B round trip and calls/s, LARGE_GET 64 KiB on the LAZY path, and the same calls
 * over verbus's own TCP path. Prints a table of ratios; writes build/bench/verbs-<runtime>.json.
 *
 *   deno run -A bench/vm/verbs_bench.ts --perftest build/bench/perftest.json
 *   bun bench/vm/verbs_bench.ts --serve --mode poll      (the server role, used internally)
 * @module
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import { type Client, connect } from "../../rpc/client.ts";
import { encodeKeyRequest } from "../../examples/demo/codec.ts";
import { demoService } from "../../examples/demo/service.ts";
import { serve } from "../../rpc/server.ts";
import { endpointPingPong } from "./endpoint_pingpong.ts";
import { spawnServerRole, VM_BENCH_REGION } from "./vm_common.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const opt = (n: string, d: string) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const SERVER = "10.77.0.2", CLIENT = "10.77.0.1";
const REGION = VM_BENCH_REGION;
const ROOT = resolve(new URL("../..", import.meta.url).pathname);

if (args.includes("--serve")) {
  const server = await serve({
    port: 0,
    host: SERVER,
    services: demoService({}),
    fabric: {
      fabrics: ["verbs"],
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

async function measure(c: Client, path: "EAGER" | "TCP_FALLBACK", iters: number) {
  const echo = new Uint8Array(64).fill(7), key = encodeKeyRequest("big:64k");
  const lazyPath = path === "EAGER" ? "LAZY" : "TCP_FALLBACK";
  const echoCall = () => c.call("verbus.Demo", "Echo", echo, { forcePath: path });
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
    callsPerSec: await throughput(16, 2000, echoCall),
  };
}

async function main(): Promise<void> {
  const perf = JSON.parse(readFileSync(opt("--perftest", "build/bench/perftest.json"), "utf8"));
  const iters = Number(opt("--iters", "2000"));
  const results: Record<string, unknown> = { runtime: RUNTIME, perftest: perf, region: REGION };
  results.endpoint = await endpointPingPong(SERVER, CLIENT, REGION, iters);
  // One server process in event mode (it busy-polls while there is work, sleeps when idle: a
  // poll-mode server would pin one of the VM's two vCPUs forever); the client in both modes.
  const srv = await spawnServer(opt("--server-mode", "event"));
  results.server_start_ms = Math.round(srv.startMs);
  try {
    for (const mode of ["poll", "event"]) {
      const c = await connect({ host: SERVER, port: srv.port }, {
        fabric: "verbs",
        region: REGION,
        providerOptions: { verbs: { sourceAddr: CLIENT, mode } },
        timeoutMs: 10_000,
      });
      try {
        if (c.fabric !== "verbs") throw new Error(`no verbs session: ${c.handshake.reason}`);
        results[`verbs_${mode}`] = await measure(c, "EAGER", iters);
        if (mode === "poll") {
          results.tcp = await measure(c, "TCP_FALLBACK", Math.max(500, iters >> 1));
        }
      } finally {
        await c.close();
      }
    }
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
    } → verbs/TCP ${(x.verbs_poll.callsPerSec / x.tcp.callsPerSec).toFixed(2)}×`,
  );
  rows.push(
    `means (µs): EAGER poll ${x.verbs_poll.echo.mean.toFixed(1)}, event ${
      x.verbs_event.echo.mean.toFixed(1)
    }, TCP ${x.tcp.echo.mean.toFixed(1)}; server process start ${x.server_start_ms} ms`,
  );
  console.log(rows.join("\n"));
}
