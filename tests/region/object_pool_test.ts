/**
 * ObjectPool: slab runs, generations, RECLAIM outcomes, TTL sweep with an injected clock, and the
 * client-side verifyObject.
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { ObjectPool, POOL_EXHAUSTED } from "../../rpc/region/object_pool.ts";
import {
  OBJECT_HEADER_BYTES,
  OBJECT_OVERHEAD_BYTES,
  verifyObject,
} from "../../rpc/region/object_format.ts";

const KiB = 1024;

function pool(slabs = 8, slabSize = 64 * KiB, ttlMs = 30000) {
  const bytes = new Uint8Array(slabs * slabSize);
  const clock = { t: 0 };
  const p = new ObjectPool(bytes, { slabs, slabSize, ttlMs, now: () => clock.t });
  return { p, bytes, clock };
}

/** What the client's one-sided read of object `id` returns (a copy). */
function readObject(p: ObjectPool, bytes: Uint8Array, id: number, len: number): Uint8Array {
  const off = id * p.slabSize;
  return bytes.slice(off, off + len + OBJECT_OVERHEAD_BYTES);
}

function fill(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

test("N objects are allocated, written, published, read back, verified and reclaimed", () => {
  const { p, bytes } = pool(64, 4 * KiB);
  const ids: number[] = [], gens: number[] = [], lens: number[] = [];
  for (let k = 0; k < 20; k++) {
    const len = 100 + k * 300; // 1 or 2 slabs of 4 KiB
    const id = p.alloc(len);
    assert(id >= 0, `alloc ${k} failed`);
    assertEquals(p.write(id, fill(len, k)), len);
    const g = p.publish(id);
    assert(g >= 1);
    assertEquals(p.generation(id), g);
    assertEquals(p.length(id), len);
    assertEquals(p.dataOffset(id), id * p.slabSize + OBJECT_HEADER_BYTES);
    ids.push(id), gens.push(g), lens.push(len);
  }
  assertEquals(new Set(gens).size, 20, "generations are unique");
  for (let k = 0; k < 20; k++) {
    const obj = readObject(p, bytes, ids[k], lens[k]);
    assert(verifyObject(obj, gens[k], lens[k]), `object ${k} verifies`);
    assertEquals(
      obj.subarray(OBJECT_HEADER_BYTES, OBJECT_HEADER_BYTES + lens[k]),
      fill(lens[k], k),
    );
  }
  for (let k = 0; k < 20; k++) assertEquals(p.reclaim(ids[k], gens[k]), "ok");
  const s = p.stats();
  assertEquals([s.allocs, s.reclaims, s.usedSlabs, s.usage], [20, 20, 0, 0]);
});

test("slab counts: 1 slab, exact fit, 64 KiB data needs 2 slabs, many slabs", () => {
  const { p } = pool(16);
  const S = 64 * KiB;
  assertEquals(p.slabsFor(0), 1);
  assertEquals(p.slabsFor(1), 1);
  assertEquals(p.slabsFor(S - OBJECT_OVERHEAD_BYTES), 1, "exact fit in one slab");
  assertEquals(p.slabsFor(S - OBJECT_OVERHEAD_BYTES + 1), 2, "one byte over");
  assertEquals(p.slabsFor(S), 2, "64 KiB of data + 12 B needs 2 slabs");
  assertEquals(p.slabsFor(5 * S), 6);
  const a = p.alloc(1), b = p.alloc(S), c = p.alloc(5 * S);
  assertEquals([a, b, c], [0, 1, 3]);
  assertEquals(p.usedSlabs, 1 + 2 + 6);
  assertEquals(p.stats().usage, 9 / 16);
  assertEquals(p.alloc(p.maxObjectBytes + 1), POOL_EXHAUSTED, "larger than the whole pool");
  assertEquals(p.alloc(-1), POOL_EXHAUSTED);
  assertEquals(p.alloc(1.5), POOL_EXHAUSTED);
});

test("an object spanning several slabs keeps header, data and trailer in place", () => {
  const { p, bytes } = pool(8);
  const len = 3 * 64 * KiB + 5;
  const id = p.alloc(len);
  p.dataView(id).set(fill(len, 7));
  const g = p.publish(id);
  const dv = new DataView(bytes.buffer);
  assertEquals(dv.getUint32(0, true), g, "header generation");
  assertEquals(dv.getUint32(4, true), len, "header length");
  assertEquals(dv.getUint32(OBJECT_HEADER_BYTES + len, true), g, "trailer generation");
  assert(verifyObject(readObject(p, bytes, id, len), g, len));
});

test("POOL_EXHAUSTED (FULL) when exhausted and when fragmented; success after reclaim", () => {
  const { p } = pool(8);
  const ids: number[] = [], gens: number[] = [];
  for (let i = 0; i < 8; i++) {
    ids.push(p.alloc(100));
    gens.push(p.publish(ids[i]));
  }
  assertEquals(ids, [0, 1, 2, 3, 4, 5, 6, 7]);
  assertEquals(p.alloc(1), POOL_EXHAUSTED, "exhausted");
  // Free every other slab: 4 free slabs, none contiguous.
  for (const i of [0, 2, 4, 6]) assertEquals(p.reclaim(ids[i], gens[i]), "ok");
  assertEquals(p.usedSlabs, 4);
  assertEquals(p.alloc(64 * KiB), POOL_EXHAUSTED, "fragmented: no 2 contiguous slabs");
  assertEquals(p.alloc(10), 0, "a single slab still fits (first fit)");
  assertEquals(p.reclaim(ids[3], gens[3]), "ok"); // frees slab 3: 2,3,4 now contiguous
  assertEquals(p.alloc(2 * 64 * KiB), 2, "3-slab object after reclaim");
  assertEquals(p.usedSlabs, 1 + 3 + 3);
});

test("repeated RECLAIM is 'repeat', counted, and harmless", () => {
  const { p } = pool(4);
  const id = p.alloc(10);
  const g = p.publish(id);
  assertEquals(p.reclaim(id, g), "ok");
  assertEquals(p.reclaim(id, g), "repeat");
  const id2 = p.alloc(10); // the same slab again
  assertEquals(id2, id);
  const g2 = p.publish(id2);
  assertEquals(p.reclaim(id, g), "repeat", "the old reference again does not free the new object");
  assertEquals(p.generation(id2), g2);
  assertEquals(p.usedSlabs, 1);
  const s = p.stats();
  assertEquals([s.reclaims, s.repeatRefs, s.staleRefs, s.badRefs], [1, 2, 0, 0]);
});

test("TTL sweep frees unreclaimed objects; the stale reference is 'stale' and fails verifyObject", () => {
  const { p, bytes, clock } = pool(4, 64 * KiB, 30000);
  clock.t = 1000;
  const id = p.alloc(500);
  p.write(id, fill(500, 1));
  const g = p.publish(id);
  const keep = p.alloc(20);
  clock.t = 20000;
  const gKeep = p.publish(keep); // published later: younger
  clock.t = 31000;
  assertEquals(p.sweep(), 0, "exactly ttlMs old is not expired");
  clock.t = 31000.5;
  assertEquals(p.sweep(), 1, "strictly older than ttlMs is");
  assertEquals(p.generation(id), 0);
  assertEquals(p.generation(keep), gKeep, "the younger object survives");
  assert(!verifyObject(readObject(p, bytes, id, 500), g, 500), "freed object no longer verifies");
  assertEquals(p.reclaim(id, g), "stale", "RECLAIM after the sweep");
  // Reuse: a new object in the same slab, with new content and generation.
  const id2 = p.alloc(500);
  assertEquals(id2, id);
  p.write(id2, fill(500, 2));
  const g2 = p.publish(id2);
  assert(g2 !== g);
  assert(!verifyObject(readObject(p, bytes, id, 500), g, 500), "old reference vs new object");
  assert(verifyObject(readObject(p, bytes, id2, 500), g2, 500));
  assertEquals(p.reclaim(id, g), "stale");
  assertEquals(p.generation(id2), g2, "the stale RECLAIM did not free the new object");
  clock.t = 50001;
  assertEquals(p.sweep(), 1, "the kept object expires at 20000 + 30000");
  const s = p.stats();
  assertEquals([s.ttlReclaims, s.staleRefs, s.reclaims], [2, 2, 0]);
});

test("unpublished objects are never swept; release() frees them without counting", () => {
  const { p, clock } = pool(4, 64 * KiB, 10);
  const id = p.alloc(5);
  clock.t = 1e6;
  assertEquals(p.sweep(), 0);
  assertEquals(p.generation(id), 0);
  assertEquals(p.reclaim(id, 0), "bad-id", "never published: the peer cannot know it");
  assert(p.release(id));
  assert(!p.release(id));
  assertEquals(p.usedSlabs, 0);
  assertEquals(p.stats().reclaims, 0);
});

test("bad ids: out of range, middle slab, never allocated, non-integers", () => {
  const { p } = pool(8);
  const id = p.alloc(3 * 64 * KiB); // slabs 0..3
  const g = p.publish(id);
  for (const bad of [-1, 8, 1e9, 1.5, NaN, 2 ** 32]) {
    assertEquals(p.reclaim(bad, g), "bad-id", `id ${bad}`);
  }
  assertEquals(p.reclaim(2, g), "bad-id", "middle slab");
  assertEquals(p.reclaim(6, 1), "bad-id", "never allocated");
  assertEquals(p.reclaim(0, g + 1), "stale", "wrong generation at a real object");
  assertEquals(p.generation(id), g, "still live");
  assertEquals(p.stats().badRefs, 8);
  assertEquals(p.write(2, new Uint8Array(1)), -1, "write to a middle slab");
  assertEquals(p.write(id, new Uint8Array(3 * 64 * KiB + 1)), -1, "write past the length");
  assertEquals(p.publish(5), 0);
  assertEquals([p.length(5), p.dataOffset(5), p.objectOffset(5)], [-1, -1, -1]);
  assertThrows(() => p.dataView(5), VerbusError, "not a live object");
});

test("generations count from 1, are global across ids, and republishing makes old refs stale", () => {
  const { p } = pool(4);
  const a = p.alloc(1), b = p.alloc(1);
  assertEquals([p.publish(a), p.publish(b), p.publish(a)], [1, 2, 3]);
  assertEquals(p.reclaim(a, 1), "stale");
  assertEquals(p.reclaim(a, 3), "ok");
});

test("reset frees everything and forgets the RECLAIM history", () => {
  const { p, bytes } = pool(4);
  const id = p.alloc(100);
  const g = p.publish(id);
  p.alloc(64 * KiB);
  assertEquals(p.usedSlabs, 3);
  p.reset();
  assertEquals(p.usedSlabs, 0);
  assert(!verifyObject(readObject(p, bytes, id, 100), g, 100));
  assertEquals(p.reclaim(id, g), "bad-id");
  assertEquals(p.alloc(3 * 64 * KiB), 0, "the whole pool is free again");
  assert(p.publish(0) > g, "generations do not restart");
});

test("verifyObject rejects wrong generation, length, trailer, short buffers and generation 0", () => {
  const { p, bytes } = pool(2, 256);
  const id = p.alloc(40);
  const g = p.publish(id);
  const obj = readObject(p, bytes, id, 40);
  assert(verifyObject(obj, g, 40));
  assert(!verifyObject(obj, g + 1, 40));
  assert(!verifyObject(obj, g, 39));
  assert(!verifyObject(obj.subarray(0, obj.length - 1), g, 40), "short read");
  assert(!verifyObject(obj, 0, 40));
  const torn = obj.slice();
  torn[OBJECT_HEADER_BYTES + 40] ^= 1;
  assert(!verifyObject(torn, g, 40), "torn trailer");
});

test("constructor validates options and the size of the area", () => {
  assertThrows(
    () => new ObjectPool(new Uint8Array(100), { slabs: 2, slabSize: 64 }),
    VerbusError,
    "needs 128 B",
  );
  assertThrows(
    () => new ObjectPool(new Uint8Array(1024), { slabSize: 12 }),
    VerbusError,
    "slabSize",
  );
  assertThrows(
    () => new ObjectPool(new Uint8Array(1024), { slabSize: 100 }),
    VerbusError,
    "slabSize",
  );
  assertThrows(() => new ObjectPool(new Uint8Array(1024), { slabs: 0 }), VerbusError, "slabs");
  assertThrows(
    // deno-lint-ignore no-explicit-any
    () => new ObjectPool(new Uint8Array(1024), { slabs: 1, slabSize: 64, now: 5 as any }),
    VerbusError,
    "now",
  );
  assertThrows(
    // deno-lint-ignore no-explicit-any
    () => new ObjectPool(new Uint8Array(1024), { slabs: 1, slabSize: 64, bogus: 1 } as any),
    VerbusError,
    "bogus",
  );
  const e = assertThrows(() => new ObjectPool(new Uint8Array(1024), { ttlMs: -1 }), VerbusError);
  assertEquals(e.code, "INVALID_OPTIONS");
  const p = new ObjectPool(new Uint8Array(256 * 65536));
  assertEquals([p.slabs, p.slabSize, p.ttlMs], [256, 65536, 30000]);
});

test("the pool works on a view at an offset inside a larger region", () => {
  const region = new Uint8Array(4096 + 4 * 256);
  const area = region.subarray(4096);
  const p = new ObjectPool(area, { slabs: 4, slabSize: 256 });
  const id = p.alloc(300); // 2 slabs
  p.write(id, fill(300, 9));
  const g = p.publish(id);
  assertEquals(region.subarray(0, 4096), new Uint8Array(4096), "nothing written before the area");
  const off = 4096 + p.objectOffset(id);
  assert(verifyObject(region.slice(off, off + 300 + OBJECT_OVERHEAD_BYTES), g, 300));
});

test("freeing zeroes both generations, so a reader of a reused-but-unpublished slab fails", () => {
  const { p, bytes } = pool(4, 256);
  const dv = new DataView(bytes.buffer);
  const id = p.alloc(100);
  p.write(id, fill(100, 3));
  const g = p.publish(id);
  assertEquals(p.reclaim(id, g), "ok");
  assertEquals(dv.getUint32(0, true), 0, "header generation zeroed");
  assertEquals(dv.getUint32(OBJECT_HEADER_BYTES + 100, true), 0, "trailer generation zeroed");
  // Reused by a shorter object that is still being filled: the old reference must not verify.
  const id2 = p.alloc(10);
  assertEquals(id2, id);
  p.write(id2, fill(10, 4));
  assert(!verifyObject(readObject(p, bytes, id, 100), g, 100), "header check catches it");
});
