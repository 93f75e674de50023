/**
 * The test harness shared by both runtimes: `test()` registers, `tests/run.ts` runs. Assertions
 * throw {@link AssertionError}. Nothing here is runtime-specific, so the same test file runs
 * unchanged under `deno run` and `bun`.
 * @module
 */
import { isDeepStrictEqual } from "node:util";
import { difference, show } from "./harness_diff.ts";

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

/**
 * Throws unless `actual` and `expected` are deeply and strictly equal, with the semantics of
 * node:assert's `deepStrictEqual` (the same comparator, `isDeepStrictEqual` from node:util, on both
 * runtimes): prototypes must match (a class instance never equals an object literal with the same
 * fields, a Buffer never equals a Uint8Array), primitives compare with `Object.is` (NaN equals
 * NaN; -0 and +0 differ, also inside arrays and Float64Arrays), Sets and Maps compare their
 * members, Dates their time, typed arrays their type, length and elements, and a property set to
 * undefined differs from a missing one. The message names the first difference.
 */
export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  if (isDeepStrictEqual(actual, expected)) return;
  const where = difference(actual, expected);
  // A difference deep inside shows the whole values too, so the reader sees the context.
  const whole = where.startsWith("at ")
    ? `\n  expected: ${show(expected)}\n  actual:   ${show(actual)}`
    : "";
  throw new AssertionError(`${message ? message + ": " : ""}${where}${whole}`);
}

/**
 * Throws unless `fn` throws synchronously; returns the error. Checks its class (`instanceof`) and
 * that its message includes `includes` when given. A returned promise is not a throw (use
 * {@link assertRejects}); a non-Error thrown value fails; an {@link AssertionError} raised by an
 * assertion inside `fn` is passed on unless `errorClass` asks for exactly that class.
 */
export function assertThrows<E extends Error = Error>(
  fn: () => unknown,
  // deno-lint-ignore no-explicit-any
  errorClass?: new (...args: any[]) => E,
  includes?: string,
): E {
  let returned: unknown;
  try {
    returned = fn();
  } catch (e) {
    return checkError(e, errorClass, includes);
  }
  if (isThenable(returned)) {
    // Observe the promise so that a rejection is not reported as unhandled on top of this failure.
    returned.then(undefined, () => {});
    throw new AssertionError(
      "expected a synchronous exception, the function returned a promise (use assertRejects)",
    );
  }
  throw new AssertionError(`expected an exception, none was thrown (returned ${show(returned)})`);
}

/**
 * Throws unless the promise `fn` returns rejects; returns the error, checked as in
 * {@link assertThrows}. A synchronous throw from `fn` fails: a caller that chains `.catch()` on
 * such a function would never see that error.
 */
export async function assertRejects<E extends Error = Error>(
  fn: () => Promise<unknown>,
  // deno-lint-ignore no-explicit-any
  errorClass?: new (...args: any[]) => E,
  includes?: string,
): Promise<E> {
  let promise: unknown;
  try {
    promise = fn();
  } catch (e) {
    throw new AssertionError(
      `expected a rejected promise, the function threw synchronously: ${describeThrown(e)}`,
    );
  }
  if (!isThenable(promise)) {
    throw new AssertionError(`expected a promise, the function returned ${show(promise)}`);
  }
  let value: unknown;
  try {
    value = await promise;
  } catch (e) {
    return checkError(e, errorClass, includes);
  }
  throw new AssertionError(`expected a rejection, the promise resolved to ${show(value)}`);
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (typeof v === "object" || typeof v === "function") && v !== null &&
    typeof (v as { then?: unknown }).then === "function";
}

function describeThrown(e: unknown): string {
  if (!(e instanceof Error)) return `a non-Error ${show(e)}`;
  const code = (e as { code?: unknown }).code;
  return `${e.name}${code !== undefined ? ` [${String(code)}]` : ""}: ${JSON.stringify(e.message)}`;
}

function checkError<E extends Error>(
  e: unknown,
  // deno-lint-ignore no-explicit-any
  errorClass?: new (...args: any[]) => E,
  includes?: string,
): E {
  const wantsAssertion = errorClass !== undefined &&
    (errorClass as unknown === AssertionError || errorClass.prototype instanceof AssertionError);
  // A failed assertion inside fn is that assertion's failure, not the exception the test expects.
  if (e instanceof AssertionError && !wantsAssertion) throw e;
  if (!(e instanceof Error)) {
    throw new AssertionError(`expected an Error to be thrown, got ${describeThrown(e)}`);
  }
  if (errorClass && !(e instanceof errorClass)) {
    throw new AssertionError(`expected ${errorClass.name}, got ${describeThrown(e)}`);
  }
  if (includes !== undefined && !e.message.includes(includes)) {
    throw new AssertionError(
      `expected the error message to include ${show(includes)}, got ${describeThrown(e)}`,
    );
  }
  return e as E;
}
