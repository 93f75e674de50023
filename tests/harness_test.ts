/**
 * Tests of the harness itself: `assertEquals` follows node:assert's `deepStrictEqual` on both
 * runtimes, every failure is an {@link AssertionError} whose message names the difference, and
 * `assertThrows` / `assertRejects` fail where they used to pass by accident.
 * @module
 */
import { deepStrictEqual } from "node:assert";
import { Buffer } from "node:buffer";
import {
  assert,
  assertEquals,
  AssertionError,
  assertRejects,
  assertThrows,
  test,
} from "./harness.ts";
import { show } from "./harness_diff.ts";

/** The AssertionError `assertEquals(actual, expected)` throws; fails if it throws none. */
function failure(actual: unknown, expected: unknown): AssertionError {
  try {
    assertEquals(actual, expected);
  } catch (e) {
    if (e instanceof AssertionError) return e;
    throw new AssertionError(`assertEquals threw a ${String(e)}, not an AssertionError`);
  }
  throw new AssertionError(`assertEquals passed on ${show(actual)} vs ${show(expected)}`);
}

/** Fails unless `assertEquals(actual, expected)` fails naming every one of `needles`. */
function differs(actual: unknown, expected: unknown, ...needles: string[]): void {
  const e = failure(actual, expected);
  for (const n of needles) {
    if (!e.message.includes(n)) {
      throw new AssertionError(
        `the failure message does not name ${JSON.stringify(n)}: ${e.message}`,
      );
    }
  }
}

class Point {
  constructor(public x: number, public y: number) {}
}
class OtherPoint {
  constructor(public x: number, public y: number) {}
}

test("Sets compare their members", () => {
  differs(new Set([1]), new Set([2]), "missing Set(1){2}", "unexpected Set(1){1}");
  differs(new Set([1, 2]), new Set([1]), "unexpected Set(1){2}");
  differs(new Set([{ a: 1 }]), new Set([{ a: 2 }]), "missing", "a: 2");
  assertEquals(new Set([1, 2]), new Set([2, 1]));
  assertEquals(new Set([{ a: 1 }]), new Set([{ a: 1 }]));
  assertEquals(new Set([NaN]), new Set([NaN]));
});

test("Maps compare keys and values", () => {
  differs(new Map([["k", 1]]), new Map([["k", 2]]), 'at .get("k"): expected 2, got 1');
  differs(new Map([["a", 1]]), new Map([["b", 1]]), 'missing keys ["b"]', 'unexpected keys ["a"]');
  differs(new Map([[1, "x"]]), new Map([["1", "x"]]), "missing keys", "unexpected keys");
  assertEquals(new Map([[1, "a"], [2, "b"]]), new Map([[2, "b"], [1, "a"]]));
  assertEquals(new Map([[{ k: 1 }, "a"]]), new Map([[{ k: 1 }, "a"]]));
});

test("Dates compare their time", () => {
  differs(
    new Date(0),
    new Date(1),
    "expected Date(1970-01-01T00:00:00.001Z)",
    "got Date(1970-01-01T00:00:00.000Z)",
  );
  differs({ at: new Date(0) }, { at: new Date(5) }, "at .at:");
  differs(new Date(0), 0, "expected 0");
  assertEquals(new Date(5), new Date(5));
  assertEquals(new Date(NaN), new Date(NaN));
});

test("typed arrays: contents, lengths and element types", () => {
  differs(new Uint8Array([1, 2]), new Uint8Array([1, 3]), "at [1]: expected 3, got 2");
  differs(new Uint8Array([1]), new Uint8Array([1, 0]), "expected length 2, got 1");
  differs(
    new Uint8Array([1]),
    new Int8Array([1]),
    "expected an instance of Int8Array, got an instance of Uint8Array",
  );
  differs(new Uint8Array([1]), new Uint16Array([1]), "Uint16Array");
  differs(
    Buffer.from([1]),
    new Uint8Array([1]),
    "expected an instance of Uint8Array, got an instance of Buffer",
  );
  differs(new Float64Array([0]), new Float64Array([-0]), "at [0]: expected -0, got 0");
  differs(new BigUint64Array([1n]), new BigUint64Array([2n]), "expected 2n, got 1n");
  differs(new Uint8Array([1]).buffer, new Uint8Array([2]).buffer, "at [0]: expected 2, got 1");
  assertEquals(new Float64Array([NaN]), new Float64Array([NaN]));
  // A view is compared by what it shows, not by where it sits in its buffer.
  assertEquals(new Uint8Array([9, 1, 2]).subarray(1), new Uint8Array([1, 2]));
  const big = new Uint8Array(1 << 20);
  const other = big.slice();
  other[700_000] = 1;
  const e = failure(big, other);
  assert(e.message.includes("at [700000]: expected 1, got 0"), e.message);
  assert(e.message.length < 2000, `a 1 MiB buffer gives a short message (${e.message.length})`);
});

