/**
 * Which JavaScript runtime is executing verbus. Pure detection, no imports of runtime modules.
 * @module
 */

/** The runtimes verbus supports. */
export type RuntimeName = "deno" | "bun";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** The runtime this process runs on, or `"unsupported"`. */
export const RUNTIME: RuntimeName | "unsupported" = typeof g.Bun !== "undefined"
  ? "bun"
  : typeof g.Deno !== "undefined"
  ? "deno"
  : "unsupported";

/** The version string of the running runtime, e.g. `"2.9.6"`. */
export function runtimeVersion(): string {
  if (RUNTIME === "bun") return String(g.Bun.version);
  if (RUNTIME === "deno") return String(g.Deno.version.deno);
  return "unknown";
}

/** Reads an environment variable on either runtime (undefined when unset or not permitted). */
export function getEnv(name: string): string | undefined {
  try {
    if (RUNTIME === "deno") return g.Deno.env.get(name) ?? undefined;
    return g.process?.env?.[name] ?? undefined;
  } catch {
    return undefined;
  }
}
