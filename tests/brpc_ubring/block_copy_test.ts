/**
 * The helper's UBRing block copy (`vb_ubring_scatter` / `vb_ubring_gather`) called directly, and
 * through the rings: block headers as brpc's protocol has them, wrap-around, a read that stops
 * where the caller's buffer is full, every lying header (a flag past EOF, a length of 0 or past
 * 60, a read position not below the length) refused naming the block with the blocks before it
 * consumed, arguments out of range refused without touching memory. Both runtimes.
 */
import { loadHelper } from "../../ffi/helper.ts";
import { VB_UBRING_BLOCK, VB_UBRING_GATHER } from "../../ffi/layouts/helper.ts";
import {
  VB_UBRING_BAD_FLAG,
  VB_UBRING_BAD_LENGTH,
  VB_UBRING_OK,
} from "../../ffi/symbols/helper.ts";
import {
  BLOCK,
  BLOCK_CUR,
  BLOCK_FLAG,
  BLOCK_LEN,
  CHUNK,
  OBJ,
  PAYLOAD,
} from "../../transport/brpc_ubring/layout.ts";
import { UbringRings } from "../../transport/brpc_ubring/ring.ts";
import { assert, assertEquals, test } from "../harness.ts";

const EINVAL = 22, ENOSPC = 28;

/** A ring of `blocks` blocks (plain memory) with a guard of 64 bytes on each side. */
function ring(blocks: number) {
  const all = new Uint8Array(64 + blocks * BLOCK + 64).fill(0xee);
  const data = all.subarray(64, 64 + blocks * BLOCK);
  data.fill(0);
  const guardsIntact = () =>
    all.subarray(0, 64).every((b) => b === 0xee) &&
    all.subarray(64 + blocks * BLOCK).every((b) => b === 0xee);
  return { data, guardsIntact };
}

const header = (data: Uint8Array, i: number) => {
  const b = i * BLOCK;
  return [data[b + BLOCK_FLAG], data[b + BLOCK_LEN], data[b + BLOCK_CUR]];
};

/** The status struct and its fields. */
function status() {
  const st = new Uint8Array(new ArrayBuffer(VB_UBRING_GATHER.$size));
  const w = new Uint32Array(st.buffer);
  const read = () => ({
    blocks: w[VB_UBRING_GATHER.blocks / 4],
    bytes: w[VB_UBRING_GATHER.bytes / 4],
    pos: w[VB_UBRING_GATHER.pos / 4],
    bad: w[VB_UBRING_GATHER.bad_block / 4],
    header: [st[VB_UBRING_GATHER.flag], st[VB_UBRING_GATHER.len], st[VB_UBRING_GATHER.cur]],
  });
  return { st, read };
}

const pattern = (n: number, seed = 3) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff);

test("brpc-ubring block copy: the protocol's block layout is the helper's", () => {
  assertEquals(
    [VB_UBRING_BLOCK.$size, VB_UBRING_BLOCK.flag, VB_UBRING_BLOCK.len, VB_UBRING_BLOCK.cur],
    [BLOCK, BLOCK_FLAG, BLOCK_LEN, BLOCK_CUR],
  );
  assertEquals(VB_UBRING_BLOCK.flag, PAYLOAD);
});

test("brpc-ubring block copy: scatter writes brpc's headers across wrap-around, gather takes them back", async () => {
  const s = (await loadHelper()).lib.symbols;
  const { data, guardsIntact } = ring(8);
  const src = pattern(200); // 4 blocks: 60, 60, 60, 20
  assertEquals(s.vb_ubring_scatter(data, data.length, 6, src, src.length), 4);
  assertEquals(header(data, 6), [CHUNK.EXIST, 60, 0]);
  assertEquals(header(data, 7), [CHUNK.EXIST, 60, 0]);
  assertEquals(header(data, 0), [CHUNK.EXIST, 60, 0], "wrapped to block 0");
  assertEquals(header(data, 1), [CHUNK.EOF, 20, 0]);
  assertEquals(header(data, 2), [CHUNK.NONE, 0, 0], "nothing past the write");
  const { st, read } = status();
  const out = new Uint8Array(1000);
  assertEquals(s.vb_ubring_gather(data, data.length, 6, out, out.length, st), VB_UBRING_OK);
  assertEquals(read(), { blocks: 4, bytes: 200, pos: 2, bad: 0, header: [0, 0, 0] });
  assertEquals(out.subarray(0, 200), src);
  for (const i of [6, 7, 0, 1]) assertEquals(header(data, i)[0], CHUNK.NONE, `block ${i} freed`);
  assert(guardsIntact(), "nothing written outside the ring");
});

test("brpc-ubring block copy: a gather stops before a block its buffer cannot take, and honours cur", async () => {
  const s = (await loadHelper()).lib.symbols;
  const { data } = ring(8);
  const src = pattern(150);
  s.vb_ubring_scatter(data, data.length, 0, src, src.length); // 60, 60, 30
  data[BLOCK + BLOCK_CUR] = 10; // a peer may have started a block (brpc's cur)
  const { st, read } = status();
  const out = new Uint8Array(100);
  assertEquals(s.vb_ubring_gather(data, data.length, 0, out, 100, st), VB_UBRING_OK);
  assertEquals(read().blocks, 1, "60 + 50 > 100: the second block waits");
  assertEquals(read().pos, 1);
  assertEquals(s.vb_ubring_gather(data, data.length, 1, out, 100, st), VB_UBRING_OK);
  assertEquals([read().blocks, read().bytes, read().pos], [2, 80, 3]);
  assertEquals(out.subarray(0, 80), src.subarray(70, 150));
  assertEquals(s.vb_ubring_gather(data, data.length, 3, out, 100, st), VB_UBRING_OK);
  assertEquals([read().blocks, read().bytes], [0, 0], "an empty ring gives nothing");
});

