/**
 * The CPU services the transport layer offers the layers above: giving the core away while
 * busy-polling (`sched_yield` through libc), so on an oversubscribed host the side that waits lets
 * the side it waits for run; and what the host's CPUs look like — how many cores this process may
 * use, and how many tasks are runnable right now (`/proc/loadavg`), from which the progress loop
 * sizes its spin (`rpc/session/spin_policy.ts`). Control path to build; the returned functions
 * are cheap enough for the data path (`runnableTasks` reads a file: call it rarely, ~10 Hz).
 * @module
 */
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { loadLibc } from "../ffi/libc.ts";

/** `sched_yield` through libc, or a no-op where libc cannot be loaded. Never throws. */
export async function cpuYielder(): Promise<() => void> {
  try {
    const libc = await loadLibc();
    return () => void libc.symbols.sched_yield();
  } catch {
    return () => {};
  }
}

/** Cores this process may run on (at least 1). */
export function cpuCores(): number {
  try {
    return Math.max(1, availableParallelism());
  } catch {
    // deno-lint-ignore no-explicit-any
    return Math.max(1, (globalThis as any).navigator?.hardwareConcurrency ?? 1);
  }
}

const RUNNABLE_RE = /^\S+ \S+ \S+ (\d+)\//;

/**
 * Tasks runnable on the host right now, this one included (the 4th field of `/proc/loadavg`), or
 * -1 where that is unknown. Never throws.
 */
export function runnableTasks(): number {
  try {
    const m = RUNNABLE_RE.exec(readFileSync("/proc/loadavg", "latin1"));
    return m ? Number(m[1]) : -1;
  } catch {
    return -1;
  }
}
