/**
 * The profiled client: N ECHO calls of B bytes with W in flight over one forced path, through the
 * public API only (`connect`, `client.call`).
 *
 *   deno run -A bench/profile/echo_client.ts --port P [--path shm|tcp] [--calls 200000]
 *       [--window 1] [--bytes 64] [--warmup 2000] [--quit] [--counters]
 *
 * `--path shm`: `connect(…, { fabric: "shm", forcePath: "EAGER" })`; every answer must report
 * path EAGER on fabric shm (else exit 1). `--path tcp`: `connect(…, { fabric: "tcp" })`, every call
 * TCP_FALLBACK. After the warm-up it marks the start (locally and, by the `Mark` method, on the
 * server), runs the measured calls, marks the end, and with `--quit` asks the server to exit.
 * Prints one JSON line: calls, window, path, fabric, calls_per_s, p50_us, p99_us, seconds; with
 * `--counters` (see `counters.ts`; the server must run with `--counters` too) also
 * `counters: { client, server }`, the method counters of both processes over the measured calls.
 * @module
 */
import {
  arg,
  ARGS,
  exit,
  loadVerbus,
  numArg,
  progressArgs,
  SERVICE,
  verbusProfileMarkEnd,
  verbusProfileMarkStart,
} from "./common.ts";
import { instrument, readCounters, resetCounters } from "./counters.ts";
import { VM_BENCH_REGION } from "../vm/vm_common.ts";

const { connect, RUNTIME } = await loadVerbus();
const port = numArg("port", 0);
const path = arg("path", "shm");
const calls = numArg("calls", 200_000);
const window = Math.max(1, numArg("window", 1));
const bytes = numArg("bytes", 64);
const warmup = numArg("warmup", 2000);
if (path !== "shm" && path !== "tcp" && path !== "verbs") {
  throw new Error("--path expects shm, tcp or verbs");
}
/** `--path verbs` (in the Soft-RoCE VM): the server on rxe1, this client bound to rxe0. */
const VERBS_CLIENT = "10.77.0.1";

const client = await connect(
  { host: "127.0.0.1", port },
  path === "tcp" ? { fabric: "tcp" } : {
    fabric: path,
    forcePath: "EAGER",
    progress: progressArgs(),
    ...(path === "verbs"
      ? {
        region: VM_BENCH_REGION,
        providerOptions: { verbs: { sourceAddr: VERBS_CLIENT, mode: arg("mode", "event") } },
      }
      : {}),
  },
);
const wantPath = path === "tcp" ? "TCP_FALLBACK" : "EAGER";
const wantFabric = path;
if (client.fabric !== wantFabric) {
  console.error(`expected fabric ${wantFabric}, got ${client.fabric}: ${client.handshake?.reason}`);
  exit(1);
}

const req = new Uint8Array(bytes).fill(0x61);
let wrongPath = "";

async function run(n: number, lat: Float64Array | null): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const a = performance.now();
      const r = await client.call(SERVICE, "Echo", req);
      if (lat) lat[i] = performance.now() - a;
      if (r.path !== wantPath || r.fabric !== wantFabric || r.response.length !== bytes) {
        wrongPath ||= `${r.path}/${r.fabric}/${r.response.length} B`;
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(window, n) }, worker));
  return (performance.now() - t0) / 1000;
}

const mark = (what: string) => client.call(SERVICE, "Mark", new TextEncoder().encode(what));

const counters = ARGS.includes("--counters");
await run(warmup, null);
await mark("start");
verbusProfileMarkStart();
if (counters) {
  instrument([client]);
  resetCounters();
}
const lat = new Float64Array(calls);
const secs = await run(calls, lat);
const clientCounters = counters ? readCounters() : undefined;
verbusProfileMarkEnd();
const end = await mark("end");
const serverCounters = counters ? JSON.parse(new TextDecoder().decode(end.response)) : undefined;
if (ARGS.includes("--quit")) await client.call(SERVICE, "Quit", new Uint8Array(0)).catch(() => {});
await client.close();

lat.sort();
/** The q-quantile latency in µs (lat holds ms), to 0.01 µs. */
const pick = (q: number) => Math.round(lat[Math.min(calls - 1, Math.floor(q * calls))] * 1e5) / 100;
console.log(JSON.stringify({
  runtime: RUNTIME,
  path: wantPath,
  fabric: wantFabric,
  calls,
  window,
  bytes,
  seconds: Math.round(secs * 1000) / 1000,
  calls_per_s: Math.round(calls / secs),
  p50_us: pick(0.5),
  p99_us: pick(0.99),
  ...(wrongPath ? { wrong_path: wrongPath } : {}),
  ...(counters ? { counters: { client: clientCounters, server: serverCounters } } : {}),
}));
exit(wrongPath ? 1 : 0);
