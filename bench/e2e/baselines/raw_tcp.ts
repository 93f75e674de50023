/**
 * Baseline for the end-to-end benchmark: the ceiling of any framing on the runtime's own TCP API.
 * A length-prefixed echo (u32 big-endian length + payload) served and driven with `Deno.listen` /
 * `Deno.connect` or `Bun.listen` / `Bun.connect` — whichever runtime runs this file; the server
 * child is spawned with the same runtime binary.
 *
 *   deno run -A raw_tcp.ts --payload 64 --inflight 32 --calls 50000 --warmup 5000
 *   bun raw_tcp.ts         --payload 64 --inflight 32 --calls 50000 --warmup 5000
 *       spawns the server child, runs a closed-loop client with --inflight requests outstanding on
 *       one connection, prints ONE JSON line:
 *       {"name":"raw-tcp-deno","payload":64,"inflight":32,"calls":..,"p50_us":..,"p99_us":..,"qps":..}
 *   ... --serve [--port 0] [--host 127.0.0.1]   server only; prints "PORT <n>"; exits when stdin closes
 *   ... --connect HOST:PORT ...                 client only
 *
 * Hot path: no per-message allocation. The server echoes every complete frame of a read with one
 * write straight from its receive buffer; the client sends from a prebuilt buffer of `inflight`
 * frames, so all requests freed by one read leave in one write. Responses come back in order
 * (one connection), so send times sit in a ring of `inflight` slots. The latency of a call is
 * from the write that carried it to the read that completed it. Exit code 2 for bad flags, 1 on
 * an error (including a response that is not the request's echo).
 * @module
 */
import { denoClient, denoServe, denoSpawnServer } from "./raw_tcp_deno.ts";
import { bunClient, bunServe, bunSpawnServer } from "./raw_tcp_bun.ts";
import { type ClientPhase, parseArgs, quantileUs, usageError } from "./raw_tcp_common.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const runtime: "deno" | "bun" = typeof g.Bun !== "undefined" ? "bun" : "deno";
const argv: string[] = runtime === "deno" ? g.Deno.args : g.process.argv.slice(2);
const exit = (code: number): void =>
  void (runtime === "deno" ? g.Deno.exit(code) : g.process.exit(code));

async function main(): Promise<void> {
  const o = parseArgs(argv);
  if (o.serve) {
    const port = runtime === "deno"
      ? await denoServe(o.host, o.port, o.exitOnStdinEof)
      : await bunServe(o.host, o.port, o.exitOnStdinEof);
    console.log(`PORT ${port}`);
    return;
  }
  let target = o.connect;
  let stop: (() => void) | undefined;
  if (target === "") {
    const file = new URL(import.meta.url).pathname;
    const s = runtime === "deno" ? await denoSpawnServer(file) : await bunSpawnServer(file);
    target = `127.0.0.1:${s.port}`;
    stop = s.stop;
  }
  try {
    const m = /^(.+):(\d+)$/.exec(target);
    if (m === null) usageError(`--connect needs HOST:PORT, got ${target}`);
    const client: ClientPhase = runtime === "deno"
      ? await denoClient(m![1], Number(m![2]), o.payload, o.inflight)
      : await bunClient(m![1], Number(m![2]), o.payload, o.inflight);
    if (o.warmup > 0) await client.run(o.warmup, null);
    const lat = new Float64Array(o.calls);
    const ms = await client.run(o.calls, lat);
    client.close();
    lat.sort();
    console.log(JSON.stringify({
      name: `raw-tcp-${runtime}`,
      payload: o.payload,
      inflight: o.inflight,
      calls: o.calls,
      mean_us: Math.round((lat.reduce((x, y) => x + y, 0) / lat.length) * 10) / 10,
      p50_us: quantileUs(lat, 0.5),
      p99_us: quantileUs(lat, 0.99),
      p999_us: quantileUs(lat, 0.999),
      qps: Math.round(o.calls / (ms / 1000)),
    }));
  } finally {
    stop?.();
  }
}

main().then(
  () => {
    if (!parseArgs(argv).serve) exit(0);
  },
  (e) => {
    console.error(`raw_tcp: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    exit(1);
  },
);
