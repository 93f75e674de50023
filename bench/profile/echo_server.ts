/**
 * The profiled server: verbus `serve()` with its own trivial echo service (`bench.ProfileEcho`),
 * TCP plus the shm fabric, on either runtime.
 *
 *   deno run -A bench/profile/echo_server.ts [--port 0] [--fabrics shm]
 *   bun bench/profile/echo_server.ts [--port 0]
 *
 * Methods: `Echo` (answers the request bytes), `Mark` (request "start" or "end": spins the phase
 * marker of the same name so `run.ts` can cut the profile to the measured calls; answers "ok" —
 * with `--counters`, "start" instruments the server's objects (`counters.ts`) and "end" answers
 * the counters as JSON),
 * `Stats` (the server's progress-engine loop counters as JSON),
 * `Quit` (answers, then exits 0 — an exit the CPU profiler sees, so it writes its profile).
 * Exits 0 on SIGTERM/SIGINT too. Prints one JSON line `{"port":N,"runtime":...}` once listening.
 * @module
 */
import {
  arg,
  ARGS,
  exit,
  loadVerbus,
  onSignal,
  SERVICE,
  verbusProfileMarkEnd,
  verbusProfileMarkStart,
} from "./common.ts";
import { engineUrl, progressArgs } from "./common.ts";
import { instrument, readCounters, resetCounters } from "./counters.ts";
import { VM_BENCH_REGION } from "../vm/vm_common.ts";

const { serve, RUNTIME } = await loadVerbus();
const OK = new TextEncoder().encode("ok");
const fabrics = arg("fabrics", "shm").split(",").filter((f) => f.length > 0);
const counters = ARGS.includes("--counters");
let calls = 0;

function quit(): void {
  console.log(JSON.stringify({ event: "quit", echoCalls: calls }));
  exit(0);
}

const server = await serve({
  port: Number(arg("port", "0")),
  services: {
    [SERVICE]: {
      Echo(request: Uint8Array): Uint8Array {
        calls++;
        return request;
      },
      Mark(request: Uint8Array): Uint8Array {
        if (request[0] === 0x73) { // "start"
          verbusProfileMarkStart();
          if (counters) {
            instrument([server]); // now: the client's session exists
            resetCounters();
          }
          return OK;
        }
        verbusProfileMarkEnd();
        return counters ? new TextEncoder().encode(JSON.stringify(readCounters())) : OK;
      },
      /** The server's progress-engine loop counters as JSON (`stalls.ts`). */
      async Stats(): Promise<Uint8Array> {
        const { ProgressEngine } = await import(engineUrl());
        const engine = await ProgressEngine.forThread();
        return new TextEncoder().encode(JSON.stringify(engine.loopCounters));
      },
      Quit(): Uint8Array {
        setTimeout(quit, 50);
        return OK;
      },
    },
  },
  fabric: fabrics.length > 0
    ? {
      fabrics,
      progress: progressArgs(),
      ...(fabrics.includes("verbs") // the Soft-RoCE VM: rxe1
        ? {
          region: VM_BENCH_REGION,
          providerOptions: {
            verbs: {
              addr: "10.77.0.2",
              port: 0,
              mode: arg("mode", "event"),
              // --log-bytes 0: no write log (every small write its own work request; A/B runs)
              ...(arg("log-bytes", "") ? { logBytes: Number(arg("log-bytes", "")) } : {}),
            },
          },
        }
        : {}),
      ...(arg("batch-budget", "") ? { batchBudget: Number(arg("batch-budget", "")) } : {}),
    }
    : false,
  logger: { warn: (m: string) => console.error(`profile server: ${m}`), info: () => {} },
});
onSignal(quit);
console.log(JSON.stringify({ port: server.port, runtime: RUNTIME }));
