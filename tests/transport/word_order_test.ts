/**
 * The shared words' loads and stores (`transport/word_order.ts`): plain accesses exactly on
 * V8 on x86-64 (where `Atomics` is a builtin call per access), `Atomics` everywhere else; either
 * way a store is seen by a later load, through a view of the same memory as well.
 */
import { assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../util/runtime.ts";
import { loadAcquire, PLAIN_ORDERED_WORDS, storeRelease } from "../../transport/word_order.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

test("plain ordered words on Deno x86-64 only; Atomics on Bun and other CPUs", () => {
  const x64 = RUNTIME === "deno" ? g.Deno.build.arch === "x86_64" : g.process?.arch === "x64";
  assertEquals(PLAIN_ORDERED_WORDS, RUNTIME === "deno" && x64);
});

test("a released store is what a later acquire load of the word reads (and another view sees)", () => {
  const buffer = new SharedArrayBuffer(64);
  const words = new Int32Array(buffer), other = new Int32Array(buffer, 16, 4);
  for (const v of [1, -1, 0x7fffffff, -0x80000000, 0]) {
    storeRelease(words, 5, v);
    assertEquals(loadAcquire(words, 5), v);
    assertEquals(loadAcquire(other, 1), v, "the same word through another view");
    assertEquals(Atomics.load(words, 5), v);
  }
  storeRelease(words, 0, 0xffffffff | 0);
  assertEquals(
    loadAcquire(words, 0) >>> 0,
    0xffffffff,
    "u32 values round-trip as their int32 bits",
  );
});
