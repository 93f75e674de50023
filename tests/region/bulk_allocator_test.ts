/**
 * BulkAllocator: random alloc/free checked against a model, coalescing, AREA_EXHAUSTED, out-of-order frees,
 * double frees, parameter validation.
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { AREA_EXHAUSTED, BulkAllocator } from "../../rpc/region/bulk_allocator.ts";

/** Deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Checks the allocator's lists against the model of live allocations. */
function checkInvariants(b: BulkAllocator, live: Map<number, number>): void {
  const allocs = b.allocatedList(), free = b.freeList();
  assertEquals(allocs.length, live.size, "allocation count");
  let used = 0;
  for (const { offset, length } of allocs) {
    assertEquals(live.get(offset), length, `allocation at ${offset}`);
    used += length;
  }
  assertEquals(b.used, used, "used");
  // Together, allocations and free extents tile [0, capacity) exactly, free extents never touch.
  const all = [
    ...allocs.map((x) => ({ ...x, free: false })),
    ...free.map((x) => ({ ...x, free: true })),
  ]
    .sort((x, y) => x.offset - y.offset);
  let at = 0, prevFree = false;
  for (const x of all) {
    assertEquals(x.offset, at, "no gap and no overlap");
    assert(x.length > 0 && x.offset % b.align === 0 && x.length % b.align === 0, "aligned");
    assert(!(x.free && prevFree), "adjacent free extents are coalesced");
    prevFree = x.free;
    at += x.length;
  }
  assertEquals(at, b.capacity, "tiles the whole capacity");
  assert(b.freeExtents <= live.size + 1, "free extents ≤ allocations + 1");
}

test("random alloc/free sequences match a model; all freed → one free block of the full size", () => {
  for (const seed of [1, 2, 3, 42]) {
    const r = rng(seed);
    const b = new BulkAllocator(1 << 20, 64, 256);
    const live = new Map<number, number>();
    let fulls = 0;
    for (let step = 0; step < 3000; step++) {
      if (live.size > 0 && (r() < 0.45 || live.size === 256)) {
        const keys = [...live.keys()];
        const off = keys[Math.floor(r() * keys.length)]; // out of order
        assert(b.free(off), `free ${off}`);
        live.delete(off);
      } else {
        const len = 1 + Math.floor(r() * r() * 40000);
        const rounded = Math.ceil(len / 64) * 64;
        const firstFit = b.freeList().find((x) => x.length >= rounded);
        const off = b.alloc(len);
        if (off === AREA_EXHAUSTED) {
          fulls++;
          assert(
            firstFit === undefined || live.size === 256,
            "AREA_EXHAUSTED only when nothing fits",
          );
        } else {
          assertEquals(off, firstFit?.offset, "first fit");
          live.set(off, rounded);
        }
      }
      if (step % 50 === 0) checkInvariants(b, live);
    }
    checkInvariants(b, live);
    assert(fulls > 0, "the sequence exercised AREA_EXHAUSTED");
    for (const off of [...live.keys()].reverse()) assert(b.free(off));
    live.clear();
    checkInvariants(b, live);
    assertEquals(b.freeList(), [{ offset: 0, length: 1 << 20 }]);
    assertEquals(b.used, 0);
  }
});

test("frees in any order coalesce with both neighbours", () => {
  const b = new BulkAllocator(64 * 8, 64);
  const o = [0, 1, 2, 3, 4, 5, 6, 7].map(() => b.alloc(64));
  assertEquals(o, [0, 64, 128, 192, 256, 320, 384, 448]);
  assertEquals(b.alloc(1), AREA_EXHAUSTED);
  for (const i of [5, 1, 3]) assert(b.free(o[i]));
  assertEquals(b.freeExtents, 3);
  assert(b.free(o[2])); // joins 1 and 3
  assertEquals(b.freeList(), [{ offset: 64, length: 192 }, { offset: 320, length: 64 }]);
  assert(b.free(o[4])); // joins [64,256) and [320,384)
  assertEquals(b.freeList(), [{ offset: 64, length: 320 }]);
  assertEquals(b.alloc(320), 64, "the coalesced extent serves a big request");
  for (const i of [0, 7, 6]) assert(b.free(o[i]));
  assert(b.free(64));
  assertEquals(b.freeList(), [{ offset: 0, length: 512 }]);
});

test("AREA_EXHAUSTED (FULL): too big, exhausted, maxAllocs live, bad lengths", () => {
  const b = new BulkAllocator(4096, 64, 4);
  assertEquals(b.alloc(4097), AREA_EXHAUSTED, "bigger than capacity");
  assertEquals(b.alloc(4096), 0);
  assertEquals(b.alloc(1), AREA_EXHAUSTED, "exhausted");
  assert(b.free(0));
  for (let i = 0; i < 4; i++) assertEquals(b.alloc(1), i * 64);
  assertEquals(b.alloc(1), AREA_EXHAUSTED, "maxAllocs allocations live");
  assert(b.free(64));
  assertEquals(b.alloc(1), 64);
  for (const bad of [0, -5, NaN, Infinity]) {
    assertEquals(b.alloc(bad), AREA_EXHAUSTED, `len ${bad}`);
  }
});

test("sizes round up to align; capacity rounds down", () => {
  const b = new BulkAllocator(1000, 256);
  assertEquals(b.capacity, 768);
  assertEquals(b.alloc(1), 0);
  assertEquals(b.sizeOf(0), 256);
  assertEquals(b.alloc(257), 256);
  assertEquals(b.sizeOf(256), 512);
  assertEquals(b.used, 768);
  assertEquals(b.sizeOf(128), -1);
});

test("double free and unknown offsets return false, change nothing, and are counted", () => {
  const b = new BulkAllocator(4096, 64);
  const a = b.alloc(100), c = b.alloc(100);
  assert(b.free(a));
  const before = JSON.stringify([b.freeList(), b.allocatedList(), b.used]);
  assert(!b.free(a), "double free");
  assert(!b.free(c + 64), "inside an allocation");
  assert(!b.free(9999), "beyond the area");
  assertEquals(JSON.stringify([b.freeList(), b.allocatedList(), b.used]), before);
  assertEquals(b.badFrees, 3);
  assert(b.free(c));
  assertEquals(b.freeList(), [{ offset: 0, length: 4096 }]);
});

test("reset forgets every allocation", () => {
  const b = new BulkAllocator(8192);
  b.alloc(1000), b.alloc(3000);
  b.reset();
  assertEquals([b.used, b.allocations, b.freeExtents, b.largestFree], [0, 0, 1, 8192]);
});

test("parameters are validated with messages naming the field", () => {
  assertThrows(() => new BulkAllocator(0), VerbusError, "size");
  assertThrows(() => new BulkAllocator(4096, 48), VerbusError, "align must be a power of two");
  assertThrows(() => new BulkAllocator(32, 64), VerbusError, "size must be at least align");
  assertThrows(() => new BulkAllocator(4096, 64, 0), VerbusError, "maxAllocs");
  const e = assertThrows(() => new BulkAllocator(1.5), VerbusError);
  assertEquals(e.code, "INVALID_OPTIONS");
});
