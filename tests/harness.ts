/**
 * The test harness shared by both runtimes: `test()` registers, `tests/run.ts` runs. Assertions
 * throw {@link AssertionError}. Nothing here is runtime-specific, so the same test file runs
 * unchanged under `deno run` and `bun`.
 * @module
 */

/** Options of one test. */
export interface TestOptions {
  /** Fail the test when it takes longer (default 30 000 ms). */
  timeoutMs?: number;
  /** A reason to skip; the test is then reported as skipped with that reason. */
  skip?: string | false;
}

/** A registered test. */
export interface TestCase {
  name: string;
  file: string;
  fn: () => void | Promise<void>;
  options: TestOptions;
}

const registry: TestCase[] = [];
let currentFile = "";

/** Called by the runner before importing each file. */
export function setCurrentFile(file: string): void {
  currentFile = file;
}

/** Everything registered so far. */
export function registeredTests(): readonly TestCase[] {
  return registry;
}

/** Register a test. */
export function test(
  name: string,
  fn: () => void | Promise<void>,
  options: TestOptions = {},
): void {
  registry.push({ name, file: currentFile, fn, options });
}

/** A failed assertion. */
export class AssertionError extends Error {
  override name = "AssertionError";
}

/** Throws unless `cond` is truthy. */
export function assert(cond: unknown, message = "assertion failed"): asserts cond {
  if (!cond) throw new AssertionError(message);
}

function show(v: unknown): string {
  if (typeof v === "bigint") return `${v}n`;
  if (v instanceof Uint8Array) {
    const head = Array.from(v.subarray(0, 32), (b) => b.toString(16).padStart(2, "0")).join("");
    return `Uint8Array(${v.length})[${head}${v.length > 32 ? "…" : ""}]`;
  }
  try {
    return JSON.stringify(v, (_k, x) => typeof x === "bigint" ? `${x}n` : x) ?? String(v);
  } catch {
    return String(v);
  }
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (ArrayBuffer.isView(a) && ArrayBuffer.isView(b)) {
    const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
    const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    if (x.length !== y.length || a.constructor !== b.constructor) return false;
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
    return true;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (a instanceof Map && b instanceof Map) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k))) return false;
    return true;
  }
  const ka = Object.keys(a as object), kb = Object.keys(b as object);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) {
      return false;
    }
  }
  return true;
}

/** Throws unless `actual` deep-equals `expected` (typed arrays compared by content). */
export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  if (!deepEqual(actual, expected)) {
    throw new AssertionError(
      `${message ? message + ": " : ""}expected ${show(expected)}, got ${show(actual)}`,
    );
  }
}

/** Throws unless `fn` throws; returns the error. Checks its class and message when given. */
export function assertThrows<E extends Error = Error>(
  fn: () => unknown,
  // deno-lint-ignore no-explicit-any
  errorClass?: new (...args: any[]) => E,
  includes?: string,
): E {
  try {
    fn();
  } catch (e) {
    return checkError(e, errorClass, includes);
  }
  throw new AssertionError("expected an exception, none was thrown");
}

/** Async version of {@link assertThrows}. */
export async function assertRejects<E extends Error = Error>(
  fn: () => Promise<unknown>,
  // deno-lint-ignore no-explicit-any
  errorClass?: new (...args: any[]) => E,
  includes?: string,
): Promise<E> {
  try {
    await fn();
  } catch (e) {
    return checkError(e, errorClass, includes);
  }
  throw new AssertionError("expected a rejection, the promise resolved");
}

function checkError<E extends Error>(
  e: unknown,
  // deno-lint-ignore no-explicit-any
  errorClass?: new (...args: any[]) => E,
  includes?: string,
): E {
  if (errorClass && !(e instanceof errorClass)) {
    throw new AssertionError(`expected ${errorClass.name}, got ${show(e)} (${String(e)})`);
  }
  const msg = e instanceof Error ? e.message : String(e);
  if (includes !== undefined && !msg.includes(includes)) {
    throw new AssertionError(
      `expected error message to include ${show(includes)}, got ${show(msg)}`,
    );
  }
  return e as E;
}
