/**
 * Where the simulated liburma of each named ABI is built (c-helpers/urma_sim/Makefile): the
 * default ABI 25.12 in build/urma_sim/, the others in build/urma_sim/<abi>/. The URMA suites
 * run on `VERBUS_TEST_URMA_ABI` (default 25.12; scripts/test.sh runs a subset on 25.12-B081).
 * @module
 */
import { fileURLToPath } from "node:url";
import { getEnv, RUNTIME } from "../../ffi/runtime.ts";

/** The named ABI this run of the URMA suites exercises. */
export const SIM_ABI: string = getEnv("VERBUS_TEST_URMA_ABI") ?? "25.12";

/** The directory of the simulator built for `abi`. */
export function simDirFor(abi: string): string {
  const sub = abi === "25.12" ? "" : `${abi}/`;
  return fileURLToPath(new URL(`../../build/urma_sim/${sub}`, import.meta.url));
}

/** build/urma_sim[/<abi>]/liburma.so.0 for `abi`. */
export function simPathFor(abi: string): string {
  return simDirFor(abi) + "liburma.so.0";
}

/** Sets (or, with undefined, deletes) an environment variable of this process (tests only). */
export function setEnv(name: string, value: string | undefined): void {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  if (RUNTIME === "deno") {
    value === undefined ? g.Deno.env.delete(name) : g.Deno.env.set(name, value);
  } else if (value === undefined) delete g.process.env[name];
  else g.process.env[name] = value;
}

/** An environment variable of this process, as set (undefined when unset). */
export function getEnvRaw(name: string): string | undefined {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  return RUNTIME === "deno" ? g.Deno.env.get(name) : g.process.env[name];
}
