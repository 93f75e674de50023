/**
 * How the test harness shows a value and says where two values differ. The verdict itself is
 * `isDeepStrictEqual` (node:util, the comparator behind node:assert's `deepStrictEqual`, present
 * and identical on Deno and Bun); this module only explains a verdict of "not equal" in words a
 * reader can act on: the path to the first difference and the two values found there.
 * Pure functions of their arguments; any thread may call them.
 * @module
 */
import { isDeepStrictEqual } from "node:util";

/** Longest rendering {@link show} returns; a failure message stays readable for a 1 MiB buffer. */
const MAX_SHOW = 400;
/** Elements of an array, Set or Map, and bytes of a buffer, shown before "…". */
const MAX_ITEMS = 16;
/** Nesting shown before an object is abbreviated to its class name. */
const MAX_DEPTH = 3;

function hex(bytes: Uint8Array): string {
  const head = Array.from(bytes.subarray(0, 32), (b) => b.toString(16).padStart(2, "0")).join("");
  return `${head}${bytes.length > 32 ? "…" : ""}`;
}

function className(v: object): string {
  const proto = Object.getPrototypeOf(v);
  if (proto === null) return "[Object: null prototype]";
  const ctor = proto.constructor;
  return typeof ctor === "function" && ctor.name ? ctor.name : "Object";
}

function keyText(k: string | symbol): string {
  if (typeof k === "symbol") return `[${String(k)}]`;
  return /^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k);
}

/** Own enumerable keys, symbols included: the keys deep strict equality compares. */
function ownKeys(v: object): (string | symbol)[] {
  return Reflect.ownKeys(v).filter((k) => Object.prototype.propertyIsEnumerable.call(v, k));
}

function items(list: string[], total: number): string {
  return list.join(", ") + (total > list.length ? `, …${total - list.length} more` : "");
}

function render(v: unknown, depth: number, seen: Set<object>): string {
  switch (typeof v) {
    case "bigint":
      return `${v}n`;
    case "number":
      return Object.is(v, -0) ? "-0" : String(v);
    case "string":
      return JSON.stringify(v.length > MAX_SHOW ? v.slice(0, MAX_SHOW) + "…" : v);
    case "undefined":
    case "boolean":
    case "symbol":
      return String(v);
    case "function":
      return `[Function ${v.name || "(anonymous)"}]`;
  }
  if (v === null) return "null";
  const o = v as object;
  if (seen.has(o)) return "[Circular]";
  const name = className(o);
  if (o instanceof Uint8Array) return `${name}(${o.length})[${hex(o)}]`;
  if (o instanceof ArrayBuffer || o instanceof SharedArrayBuffer) {
    return `${name}(${o.byteLength})[${hex(new Uint8Array(o))}]`;
  }
  if (o instanceof DataView) {
    return `${name}(${o.byteLength})[${hex(new Uint8Array(o.buffer, o.byteOffset, o.byteLength))}]`;
  }
  if (ArrayBuffer.isView(o)) {
    const a = o as unknown as ArrayLike<number | bigint>;
    const shown = Array.from(
      { length: Math.min(a.length, MAX_ITEMS) },
      (_, i) => render(a[i], 0, seen),
    );
    return `${name}(${a.length})[${items(shown, a.length)}]`;
  }
  if (o instanceof Date) return `${name}(${isNaN(o.getTime()) ? "Invalid" : o.toISOString()})`;
  if (o instanceof RegExp) return String(o);
  if (o instanceof Error) return `${name}(${JSON.stringify(o.message)})`;
  if (depth >= MAX_DEPTH) return `${name} {…}`;
  seen.add(o);
  try {
    if (o instanceof Set) {
      const shown = [...o].slice(0, MAX_ITEMS).map((x) => render(x, depth + 1, seen));
      return `${name}(${o.size}){${items(shown, o.size)}}`;
    }
    if (o instanceof Map) {
      const shown = [...o].slice(0, MAX_ITEMS).map(([k, x]) =>
        `${render(k, depth + 1, seen)} => ${render(x, depth + 1, seen)}`
      );
      return `${name}(${o.size}){${items(shown, o.size)}}`;
    }
    if (Array.isArray(o)) {
      const shown = Array.from(
        { length: Math.min(o.length, MAX_ITEMS) },
        (_, i) => i in o ? render(o[i], depth + 1, seen) : "<empty>",
      );
      return `[${items(shown, o.length)}]`;
    }
    const keys = ownKeys(o);
    const shown = keys.slice(0, MAX_ITEMS).map((k) =>
      `${keyText(k)}: ${render((o as Record<string | symbol, unknown>)[k], depth + 1, seen)}`
    );
    return `${name === "Object" ? "" : name + " "}{${items(shown, keys.length)}}`;
  } finally {
    seen.delete(o);
  }
}

