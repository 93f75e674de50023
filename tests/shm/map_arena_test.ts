/**
 * The shm map arena (`transport/shm/map_arena.ts`): objects past the budget of per-object views
 * are mapped into SharedArrayBuffer chunks — really shared with the object, reused after release,
 * zero once released — and on Deno they are not counted as V8 external memory (the counting that
 * stalled a Deno process at about 7,000 sessions). A whole session over the arena carries every
 * path.
 * @module
 */
import { pid } from "node:process";
import { assert, assertEquals, test } from "../harness.ts";
import { ffi } from "../../ffi/ffi.ts";
import { loadLibc } from "../../ffi/libc.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { cstringArg } from "../../ffi/strings.ts";
import { O_CREAT, O_EXCL, O_RDWR } from "../../ffi/symbols/libc.ts";
import { MapArena } from "../../transport/shm/map_arena.ts";
import {
  client,
  expectedSized,
  FABRIC_LABEL,
  pattern,
  SHM_ONLY,
  sized,
  startServer,
} from "../fabric/util.ts";

const KIB = 1024, MIB = 1 << 20;
let serial = 0;

/** A fresh unlinked shm object of `size` bytes: its fd (the caller closes it). */
async function shmFd(size: number): Promise<number> {
  const s = (await loadLibc()).symbols;
  const name = cstringArg(`/verbus-test-arena-${pid}-${serial++}`);
  const fd = s.shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0o600);
  assert(fd >= 0, "shm_open");
  s.shm_unlink(name);
  assertEquals(s.ftruncate(fd, size), 0, "ftruncate");
  return fd;
}

async function arena(budget: number, chunk = MIB): Promise<MapArena> {
  return new MapArena(await loadLibc(), await ffi(), budget, chunk);
}

/** JS external memory now (bytes): what V8 charges to the isolate for ArrayBuffers. */
function external(): number {
  return (globalThis as unknown as { process: { memoryUsage(): { external: number } } }).process
    .memoryUsage().external;
}

test("within the budget an object has its own view; past it, a range of a SharedArrayBuffer chunk that is the object", async () => {
  const close = (await loadLibc()).symbols.close;
  const a = await arena(16 * KIB);
  const own = await arena(Infinity);
  const fdA = await shmFd(16 * KIB), fdB = await shmFd(16 * KIB);
  try {
    const first = a.map(fdA, 16 * KIB, "A");
    assert(!first.inArena, "the first 16 KiB fit the budget");
    assert(!(first.bytes.buffer instanceof SharedArrayBuffer));
    const b = a.map(fdB, 10_000, "B");
    assert(b.inArena, "past the budget: in a chunk");
    assert(b.bytes.buffer instanceof SharedArrayBuffer);
    assertEquals(b.bytes.length, 10_000);
    assertEquals(b.address % 4096n, 0n, "page-aligned");
    // The chunk's range is the object: what one mapping writes, another mapping of it reads.
    const other = own.map(fdB, 16 * KIB, "B again");
    b.bytes.set(pattern(10_000, 7));
    assertEquals(other.bytes.subarray(0, 10_000), pattern(10_000, 7));
    other.bytes[5] = 0xee;
    assertEquals(b.bytes[5], 0xee);
    // Released: the range reads zeros (not the object), and the next object of its size gets it.
    const stale = b.bytes;
    b.release();
    b.release(); // safe twice
    assertEquals(stale.subarray(0, 64), new Uint8Array(64), "a released range reads zeros");
    assertEquals(other.bytes[5], 0xee, "the object itself is untouched");
    const again = a.map(fdB, 10_000, "B, third time");
    assertEquals(again.address, b.address, "the freed range of that size is reused");
    assertEquals(again.bytes[5], 0xee);
    assertEquals(a.stats(), { chunks: 1, placed: 1, foreignBytes: 16 * KIB });
    again.release();
    first.release();
    first.release();
    other.release();
    assertEquals(a.stats(), { chunks: 1, placed: 0, foreignBytes: 0 });
  } finally {
    close(fdA);
    close(fdB);
  }
});

