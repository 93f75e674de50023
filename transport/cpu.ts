/**
 * The CPU services the transport layer offers the layers above: giving the core away while
 * busy-polling (`sched_yield` through libc), so on an oversubscribed host the side that waits lets
 * the side it waits for run; and what the host's CPUs look like — how many cores this process may
 * use, and how many tasks are runnable right now (`/proc/loadavg`), from which the progress loop
 * sizes its spin (`rpc/session/engine/spin_policy.ts`). Control path to build; the returned functions
 * are cheap enough for the data path (`runnableTasks` reads a file: call it rarely, ~10 Hz).
 * @module
 */
import { closeSync, openSync, readSync } from "node:fs";
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

/** `/proc/loadavg`, opened once (-2: not yet, -1: unavailable), and a buffer for its text. */
let loadavgFd = -2;
const loadavgText = new Uint8Array(128);
const SPACE = 0x20, SLASH = 0x2f, ZERO = 0x30;

/**
 * Tasks runnable on the host right now, this one included (the 4th field of `/proc/loadavg`,
 * "0.52 0.58 0.59 3/412 12345"), or -1 where that is unknown. One `pread` of a file kept open
 * and a parse of its bytes: no open/close and no string per call (it ran ~10 times a second in
 * every spinning process: ~1 % of a vCPU in the Soft-RoCE VM as `readFileSync`). Never throws.
 */
export function runnableTasks(): number {
  try {
    if (loadavgFd === -2) loadavgFd = openSync("/proc/loadavg", "r");
    if (loadavgFd < 0) return -1;
    const n = readSync(loadavgFd, loadavgText, 0, loadavgText.length, 0);
    return parseRunnable(loadavgText, n);
  } catch {
    if (loadavgFd >= 0) {
      try {
        closeSync(loadavgFd);
      } catch { /* gone already */ }
    }
    loadavgFd = -1;
    return -1;
  }
}

/** The 4th field's numerator of a `/proc/loadavg` text (its first `n` bytes), or -1. */
export function parseRunnable(text: Uint8Array, n: number): number {
  let i = 0;
  for (let spaces = 0; spaces < 3; i++) {
    if (i >= n) return -1;
    if (text[i] === SPACE) spaces++;
  }
  let v = 0, digits = 0;
  for (; i < n && text[i] !== SLASH; i++, digits++) {
    const d = text[i] - ZERO;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return digits > 0 && i < n ? v : -1;
}
