/**
 * The UBRing bench's verbus client (run by `run.ts`, one process per cell; Deno or Bun): brpc's
 * `test.PerfTestService/Test` with `--depth` calls in flight for `--seconds` after a warm-up, an
 * attachment of `--attachment` bytes echoed back (PerfTestRequest.echo_attachment, as brpc's
 * `--echo_attachment`).
 *
 *   client.ts --mode ubring|shm --port P [--depth 1] [--attachment 0] [--seconds 3] [--warmup-ms 500]
 *
 * `ubring`: a baidu_std channel in brpc's UBRing mode (to `ubring_performance_server --use_ubring`
 * or `verbus serve --brpc-ubring`); `shm`: the verbus client over verbus's shm fabric (to `verbus
 * serve`). One JSON line: `{"calls","seconds","callsPerSec","p50Us","avgUs","p90Us","p99Us",
 * "errors","transport","cpuUsPerCall","paths"}` — `cpuUsPerCall`: this process's user + kernel CPU
 * (`/proc/self/stat`) over the measured window ÷ its calls; `paths` (shm mode): calls per path
 * since connect, warm-up included (a TCP_FALLBACK count shows calls redone over TCP).
 * @module
 */
import { connect as connectChannel } from "../../rpc/tcp/channel.ts";
import { connect } from "../../rpc/client/client.ts";
import { arg, exit, numArg } from "../common/args.ts";
import { procUsage } from "../common/proc_cpu.ts";

const MODE = arg("mode", "ubring");
const PORT = numArg("port", 0);
const DEPTH = numArg("depth", 1);
const ATTACHMENT = numArg("attachment", 0);
const SECONDS = numArg("seconds", 3);
const WARMUP_MS = numArg("warmup-ms", 500);

type Call = () => Promise<unknown>;

const body = new Uint8Array([8, ATTACHMENT > 0 ? 1 : 0]); // PerfTestRequest { echo_attachment }
const attachment = ATTACHMENT > 0 ? new Uint8Array(ATTACHMENT).fill(7) : undefined;
const opts = attachment ? { attachment } : undefined;

async function open(): Promise<
  {
    call: Call;
    transport: () => string;
    paths: () => Record<string, number> | undefined;
    close: () => Promise<void>;
  }
> {
  const addr = `127.0.0.1:${PORT}`;
  if (MODE === "ubring") {
    const ch = await connectChannel(addr, { brpcUbring: {}, timeoutMs: 30_000 });
    return {
      call: () => ch.call("test.PerfTestService", "Test", body, opts),
      transport: () => ch.transport,
      paths: () => undefined,
      close: () => ch.close(),
    };
  }
  const c = await connect(addr, { timeoutMs: 30_000 });
  return {
    call: () => c.call("test.PerfTestService", "Test", body, opts),
    transport: () => c.fabric,
    paths: () => ({ ...c.stats().calls }),
    close: () => c.close(),
  };
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;

const c = await open();
const lat: number[] = [];
let errors = 0, measuring = false, stop = false;
const warmEnd = performance.now() + WARMUP_MS;
let start = 0, cpu0 = 0;
const cpuMs = () => {
  const u = procUsage("self", { switches: false });
  return u.user + u.sys;
};
await Promise.all(Array.from({ length: DEPTH }, async () => {
  while (!stop) {
    const t0 = performance.now();
    try {
      await c.call();
      if (measuring) lat.push((performance.now() - t0) * 1000);
    } catch {
      if (measuring) errors++;
    }
    const now = performance.now();
    if (!measuring && now >= warmEnd) {
      measuring = true;
      start = now;
      cpu0 = cpuMs();
    }
    if (measuring && now - start >= SECONDS * 1000) stop = true;
  }
}));
const seconds = (performance.now() - start) / 1000;
const cpuUsPerCall = Math.round((cpuMs() - cpu0) * 1000 / Math.max(1, lat.length));
lat.sort((a, b) => a - b);
console.log(JSON.stringify({
  calls: lat.length,
  seconds,
  callsPerSec: Math.round(lat.length / seconds),
  p50Us: Math.round(pct(lat, 0.5)),
  avgUs: Math.round(lat.reduce((s, x) => s + x, 0) / Math.max(1, lat.length)),
  p90Us: Math.round(pct(lat, 0.9)),
  p99Us: Math.round(pct(lat, 0.99)),
  errors,
  transport: c.transport(),
  cpuUsPerCall,
  paths: c.paths(),
}));
await c.close();
exit(0);
