/**
 * Command-line arguments, environment, exit and signals on both runtimes, shared by the bench harnesses (they
 * run as scripts, not as part of the library). Any thread.
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

/** The numeric value after `--name`, or `fallback`; throws on a non-number. */
export function numArg(name: string, fallback: number): number {
  const v = Number(arg(name, String(fallback)));
  if (!Number.isFinite(v)) throw new Error(`--${name} expects a number`);
  return v;
}

/** `--runtime deno|bun|both` (default both) as the list of runtimes; throws naming a wrong value. */
export function runtimesArg(): ("deno" | "bun")[] {
  const which = arg("runtime", "both");
  if (which === "both") return ["deno", "bun"];
  if (which === "deno" || which === "bun") return [which];
  throw new Error(`--runtime expects deno, bun or both, not "${which}"`);
}

/** Reads an environment variable on either runtime. */
export function env(name: string): string | undefined {
  return g.Deno ? g.Deno.env.get(name) : g.process.env[name];
}

/** Exits the process on either runtime (so a `--cpu-prof` run writes its profile). */
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

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise<void>((r) => setTimeout(r, ms));

/** `p`'s value, or "timeout" when it has not settled within `ms`. */
export async function within<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  let t: ReturnType<typeof setTimeout> | undefined;
  const r = await Promise.race([
    p,
    new Promise<"timeout">((res) => (t = setTimeout(() => res("timeout"), ms))),
  ]);
  clearTimeout(t);
  return r;
}
