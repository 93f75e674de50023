/**
 * The spill areas' allocator: 64-byte grains, first fit, exhaustion returns −1, freed ranges merge
 * with their neighbours (so a full area is whole again once everything is freed), reset.
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import { SpillAllocator } from "../../transport/agent_ring/spill_allocator.ts";

test("ranges are 64-byte grains, first fit; past the size: −1", () => {
  const a = new SpillAllocator(4096);
  assertEquals([a.alloc(1), a.alloc(64), a.alloc(65)], [0, 64, 128]);
  assertEquals(a.usedBytes, 64 + 64 + 128);
  assertEquals(a.alloc(4096), -1, "larger than what is left");
  assertEquals(a.alloc(0), -1, "nothing to allocate");
  assertEquals(new SpillAllocator(0).alloc(8), -1, "an empty area");
});

test("freed ranges merge both ways: everything freed in any order gives the whole area back", () => {
  for (const order of [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [2, 0, 3, 1]]) {
    const a = new SpillAllocator(4096);
    const offs = [1024, 1024, 1024, 1024].map((n) => a.alloc(n));
    assertEquals(offs, [0, 1024, 2048, 3072]);
    assertEquals(a.alloc(64), -1, "full");
    for (const i of order) a.free(offs[i], 1024);
    assertEquals(a.usedBytes, 0);
    assertEquals(a.alloc(4096), 0, `whole again after freeing in order ${order}`);
  }
});

test("a hole is reused by a range that fits it; reset frees everything", () => {
  const a = new SpillAllocator(8192);
  const x = a.alloc(1000), y = a.alloc(3000), z = a.alloc(1000);
  a.free(y, 3000);
  assertEquals(a.alloc(2000), y, "first fit into the hole");
  assert(a.alloc(5000) === -1, "no range that large is free");
  assertEquals([x, z].every((o) => o >= 0), true);
  a.reset();
  assertEquals([a.usedBytes, a.alloc(8192)], [0, 0]);
});
