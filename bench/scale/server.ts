/**
 * The scale benchmark's server: verbus `serve()` with a tiny service of its own (`bench.Scale`),
 * TCP plus one fast fabric (shm by default), the small per-session region of `common.ts`.
 *
 *   deno run -A bench/scale/server.ts [--port 0] [--fabric shm|verbs] [--rdma-addr A]
 *   bun bench/scale/server.ts [--port 0] [--fabric shm]
 *
 * Methods: `Echo` (answers the request bytes), `Stats` (answers JSON {@link ProcStats} of this
 * process: VmRSS, Threads, open fds, CPU time, plus `connections`, the TCP connections open now;
 * with a non-empty request only the CPU time and the engine's counters), `Heap` (the JS engine's
 * heap, `engineHeap` of common.ts).
 * Prints one JSON line `{"port":N,"runtime":...,"pid":...}` once listening; exits 0 on
 * SIGTERM/SIGINT.
 * @module
 */
import {
  arg,
  cpuStats,
  emit,
  engineHeap,
  exit,
  loadVerbus,
  numArg,
  onSignal,
  procStats,
  SERVICE,
  SMALL_REGION,
} from "./common.ts";

const { serve, RUNTIME } = await loadVerbus();
const heap = await engineHeap();
const fabric = arg("fabric", "shm");
const rdmaAddr = arg("rdma-addr", "");
const enc = new TextEncoder();
/** The engine's turns and idle sleeps: an idle server should take ~1 turn per sleep. */
const loop = () => {
  try {
    return server.fabric?.loopCounters ?? null;
  } catch {
    return null;
  }
};

const server = await serve({
  port: numArg("port", 0),
  services: {
    [SERVICE]: {
      Echo: (request: Uint8Array): Uint8Array => request,
      // Asked with a non-empty request: the CPU time and the engine's counters only (idle windows).
      Stats: (request: Uint8Array): Uint8Array => {
        if (request.length > 0) return enc.encode(JSON.stringify({ ...cpuStats(), loop: loop() }));
        const connections = (() => {
          try {
            return server.stats().connections as number;
          } catch {
            return -1;
          }
        })();
        return enc.encode(JSON.stringify({ ...procStats(), connections, loop: loop() }));
      },
      // The JS heap (walks every object on Bun: costs the server CPU; idle_profile.ts only).
      Heap: (): Uint8Array => enc.encode(JSON.stringify(heap())),
    },
  },
  fabric: {
    fabrics: [fabric],
    region: SMALL_REGION,
    ...(fabric === "verbs" && rdmaAddr ? { providerOptions: { verbs: { addr: rdmaAddr } } } : {}),
  },
  logger: { warn: (m: string) => console.error(`scale server: ${m}`), info: () => {} },
});
onSignal(() => exit(0));
emit({
  port: server.port,
  runtime: RUNTIME,
  pid: (globalThis as { Deno?: { pid: number } }).Deno?.pid ??
    (globalThis as unknown as { process: { pid: number } }).process.pid,
});