/**
 * A bounded one-line rendering of `v` that keeps what JSON loses: bigint as `1n`, -0, NaN,
 * undefined, Uint8Array/Buffer as hex, other typed arrays, Dates, Sets, Maps and class names.
 */
export function show(v: unknown): string {
  const s = render(v, 0, new Set());
  return s.length > MAX_SHOW ? s.slice(0, MAX_SHOW) + "…" : s;
}

function childPath(path: string, k: string | symbol, isArray: boolean): string {
  if (isArray && typeof k === "string" && /^\d+$/.test(k)) return `${path}[${k}]`;
  const t = keyText(k);
  return t.startsWith("[") || t.startsWith('"')
    ? `${path}[${t.replace(/^\[|\]$/g, "")}]`
    : `${path}.${t}`;
}

/** An array index as `[3]` (a hole on one side and undefined on the other differ). */
function propName(k: string | symbol, isArray: boolean): string {
  return isArray && typeof k === "string" && /^\d+$/.test(k) ? `[${k}]` : keyText(k);
}

function at(path: string): string {
  return path === "" ? "" : `at ${path}: `;
}

function valuesDiffer(path: string, a: unknown, b: unknown): string {
  let why = "";
  if (typeof a !== typeof b) why = ` (${typeof b} vs ${typeof a})`;
  else if (Object.is(a, -0) !== Object.is(b, -0) && a === b) why = " (-0 and +0 differ)";
  return `${at(path)}expected ${show(b)}, got ${show(a)}${why}`;
}

/**
 * Elements of `from` (a Set's members or a Map's keys, so unique) with no deep-strict-equal
 * element in `other`. Primitives are looked up directly, so a large Set of numbers stays linear.
 */
function unmatched(from: Iterable<unknown>, other: Iterable<unknown>): unknown[] {
  const all = new Set(other);
  const objects = [...all].filter((y) => typeof y === "object" && y !== null);
  const out: unknown[] = [];
  for (const x of from) {
    const found = typeof x === "object" && x !== null
      ? all.has(x) || objects.some((y) => isDeepStrictEqual(x, y))
      : all.has(x);
    if (!found) out.push(x);
  }
  return out;
}

function setDifference(path: string, a: Set<unknown>, b: Set<unknown>): string {
  const missing = unmatched(b, a), extra = unmatched(a, b);
  const parts = [];
  if (missing.length) parts.push(`missing ${show(new Set(missing))}`);
  if (extra.length) parts.push(`unexpected ${show(new Set(extra))}`);
  return `${at(path)}Sets differ: ${parts.join(", ") || "in the elements' identity"}`;
}

function mapDifference(path: string, a: Map<unknown, unknown>, b: Map<unknown, unknown>): string {
  const missing = unmatched(b.keys(), a.keys()), extra = unmatched(a.keys(), b.keys());
  if (missing.length || extra.length) {
    const parts = [];
    if (missing.length) parts.push(`missing keys ${show(missing)}`);
    if (extra.length) parts.push(`unexpected keys ${show(extra)}`);
    return `${at(path)}Maps differ: ${parts.join(", ")}`;
  }
  for (const [k, v] of a) {
    const bk = b.has(k) ? k : [...b.keys()].find((x) => isDeepStrictEqual(x, k));
    const w = b.get(bk);
    if (!isDeepStrictEqual(v, w)) return difference(v, w, `${path}.get(${show(k)})`);
  }
  return `${at(path)}Maps differ in their entries`;
}

