/**
 * The server role of `brpc_rdma_ab.ts` for any checkout: `brpc_ab_serve.ts --root DIR --serve`
 * counts DIR's native calls (`ffi_counts.ts`), then runs DIR's own `bench/vm/brpc_bench.ts`
 * server role (it reads `--serve` from the arguments). On SIGUSR2 it writes its counts, its
 * engine's loop counters (when DIR has an engine) and a sequence number to
 * `countsFile(pid)`, so the client reads the server's work per call before and after a flight.
 * @module
 */
import process from "node:process";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import { countsFile, instrument } from "./ffi_counts.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const args: string[] = RUNTIME === "deno" ? g.Deno.args : g.process.argv.slice(2);
const root = resolve(args[args.indexOf("--root") + 1]);
const counts = await instrument(root);

/** This checkout's engine, if it has one at either path it has lived at. */
async function engineOf(): Promise<{ loopCounters: Record<string, number> } | null> {
  for (const p of ["rpc/session/engine/engine.ts", "rpc/session/engine.ts"]) {
    try {
      const m = await import(join(root, p));
      return await m.ProgressEngine.forThread();
    } catch { /* not at this path */ }
  }
  return null;
}

let seq = 0;
process.on("SIGUSR2", () => {
  void engineOf().then((e) => {
    writeFileSync(
      countsFile(process.pid),
      JSON.stringify({ seq: ++seq, counts, loop: e?.loopCounters ?? null }),
    );
  });
});
await import(join(root, "bench/vm/brpc_bench.ts"));