test("brpc-ubring block copy: every lying header is refused naming the block, those before it consumed", async () => {
  const s = (await loadHelper()).lib.symbols;
  const cases: [string, number, number, number, number][] = [
    ["flag past EOF", 3, 60, 0, VB_UBRING_BAD_FLAG],
    ["flag 255", 255, 60, 0, VB_UBRING_BAD_FLAG],
    ["length 0", CHUNK.EOF, 0, 0, VB_UBRING_BAD_LENGTH],
    ["length past 60", CHUNK.EXIST, 61, 0, VB_UBRING_BAD_LENGTH],
    ["length 255", CHUNK.EOF, 255, 0, VB_UBRING_BAD_LENGTH],
    ["cur at the length", CHUNK.EOF, 20, 20, VB_UBRING_BAD_LENGTH],
    ["cur past the length", CHUNK.EOF, 20, 200, VB_UBRING_BAD_LENGTH],
  ];
  for (const [what, flag, len, cur, rc] of cases) {
    const { data, guardsIntact } = ring(4);
    const src = pattern(60);
    s.vb_ubring_scatter(data, data.length, 3, src, 60); // block 3: good, then block 0 lies
    data[BLOCK_FLAG] = flag;
    data[BLOCK_LEN] = len;
    data[BLOCK_CUR] = cur;
    const { st, read } = status();
    const out = new Uint8Array(4096).fill(0xaa);
    assertEquals(s.vb_ubring_gather(data, data.length, 3, out, out.length, st), rc, what);
    assertEquals(read(), { blocks: 1, bytes: 60, pos: 0, bad: 0, header: [flag, len, cur] }, what);
    assertEquals(out.subarray(0, 60), src, what);
    assert(
      out.subarray(60).every((b) => b === 0xaa),
      `${what}: nothing copied past the good block`,
    );
    assertEquals(data[BLOCK_FLAG], flag, `${what}: the bad block is left alone`);
    assert(guardsIntact(), what);
  }
});

test("brpc-ubring block copy: arguments out of range are refused without touching memory", async () => {
  const s = (await loadHelper()).lib.symbols;
  const { data, guardsIntact } = ring(4);
  const src = pattern(400), { st, read } = status(), out = new Uint8Array(100);
  assertEquals(s.vb_ubring_scatter(data, data.length, 4, src, 10), -EINVAL, "first past the ring");
  assertEquals(s.vb_ubring_scatter(data, data.length, 0, src, 0), -EINVAL, "nothing to write");
  assertEquals(s.vb_ubring_scatter(data, data.length, 0, src, 181), -ENOSPC, "4 blocks of 4");
  assertEquals(s.vb_ubring_scatter(data, 100, 0, src, 10), -ENOSPC, "a ring of one block");
  assertEquals(
    s.vb_ubring_gather(data, data.length, 4, out, 100, st),
    -EINVAL,
    "pos past the ring",
  );
  assertEquals(read().blocks, 0);
  assertEquals(s.vb_ubring_gather(data, data.length, 0, null, 100, st), -EINVAL, "no buffer");
  assert(data.every((b) => b === 0) && guardsIntact(), "the ring is untouched");
});

test("brpc-ubring rings: a lying block fails the rings naming it; the bytes before it still come once", async () => {
  const helper = await loadHelper();
  const a = new Uint8Array(OBJ.DATA + 16 * BLOCK), b = new Uint8Array(OBJ.DATA + 16 * BLOCK);
  new Uint32Array(a.buffer)[OBJ.TAIL / 4] = 15;
  new Uint32Array(b.buffer)[OBJ.TAIL / 4] = 15;
  const writer = new UbringRings(a, b, helper), reader = new UbringRings(b, a, helper);
  const src = pattern(100);
  assertEquals(writer.write(src, 0, 100), 100);
  b[OBJ.DATA + 2 * BLOCK + BLOCK_FLAG] = 7; // the block after the write: a lying flag
  const got = reader.read();
  assertEquals(got, src);
  assertEquals(reader.error, "block 2 of this side's ring has flag 7 (not 0, 1 or 2)");
  assertEquals(reader.read(), null, "nothing more once failed");
});

test("brpc-ubring block copy: rings in shared memory (where the map arena places objects)", async () => {
  const helper = await loadHelper();
  const sab = new SharedArrayBuffer(2 * (OBJ.DATA + 64 * BLOCK));
  const a = new Uint8Array(sab, 0, OBJ.DATA + 64 * BLOCK);
  const b = new Uint8Array(sab, a.length, OBJ.DATA + 64 * BLOCK);
  new Uint32Array(sab, 0, 16)[OBJ.TAIL / 4] = 63;
  new Uint32Array(sab, a.length, 16)[OBJ.TAIL / 4] = 63;
  const writer = new UbringRings(a, b, helper), reader = new UbringRings(b, a, helper);
  const src = pattern(3000, 9);
  assertEquals(writer.write(src, 0, src.length), src.length);
  assertEquals(reader.read(), src);
  assertEquals(writer.freeBlocks(), 63);
});
