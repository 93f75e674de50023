/**
 * The one CPU service the transport layer offers the layers above: giving the core away while
 * busy-polling (`sched_yield` through libc), so on an oversubscribed host the side that waits
 * lets the side it waits for run. Control path to build; the returned function is data path.
 * @module
 */
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
