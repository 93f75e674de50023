/**
 * Shared bits of the scale benchmark's server and client: arguments on both runtimes, the verbus
 * module they load (this checkout's `mod.ts`, or `$VERBUS_ROOT/mod.ts` — so one harness can measure
 * another checkout through the same public API), the small per-session region, and the process
 * figures read from `/proc/self`.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";

import { env } from "../common/args.ts";
export { arg, ARGS, exit, numArg, onSignal } from "../common/args.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** The service the scale server registers: `Echo` (bytes back) and `Stats` (process figures). */
export const SERVICE = "bench.Scale";

/**
 * The region each session gets: small, so 10,000 sessions fit in memory (about 0.3 MiB on the
 * client side and 0.6 MiB on the server side per session). The server uses it as its maximum
 * region and the client proposes the same.
 */
export const SMALL_REGION = {
  slots: 64,
  slotSize: 4096,
  bulkSize: 65536,
  objectSlabs: 4,
  objectSlabSize: 65536,
  stagingSize: 65536,
} as const;

/**
 * The public API surface the scale scripts use (a subset of `mod.ts`), typed loosely on purpose:
 * `VERBUS_ROOT` may name another version of verbus.
 */
export interface Verbus {
  // deno-lint-ignore no-explicit-any
  serve(options: any): Promise<any>;
  // deno-lint-ignore no-explicit-any
  connect(address: { host: string; port: number }, options?: any): Promise<any>;
  RUNTIME: string;
}

/** Loads the verbus public API: `$VERBUS_ROOT/mod.ts`, else this checkout's. */
export async function loadVerbus(): Promise<Verbus> {
  const root = env("VERBUS_ROOT");
  const url = root
    ? new URL(`file://${String(root).replace(/\/$/, "")}/mod.ts`).href
    : new URL("../../mod.ts", import.meta.url).href;
  return await import(url) as Verbus;
}

/** What the server reports about itself (`bench.Scale/Stats`). */
export interface ProcStats {
  /** Resident set size, KiB (VmRSS). */
  rssKiB: number;
  /** Threads of the process. */
  threads: number;
  /** Open file descriptors. */
  fds: number;
  /** User + system CPU time of the whole process, ms. */
  cpuMs: number;
  /** Wall clock (`performance.now()`), ms, when sampled. */
  atMs: number;
  /** JS heap used, MiB (`process.memoryUsage().heapUsed`; absent where that is missing). */
  heapMiB?: number;
  /**
   * Memory the JS engine charges for ArrayBuffers, MiB (`process.memoryUsage().external`): on
   * Deno, past about 8 GB V8 garbage-collects without pause (see transport/shm/map_arena.ts).
   */
  externalMiB?: number;
}

/** CPU time (user + system, all threads) in ms: `process.cpuUsage()` (µs), else `/proc/self/stat`. */
export function cpuMs(): number {
  const p = g.process;
  if (p && typeof p.cpuUsage === "function") {
    try {
      const u = p.cpuUsage();
      return (u.user + u.system) / 1000;
    } catch { /* fall through */ }
  }
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // f[0] is field 3 (state)
  return (Number(f[11]) + Number(f[12])) * 10; // utime, stime in ticks (CLK_TCK 100)
}

/** The JS engine's heap and external memory, MiB (absent where `process.memoryUsage` is missing). */
function jsMemory(): { heapMiB?: number; externalMiB?: number } {
  const p = g.process;
  if (!p || typeof p.memoryUsage !== "function") return {};
  const m = p.memoryUsage();
  const mib = (x: number) => Math.round(x / 1048576);
  return { heapMiB: mib(m.heapUsed), externalMiB: mib(m.external) };
}

/**
 * This process's CPU time only (what the idle windows sample: no fd listing, no heap walk, so the
 * probe itself allocates next to nothing in the server it measures).
 */
export function cpuStats(): Pick<ProcStats, "cpuMs" | "atMs"> {
  return { cpuMs: cpuMs(), atMs: performance.now() };
}

/** Samples this process: RSS, threads, fds, CPU time. Reads `/proc/self`. */
export function procStats(): ProcStats {
  const status = readFileSync("/proc/self/status", "utf8");
  const field = (name: string) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+)`, "m"))?.[1]);
  return {
    rssKiB: field("VmRSS"),
    threads: field("Threads"),
    fds: readdirSync("/proc/self/fd").length - 1, // minus the one readdir itself holds
    cpuMs: cpuMs(),
    atMs: performance.now(),
    ...jsMemory(),
  };
}

/** The p-th percentile (0–100) of `sorted` (ascending). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Prints one JSON line to stdout (the harness reads every line). */
export function emit(o: Record<string, unknown>): void {
  console.log(JSON.stringify(o));
}

/**
 * The JS engine's heap, for the idle-CPU profile (`idle_profile.ts`): on Bun `bun:jsc`'s
 * `heapStats()` (heap bytes, extra memory JSC charges for ArrayBuffers, object count, the most
 * common object types, all of them); on Deno `node:v8`'s heap statistics. Returns a sampler (loaded once;
 * `{}` where neither exists).
 */
export async function engineHeap(): Promise<() => Record<string, unknown>> {
  const mib = (x: number) => Math.round(x / 1048576);
  if (g.Bun) {
    const spec = "bun:jsc"; // a variable: Deno's type check does not know the module
    const jsc = await import(spec);
    return () => {
      const h = jsc.heapStats();
      const types = Object.entries(h.objectTypeCounts as Record<string, number>)
        .sort((a, b) => b[1] - a[1]);
      return {
        heapMiB: mib(h.heapSize),
        capacityMiB: mib(h.heapCapacity),
        extraMiB: mib(h.extraMemorySize),
        // The JS heap proper (cells), bytes: what changes when JS allocates.
        cellBytes: h.heapSize - h.extraMemorySize,
        capacityBytes: h.heapCapacity,
        objects: h.objectCount,
        protectedObjects: h.protectedObjectCount,
        types: Object.fromEntries(types),
      };
    };
  }
  try {
    const v8 = await import("node:v8");
    return () => {
      const h = v8.getHeapStatistics();
      return {
        heapMiB: mib(h.used_heap_size),
        capacityMiB: mib(h.total_heap_size),
        extraMiB: mib(h.external_memory),
      };
    };
  } catch {
    return () => ({});
  }
}