test("a failure on a large Set, Map or array is named without quadratic work", () => {
  const n = 100_000;
  const nums = Array.from({ length: n }, (_, i) => i);
  const e1 = failure(new Set(nums), new Set([...nums.slice(1), n]));
  assert(e1.message.includes(`missing Set(1){${n}}, unexpected Set(1){0}`), e1.message);
  const e2 = failure(new Map(nums.map((i) => [i, i])), new Map(nums.map((i) => [i, i + 1])));
  assert(e2.message.startsWith("at .get(0): expected 1, got 0"), e2.message);
  const e3 = failure(nums, [...nums.slice(0, -1), -1]);
  assert(
    e3.message.startsWith(`at [${n - 1}]: expected -1, got ${n - 1}`),
    e3.message.slice(0, 200),
  );
  assert(e1.message.length + e2.message.length + e3.message.length < 3000, "short messages");
});

test("NaN equals NaN; -0 and +0 differ (Object.is, as deepStrictEqual)", () => {
  assertEquals(NaN, NaN);
  assertEquals([NaN], [NaN]);
  differs(-0, 0, "expected 0, got -0", "-0 and +0 differ");
  differs([0], [-0], "at [0]: expected -0, got 0");
  differs({ v: -0 }, { v: 0 }, "at .v:");
});

test("prototypes: a class instance differs from an object literal with the same fields", () => {
  differs(
    new Point(1, 2),
    { x: 1, y: 2 },
    "expected an instance of Object, got an instance of Point",
  );
  differs(
    { x: 1, y: 2 },
    new Point(1, 2),
    "expected an instance of Point, got an instance of Object",
  );
  differs(new Point(1, 2), new OtherPoint(1, 2), "OtherPoint");
  differs(Object.create(null), {}, "null prototype");
  differs([1], { 0: 1 }, "expected an instance of Object, got an instance of Array");
  differs(
    new TypeError("m"),
    new Error("m"),
    "expected an instance of Error, got an instance of TypeError",
  );
  differs(new Error("a"), new Error("b"), 'at .message: expected "b", got "a"');
  assertEquals(new Point(1, 2), new Point(1, 2));
  differs(new Point(1, 2), new Point(1, 3), "at .y: expected 3, got 2");
});

test("nested arrays and objects name the path to the difference", () => {
  differs({ a: [1, { b: [2, 3] }] }, { a: [1, { b: [2, 4] }] }, "at .a[1].b[1]: expected 4, got 3");
  differs([[1], [2, 3]], [[1], [2]], "at [1]: expected length 1, got 2");
  differs({ "odd key": 1 }, { "odd key": 2 }, 'at ["odd key"]: expected 2, got 1');
  differs(
    { m: new Map([["k", new Set([1])]]) },
    { m: new Map([["k", new Set([2])]]) },
    'at .m.get("k")',
  );
  const e = failure({ deep: { x: 1 } }, { deep: { x: 2 } });
  assert(e.message.includes("expected: {deep: {x: 2}}"), `shows the whole values: ${e.message}`);
  assertEquals({ a: [1, { b: [2, 3] }] }, { a: [1, { b: [2, 3] }] });
});

test("bigint: values, and never equal to a number", () => {
  differs(1n, 2n, "expected 2n, got 1n");
  differs(1n, 1, "expected 1, got 1n", "(number vs bigint)");
  differs({ n: 2n ** 64n }, { n: 2n ** 64n + 1n }, "at .n: expected 18446744073709551617n");
  assertEquals(2n ** 64n, 2n ** 64n);
});

