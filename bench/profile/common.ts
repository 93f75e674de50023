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

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** The command-line arguments after the script, on Deno or Bun. */
export const ARGS: string[] = g.Deno ? g.Deno.args : g.process.argv.slice(2);

/** The value after `--name`, or `fallback`. */
export function arg(name: string, fallback: string): string {
  const i = ARGS.indexOf(`--${name}`);
  return i >= 0 && i + 1 < ARGS.length ? ARGS[i + 1] : fallback;
}

/** The numeric value after `--name`, or `fallback`. */
export function numArg(name: string, fallback: number): number {
  const v = Number(arg(name, String(fallback)));
  if (!Number.isFinite(v)) throw new Error(`--${name} expects a number`);
  return v;
}

/** Reads an environment variable on either runtime. */
export function env(name: string): string | undefined {
  return g.Deno ? g.Deno.env.get(name) : g.process.env[name];
}

/** Exits the process (so `--cpu-prof` writes its profile). */
export function exit(code: number): never {
  if (g.Deno) g.Deno.exit(code);
  g.process.exit(code);
  throw new Error("unreachable");
}

/** Calls `fn` on SIGTERM and SIGINT. */
export function onSignal(fn: () => void): void {
  for (const s of ["SIGTERM", "SIGINT"]) {
    if (g.Deno) g.Deno.addSignalListener(s, fn);
    else g.process.on(s, fn);
  }
}

/** Where verbus's `mod.ts` is: `$VERBUS_ROOT/mod.ts`, else this checkout's. */
export function modUrl(): string {
  const root = env("VERBUS_ROOT");
  return root
    ? new URL(`file://${root.replace(/\/$/, "")}/mod.ts`).href
    : new URL("../../mod.ts", import.meta.url).href;
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