type Bytes = ArrayBufferView | ArrayBuffer | SharedArrayBuffer;

function viewDifference(path: string, a: Bytes, b: Bytes): string {
  const elems = (v: Bytes): ArrayLike<unknown> =>
    v instanceof ArrayBuffer || v instanceof SharedArrayBuffer
      ? new Uint8Array(v)
      : v instanceof DataView
      ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength)
      : v as unknown as ArrayLike<unknown>;
  const x = elems(a), y = elems(b);
  if (x.length !== y.length) {
    return `${at(path)}expected length ${y.length}, got ${x.length}: expected ${show(b)}, got ${
      show(a)
    }`;
  }
  for (let i = 0; i < x.length; i++) {
    if (!Object.is(x[i], y[i])) return difference(x[i], y[i], `${path}[${i}]`);
  }
  return objectDifference(path, a, b);
}

function objectDifference(path: string, a: object, b: object): string {
  const ka = ownKeys(a), kb = ownKeys(b);
  const isArray = Array.isArray(a);
  if (isArray && (a as unknown[]).length !== (b as unknown[]).length) {
    return `${at(path)}expected length ${(b as unknown[]).length}, got ${
      (a as unknown[]).length
    }: expected ${show(b)}, got ${show(a)}`;
  }
  const ra = a as Record<string | symbol, unknown>, rb = b as Record<string | symbol, unknown>;
  const inA = new Set(ka), inB = new Set(kb);
  for (const k of kb) {
    if (!inA.has(k)) {
      return `${at(path)}missing property ${propName(k, isArray)} (expected ${show(rb[k])})`;
    }
  }
  for (const k of ka) {
    if (!inB.has(k)) {
      return `${at(path)}unexpected property ${propName(k, isArray)}: ${show(ra[k])}`;
    }
  }
  for (const k of kb) {
    if (!isDeepStrictEqual(ra[k], rb[k])) {
      return difference(ra[k], rb[k], childPath(path, k, isArray));
    }
  }
  return `${at(path)}not deep-strict-equal: expected ${show(b)}, got ${show(a)}`;
}

/**
 * Where `actual` differs from `expected` (call it only when `isDeepStrictEqual` said they differ):
 * the path to the first difference and what was expected and found there, e.g.
 * `at .peers[2].since: expected Date(1970-…), got Date(…)`. Falls back to both renderings when
 * the difference is not one it can name (two Promises, two WeakMaps).
 */
export function difference(actual: unknown, expected: unknown, path = ""): string {
  const a = actual, b = expected;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") {
    return valuesDiffer(path, a, b);
  }
  const pa = Object.getPrototypeOf(a), pb = Object.getPrototypeOf(b);
  if (pa !== pb) {
    return `${at(path)}expected an instance of ${className(b)}, got an instance of ${
      className(a)
    }: expected ${show(b)}, got ${show(a)}`;
  }
  if (a instanceof Date && b instanceof Date && !Object.is(a.getTime(), b.getTime())) {
    return valuesDiffer(path, a, b);
  }
  if (a instanceof RegExp && b instanceof RegExp && String(a) !== String(b)) {
    return valuesDiffer(path, a, b);
  }
  if (a instanceof Error && b instanceof Error) {
    if (a.message !== b.message) return valuesDiffer(`${path}.message`, a.message, b.message);
    if (a.name !== b.name) return valuesDiffer(`${path}.name`, a.name, b.name);
  }
  if (a instanceof Set && b instanceof Set) return setDifference(path, a, b);
  if (a instanceof Map && b instanceof Map) return mapDifference(path, a, b);
  if (
    (ArrayBuffer.isView(a) || a instanceof ArrayBuffer || a instanceof SharedArrayBuffer) &&
    (ArrayBuffer.isView(b) || b instanceof ArrayBuffer || b instanceof SharedArrayBuffer)
  ) return viewDifference(path, a, b);
  const boxed = [Number, String, Boolean, BigInt, Symbol].some((C) => a instanceof C);
  if (boxed && !Object.is(a.valueOf(), b.valueOf())) {
    return valuesDiffer(`${path}.valueOf()`, a.valueOf(), b.valueOf());
  }
  return objectDifference(path, a, b);
}