test("undefined differs from a missing property", () => {
  differs({ a: undefined }, {}, "unexpected property a: undefined");
  differs({}, { a: undefined }, "missing property a (expected undefined)");
  differs({ a: undefined }, { b: undefined }, "missing property b");
  differs([undefined], [,], "unexpected property [0]: undefined");
});

test("every verdict agrees with node:assert deepStrictEqual on this runtime", () => {
  const sym = Symbol("s");
  const pairs: [unknown, unknown][] = [
    [new Set([1]), new Set([2])],
    [new Date(0), new Date(1)],
    [new Map([[1, 1]]), new Map([[1, 1]])],
    [new Uint8Array([1]), Buffer.from([1])],
    [new Point(1, 2), { x: 1, y: 2 }],
    [{ [sym]: 1 }, { [sym]: 2 }],
    [{ [sym]: 1 }, { [sym]: 1 }],
    [/a/g, /a/i],
    [Object.assign(new Uint8Array([1]), { tag: 1 }), new Uint8Array([1])],
    [new Error("a", { cause: 1 }), new Error("a", { cause: 2 })],
    [NaN, NaN],
    [-0, 0],
    [[, 1], [undefined, 1]],
  ];
  for (const [a, b] of pairs) {
    let node = true;
    try {
      deepStrictEqual(a, b);
    } catch {
      node = false;
    }
    let ours = true;
    try {
      assertEquals(a, b);
    } catch (e) {
      if (!(e instanceof AssertionError)) throw e;
      ours = false;
    }
    assertEquals(ours, node, `verdict on ${show(a)} vs ${show(b)}`);
  }
});

test("assertThrows: a promise, a non-Error, an inner failed assertion do not count", () => {
  const p = failureOf(() => assertThrows(() => Promise.reject(new Error("late"))));
  assert(p.includes("returned a promise"), p);
  const none = failureOf(() => assertThrows(() => 42));
  assert(none.includes("none was thrown (returned 42)"), none);
  const str = failureOf(() =>
    assertThrows(() => {
      throw "text";
    })
  );
  assert(str.includes('non-Error "text"'), str);
  const inner = failureOf(() => assertThrows(() => assertEquals(1, 2), Error));
  assert(inner.includes("expected 2, got 1"), `the inner assertion's failure surfaces: ${inner}`);
  const cls = failureOf(() =>
    assertThrows(() => {
      throw new Error("x");
    }, TypeError)
  );
  assert(cls.includes('expected TypeError, got Error: "x"'), cls);
  const msg = failureOf(() =>
    assertThrows(
      () => {
        throw new Error("abc");
      },
      Error,
      "zzz",
    )
  );
  assert(msg.includes('include "zzz"'), msg);
  assertEquals(
    assertThrows(
      () => {
        throw new TypeError("t");
      },
      Error,
      "t",
    ).name,
    "TypeError",
  );
  assertThrows(() => assertEquals(1, 2), AssertionError, "expected 2, got 1");
});

test("assertRejects: a synchronous throw or a resolved promise does not count", async () => {
  const sync = await failureOfAsync(() =>
    assertRejects(
      (() => {
        throw new Error("now");
      }) as () => Promise<unknown>,
    )
  );
  assert(sync.includes("threw synchronously: Error"), sync);
  const resolved = await failureOfAsync(() => assertRejects(() => Promise.resolve(7)));
  assert(resolved.includes("resolved to 7"), resolved);
  const inner = await failureOfAsync(() =>
    assertRejects(async () => {
      await Promise.resolve();
      assertEquals("a", "b");
    })
  );
  assert(inner.includes('expected "b", got "a"'), inner);
  const cls = await failureOfAsync(() =>
    assertRejects(() => Promise.reject(new Error("x")), TypeError)
  );
  assert(cls.includes("expected TypeError"), cls);
  const e = await assertRejects(() => Promise.reject(new RangeError("r")), RangeError, "r");
  assertEquals(e.message, "r");
});

function failureOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof AssertionError) return e.message;
    throw e;
  }
  throw new AssertionError("the assertion passed");
}

async function failureOfAsync(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof AssertionError) return e.message;
    throw e;
  }
  throw new AssertionError("the assertion passed");
}
