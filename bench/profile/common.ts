/**
 * Shared bits of the profile echo server and client: argument parsing on both runtimes, the
 * verbus module they load (this checkout, or the one named by `VERBUS_ROOT` — how `run.ts --root`
 * profiles another checkout without copying anything), and the phase markers.
 *
 * Phase markers: `markStart()` / `markEnd()` busy-spin for a few ms inside functions with unique
 * names, so the sampling profiler sees them; `run.ts` keeps only the samples between the last
 * `verbusProfileMarkStart` sample and the first `verbusProfileMarkEnd` sample, i.e. the measured
 * calls without startup, handshake and warm-up.
 * @module
 */

import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import process from "node:process";
import { arg, env } from "../common/args.ts";
import { lastJson } from "../common/child_json.ts";
export { arg, ARGS, env, exit, numArg, onSignal, runtimesArg } from "../common/args.ts";

const PROFILE_DIR = resolve(new URL(".", import.meta.url).pathname);

/**
 * Runs this checkout's `one_thread.ts` on `rt` (this checkout's runtime binary) for the verbus
 * at `root` (`VERBUS_ROOT`), with `args` after the script and `runtimeFlags` before it (a
 * profiler's); returns its JSON line. Throws naming the exit when it fails.
 */
export function runOneThread(
  rt: "deno" | "bun",
  root: string,
  args: string[],
  runtimeFlags: string[] = [],
): Record<string, unknown> {
  const bin = resolve(PROFILE_DIR, "../../node_modules/.bin", rt);
  const script = resolve(PROFILE_DIR, "one_thread.ts");
  const argv = rt === "deno"
    ? ["run", "-A", ...runtimeFlags, script, ...args]
    : [...runtimeFlags, script, ...args];
  const p = spawnSync(bin, argv, {
    env: { ...process.env, VERBUS_ROOT: root },
    encoding: "utf8",
    timeout: 600_000,
  });
  const r = lastJson([bin, argv], p.stdout ?? "", `${root}: exit ${p.status}: ${p.stderr}`);
  if (p.status !== 0) throw new Error(`${rt} ${root}: exit ${p.status}: ${JSON.stringify(r)}`);
  return r;
}

/** Where verbus's `mod.ts` is: `$VERBUS_ROOT/mod.ts`, else this checkout's. */
export function modUrl(): string {
  const root = env("VERBUS_ROOT");
  return root
    ? new URL(`file://${root.replace(/\/$/, "")}/mod.ts`).href
    : new URL("../../mod.ts", import.meta.url).href;
}

/** Progress-loop options from `--spin-us` / `--idle-after-ms` (unset: the defaults). */
export function progressArgs(): { spinUs?: number; idleAfterMs?: number } {
  const o: { spinUs?: number; idleAfterMs?: number } = {};
  const spin = arg("spin-us", ""), idle = arg("idle-after-ms", "");
  if (spin !== "") o.spinUs = Number(spin);
  if (idle !== "") o.idleAfterMs = Number(idle);
  return o;
}

/** Where the progress engine of that same checkout is (`stalls.ts` reads its counters). */
export function engineUrl(): string {
  return modUrl().replace(/mod\.ts$/, "rpc/session/engine/engine.ts");
}

/**
 * The public API surface the profile scripts use (a subset of `mod.ts`), typed loosely on purpose:
 * a type-only import of `mod.ts` would make `deno check bench/profile` check all of verbus, and
 * `--root` may point at another version.
 */
export interface Verbus {
  // deno-lint-ignore no-explicit-any
  serve(options: any): Promise<any>;
  // deno-lint-ignore no-explicit-any
  connect(address: { host: string; port: number }, options?: any): Promise<any>;
  RUNTIME: string;
}

/** Loads the verbus public API (see {@link modUrl}). */
export async function loadVerbus(): Promise<Verbus> {
  return await import(modUrl()) as Verbus;
}

/** The service the profile server registers and the client calls. */
export const SERVICE = "bench.ProfileEcho";

const MARK_MS = 30;

// The markers spin in their own body, not in a helper: JavaScriptCore (Bun) does proper tail
// calls, so `return spin()` would drop the marker's frame from the sampled stacks.

/** Start-of-measurement marker (its name is looked up in the profile; do not rename). */
export function verbusProfileMarkStart(): number {
  let x = 0;
  const end = performance.now() + MARK_MS;
  while (performance.now() < end) x += Math.sqrt(x + 1);
  return x + 1;
}

/** End-of-measurement marker (its name is looked up in the profile; do not rename). */
export function verbusProfileMarkEnd(): number {
  let x = 0;
  const end = performance.now() + MARK_MS;
  while (performance.now() < end) x += Math.sqrt(x + 1);
  return x + 1;
}