test("chunks fill before a new one is made; an object larger than a chunk gets a chunk of its own", async () => {
  const close = (await loadLibc()).symbols.close;
  const a = await arena(0, 256 * KIB);
  const fd = await shmFd(1 * MIB);
  try {
    const m = Array.from({ length: 8 }, (_, i) => a.map(fd, 64 * KIB, `#${i}`));
    assertEquals(a.stats().chunks, 2, "8 × 64 KiB in 256 KiB chunks: 2 chunks");
    const big = a.map(fd, 1 * MIB, "big");
    assertEquals(big.bytes.length, 1 * MIB);
    assertEquals(a.stats().chunks, 3);
    big.bytes[MIB - 1] = 9;
    assertEquals(m[0].bytes[0], 0, "small objects map the file's start: untouched");
    m[0].bytes[0] = 3;
    assertEquals(m[7].bytes[0], 3, "all eight map the same object");
    for (const x of [...m, big]) x.release();
    assertEquals(a.stats().placed, 0);
  } finally {
    close(fd);
  }
});

test(
  "Deno: objects in chunks are not V8 external memory, objects with their own view are",
  async () => {
    const close = (await loadLibc()).symbols.close;
    const SIZE = 8 * MIB, N = 8;
    const fd = await shmFd(SIZE);
    try {
      const inChunks = await arena(0, 16 * MIB);
      let before = external();
      const placed = Array.from({ length: N }, (_, i) => inChunks.map(fd, SIZE, `#${i}`));
      const chunkGrowth = external() - before;
      assert(
        chunkGrowth < SIZE,
        `64 MiB placed in chunks grew external memory by ${chunkGrowth} bytes`,
      );
      const ownViews = await arena(Infinity);
      before = external();
      const viewed = Array.from({ length: N }, (_, i) => ownViews.map(fd, SIZE, `#${i}`));
      const viewGrowth = external() - before;
      assert(
        viewGrowth >= (N * SIZE) / 2, // other buffers may be collected meanwhile
        `64 MiB of own views grew external memory by ${viewGrowth} bytes (the engine counts them)`,
      );
      for (const x of [...placed, ...viewed]) x.release();
    } finally {
      close(fd);
    }
  },
  { skip: RUNTIME === "deno" ? false : "JSC (Bun) does not charge views of native memory" },
);

test("a session whose objects are all in chunks carries EAGER, LAZY and BULK", async () => {
  const shared = await MapArena.shared();
  const budget = shared.foreignBudget;
  shared.foreignBudget = 0; // every object mapped from now on goes to a chunk
  const placedBefore = shared.stats().placed;
  const { server } = await startServer();
  try {
    const c = await client(server);
    try {
      assertEquals(c.fabric, FABRIC_LABEL);
      assert(shared.stats().placed >= placedBefore + 2, "both ends' mappings are in chunks");
      const e = await c.call("test.Fabric", "Echo", pattern(100, 1), {
        attachment: pattern(50, 2),
      });
      assertEquals([e.path, e.response, e.attachment], ["EAGER", pattern(100, 1), pattern(50, 2)]);
      assert(!(e.response.buffer instanceof SharedArrayBuffer), "answers are the caller's copies");
      const lazy = await c.call("test.Fabric", "Sized", sized(100_000), {
        expectedResponseBytes: 100_000,
      });
      assertEquals([lazy.path, lazy.response], ["LAZY", expectedSized(100_000)]);
      const big = pattern(300_000, 3);
      const b = await c.call("test.Fabric", "Echo", big);
      assertEquals([b.path, b.response], ["BULK", big]);
    } finally {
      await c.close();
    }
  } finally {
    await server.close();
    shared.foreignBudget = budget;
  }
}, { skip: SHM_ONLY });
