/**
 * A timer that never keeps the process alive (Deno: `Deno.unrefTimer`; Bun and Node: `unref()`):
 * for sweeps, probes and summaries that must not hold a finished program open.
 *
 * Threading: the calling JS thread.
 * @module
 */

/** `setTimeout(fn, ms)`, unref'd on either runtime. */
export function unrefTimeout(fn: () => void, ms: number): ReturnType<typeof setTimeout> {
  const t = setTimeout(fn, ms);
  // deno-lint-ignore no-explicit-any
  const D = (globalThis as any).Deno;
  if (typeof t === "number") D?.unrefTimer?.(t);
  // deno-lint-ignore no-explicit-any
  else (t as any)?.unref?.();
  return t;
}
