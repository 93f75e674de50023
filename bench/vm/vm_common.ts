/**
 * Pieces the VM benchmarks share: the session region they use and how a benchmark starts its
 * server role (the same script with `--serve`, on the same runtime) and learns its port.
 * @module
 */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** The repository root. */
export const ROOT = resolve(new URL("../..", import.meta.url).pathname);

/** The region of the VM benchmarks' verbs sessions. */
export const VM_BENCH_REGION = {
  slots: 64,
  slotSize: 8192,
  bulkSize: 1 << 20,
  objectSlabs: 16,
  objectSlabSize: 128 << 10,
  stagingSize: 4 << 20,
};

/**
 * Spawns `script` (repo-relative) with `args` on this runtime and resolves when it prints
 * `listening on PORT` (its stderr is passed through); rejects after 120 s.
 */
export function spawnServerRole(
  script: string,
  args: string[],
): Promise<{ port: number; pid: number; startMs: number; kill(): void }> {
  const bin: string = RUNTIME === "deno" ? g.Deno.execPath() : g.process.execPath;
  const path = join(ROOT, script);
  const argv = RUNTIME === "deno"
    ? ["run", "-A", "--config", join(ROOT, "deno.json"), path]
    : [path];
  const t0 = performance.now();
  const p = spawn(bin, [...argv, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  return new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`server did not start: ${out}`)), 120_000);
    p.stdout!.on("data", (b: Uint8Array) => {
      out += new TextDecoder().decode(b);
      const m = /listening on (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        res({
          port: Number(m[1]),
          pid: p.pid!,
          startMs: performance.now() - t0,
          kill: () => p.kill("SIGKILL"),
        });
      }
    });
    p.stderr!.on("data", (b: Uint8Array) => g.process.stderr.write(b));
  });
}
