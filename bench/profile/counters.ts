/**
 * The counters mode of the profile (`run.ts --counters`): exact call counts and self time per
 * method, for when sampling is too coarse for µs-scale calls. No change to verbus is needed:
 * {@link instrument} walks the objects reachable from the public API objects (the `Client`, the
 * `Server`) through their public properties and getters (`client.session`, `session.endpoint`,
 * `server.fabric`, `fabric.sessions`, `server.dispatcher`, …) and wraps every method of every
 * user-defined class prototype it meets with a timer (`Bun.nanoseconds()` on Bun,
 * `performance.now()` on Deno). Private methods (`#take`) cannot be wrapped: their time is in the
 * public method that calls them. Async methods are timed up to their first `await` (the
 * synchronous part, which is where the per-call work is).
 *
 * Self time = a wrapper's elapsed time minus that of the wrapped methods it called; the timer
 * calls themselves cost ~20–60 ns per method call, so compare counts and relative sizes, not the
 * absolute calls/s of this mode.
 * @module
 */

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** The clock: ns, as precise as the runtime gives. */
export const nowNs: () => number = g.Bun
  ? () => g.Bun.nanoseconds()
  : () => performance.now() * 1e6;

/** One wrapped method's totals. */
export interface CounterRow {
  /** `Class.method` (`get x` for getters is not wrapped). */
  name: string;
  count: number;
  /** Self time, ns. */
  selfNs: number;
}

const WRAPPED = Symbol("verbusProfileWrapped");
const rows = new Map<string, CounterRow>();
const stack: number[] = [];

function isUserClass(ctor: unknown): boolean {
  if (typeof ctor !== "function") return false;
  try {
    return Function.prototype.toString.call(ctor).startsWith("class ");
  } catch {
    return false;
  }
}

function wrap(proto: Record<string | symbol, unknown>, className: string): void {
  if (Object.prototype.hasOwnProperty.call(proto, WRAPPED)) return;
  Object.defineProperty(proto, WRAPPED, { value: true });
  for (const key of Object.getOwnPropertyNames(proto)) {
    if (key === "constructor") continue;
    const d = Object.getOwnPropertyDescriptor(proto, key);
    if (!d || typeof d.value !== "function" || !d.writable) continue;
    const fn = d.value as (...a: unknown[]) => unknown;
    const row: CounterRow = { name: `${className}.${key}`, count: 0, selfNs: 0 };
    rows.set(row.name, row);
    const wrapped = function (this: unknown, ...args: unknown[]): unknown {
      const t0 = nowNs();
      stack.push(0);
      try {
        return fn.apply(this, args);
      } finally {
        const el = nowNs() - t0, child = stack.pop()!;
        row.count++;
        row.selfNs += el - child;
        if (stack.length > 0) stack[stack.length - 1] += el;
      }
    };
    Object.defineProperty(wrapped, "name", { value: key });
    proto[key] = wrapped;
  }
}

function children(o: object): unknown[] {
  const out: unknown[] = [];
  if (o instanceof Set || o instanceof Map) out.push(...o.values());
  if (Array.isArray(o)) return o.slice(0, 64);
  for (const k of Object.keys(o)) {
    try {
      out.push((o as Record<string, unknown>)[k]);
    } catch { /* a throwing property: skip */ }
  }
  for (
    let p = Object.getPrototypeOf(o);
    p && isUserClass(p.constructor);
    p = Object.getPrototypeOf(p)
  ) {
    for (const k of Object.getOwnPropertyNames(p)) {
      const d = Object.getOwnPropertyDescriptor(p, k);
      if (!d?.get) continue;
      try {
        out.push(d.get.call(o));
      } catch { /* a throwing getter: skip */ }
    }
  }
  return out;
}

/**
 * Wraps the methods of every user-defined class reachable from `roots` (depth ≤ `maxDepth`).
 * Idempotent per prototype; call it again to pick up objects created since (new sessions).
 */
export function instrument(roots: object[], maxDepth = 4): void {
  const seen = new Set<object>();
  const walk = (o: unknown, depth: number) => {
    if (o === null || typeof o !== "object" || seen.has(o) || depth > maxDepth) return;
    if (ArrayBuffer.isView(o) || o instanceof ArrayBuffer || o instanceof Promise) return;
    seen.add(o);
    for (
      let p = Object.getPrototypeOf(o);
      p && isUserClass(p.constructor);
      p = Object.getPrototypeOf(p)
    ) {
      wrap(p, p.constructor.name);
    }
    for (const c of children(o)) walk(c, depth + 1);
  };
  for (const r of roots) walk(r, 0);
}

/** Zeroes every counter (call at the start of the measured phase). */
export function resetCounters(): void {
  for (const r of rows.values()) {
    r.count = 0;
    r.selfNs = 0;
  }
}

/** The counters that counted something, largest self time first. */
export function readCounters(): CounterRow[] {
  return [...rows.values()].filter((r) => r.count > 0).sort((a, b) => b.selfNs - a.selfNs)
    .map((r) => ({ ...r, selfNs: Math.round(r.selfNs) }));
}
