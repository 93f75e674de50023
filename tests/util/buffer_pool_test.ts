/**
 * The reused-buffer pool: size classes, reuse of released buffers, the byte budget (free buffers
 * dropped to make room, refusal past it), the cap on free bytes, and forget.
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import { BufferPool, sizeClass } from "../../util/buffer_pool.ts";

test("size classes: 8-byte steps to 256 B, then four per power of two (at most 25 % unused)", () => {
  assertEquals([0, 1, 8, 9, 256].map(sizeClass), [0, 8, 8, 16, 256]);
  assertEquals([257, 320, 321, 512, 513, 20_000, 65536].map(sizeClass), [
    320,
    320,
    384,
    512,
    640,
    20_480,
    65536,
  ]);
  for (let n = 1; n < 5_000_000; n = Math.ceil(n * 1.37) + 1) {
    const c = sizeClass(n);
    assert(c >= n && c <= Math.max(n * 1.25, n + 7), `class ${c} of ${n}`);
  }
});

test("a released buffer serves the next acquire of its class; nothing new is made", () => {
  const p = new BufferPool();
  const a = p.acquire(20_000, 1 << 20)!;
  assertEquals(a.length, 20_480);
  p.release(a);
  for (let i = 0; i < 1000; i++) {
    const b = p.acquire(19_000 + i, 1 << 20)!; // same class
    assert(b === a, "the same buffer");
    p.release(b);
  }
  assertEquals([p.stats.allocations, p.stats.reuses, p.reservedBytes], [1, 1000, 20_480]);
});

test("the budget bounds every buffer made: free ones are dropped for room, then refused", () => {
  const p = new BufferPool();
  const a = p.acquire(4096, 10_000)!, b = p.acquire(4096, 10_000)!;
  assertEquals(p.acquire(4096, 10_000), undefined, "a third would pass 10,000 bytes");
  p.release(a);
  const c = p.acquire(8192, 12_288)!; // needs a's room: a is dropped
  assert(c !== undefined && c.length === 8192);
  assertEquals([p.reservedBytes, p.freeBytes, p.stats.dropped], [12_288, 0, 1]);
  p.forget(b);
  assertEquals(p.reservedBytes, 8192, "a forgotten buffer is no longer counted");
});

test("free bytes past maxFreeBytes are dropped on release", () => {
  const p = new BufferPool(8192);
  const bufs = [1, 2, 3].map(() => p.acquire(4096, 1 << 20)!);
  for (const b of bufs) p.release(b);
  assertEquals([p.freeBytes, p.reservedBytes, p.stats.dropped], [8192, 8192, 1]);
  p.clear();
  assertEquals([p.freeBytes, p.reservedBytes], [0, 0]);
});
