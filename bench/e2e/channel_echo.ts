/**
 * verbus TCP without the `Client` layer: a child process serves `bench.Echo/Echo` (returns the
 * request) with `serve({ fabric: false })`; this process drives it through a bare `Channel` with W
 * calls in flight (one promise per call, no path selection). It separates the cost of the
 * baidu_std channel, server and TCP transport from `Client.call`'s.
 *
 * `deno run -A bench/e2e/channel_echo.ts [--inflight 32] [--calls 100000] [--payload 64]`, or the
 * same with `bun`. Prints one JSON line: calls/s, p50, p99 in µs, and each process's CPU time
 * per call in ns (user + system, `process.cpuUsage()`), the figure to compare on a busy machine. `--client` drives it through
 * `connect(…, { fabric: "tcp" })` (the public `Client`) instead, for comparison; `--port P` uses a
 * server already running (e.g. `verbus serve`; the service is then `verbus.Demo/Echo`).
 * @module
 */
import { connect, connectChannel, serve } from "../../mod.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const argv: string[] = g.Deno ? g.Deno.args : g.process.argv.slice(2);
const num = (name: string, def: number) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : def;
};
const exit = (c: number) => (g.Deno ? g.Deno.exit(c) : g.process.exit(c));
const { cpuUsage } = await import("node:process");
/** This process's CPU time (user + system, µs) as 8 bytes. */
function cpuNow(): Uint8Array {
  const u = cpuUsage();
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, u.user + u.system);
  return b;
}
const cpuOf = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, 8).getFloat64(0);

if (argv.includes("--serve")) {
  const s = await serve({
    port: 0,
    fabric: false,
    services: { "bench.Echo": { Echo: (r: Uint8Array) => r, Cpu: () => cpuNow() } },
  });
  console.log(`PORT ${s.port}`);
} else {
  const self = new URL(import.meta.url).pathname;
  const given = num("port", 0);
  const cmd = g.Deno
    ? [g.Deno.execPath(), "run", "-A", self, "--serve"]
    : [g.process.execPath, self, "--serve"];
  const { spawn } = await import("node:child_process");
  const child = given
    ? null
    : spawn(cmd[0], cmd.slice(1), { stdio: ["ignore", "pipe", "inherit"] });
  const port = given || await new Promise<number>((res) => {
    let out = "";
    child!.stdout!.on("data", (d: Uint8Array) => {
      out += String(d);
      const m = /PORT (\d+)/.exec(out);
      if (m) res(Number(m[1]));
    });
  });
  const [service, method] = given ? ["verbus.Demo", "Echo"] : ["bench.Echo", "Echo"];
  const inflight = num("inflight", 32), calls = num("calls", 100_000);
  const req = new Uint8Array(num("payload", 64)).fill(0x61);
  const ch = argv.includes("--client")
    ? await connect({ host: "127.0.0.1", port }, { fabric: "tcp" })
    : await connectChannel({ host: "127.0.0.1", port });
  const run = async (n: number, lat: Float64Array | null) => {
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const i = next++;
        const a = performance.now();
        await ch.call(service, method, req);
        if (lat) lat[i] = performance.now() - a;
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: inflight }, worker));
    return (performance.now() - t0) / 1000;
  };
  await run(Math.min(calls, 20_000), null);
  const lat = new Float64Array(calls);
  const own = given ? null : ch as unknown as {
    call(s: string, m: string, r: Uint8Array): Promise<{ response: Uint8Array }>;
  };
  const s0 = own ? cpuOf((await own.call(service, "Cpu", req)).response) : NaN;
  const c0 = cpuOf(cpuNow());
  const secs = await run(calls, lat);
  const c1 = cpuOf(cpuNow());
  const s1 = own ? cpuOf((await own.call(service, "Cpu", req)).response) : NaN;
  lat.sort();
  const pick = (q: number) => Math.round(lat[Math.floor(q * (calls - 1))] * 1e5) / 100;
  console.log(JSON.stringify({
    inflight,
    calls,
    qps: Math.round(calls / secs),
    p50_us: pick(0.5),
    p99_us: pick(0.99),
    // CPU time per call (ns) of each process during the measured calls: robust to preemption.
    client_cpu_ns: Math.round((c1 - c0) * 1000 / calls),
    server_cpu_ns: Math.round((s1 - s0) * 1000 / calls),
  }));
  await ch.close();
  child?.kill("SIGTERM");
  exit(0);
}
