/**
 * copyOut: every result is its own copy (the source may change after, results never overlap),
 * small and large, with aligned starts.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { copyOut } from "../../rpc/session/copy_out.ts";

test("copyOut: independent copies that survive changes of the source and of each other", () => {
  const src = new Uint8Array(4096).map((_, i) => i & 255);
  const sizes = [0, 1, 7, 64, 300, 512, 513, 3000];
  const outs = sizes.map((n, k) => copyOut(src, k * 3, n));
  src.fill(0xee);
  outs.forEach((o, k) => {
    assertEquals(o.length, sizes[k]);
    for (let i = 0; i < o.length; i++) {
      if (o[i] !== ((k * 3 + i) & 255)) throw new Error(`copy ${k} byte ${i} changed`);
    }
    assert(o.byteOffset % 8 === 0, "aligned start");
  });
  outs[3].fill(1);
  assertEquals(outs[2][0], 6, "writing one result leaves the others alone");
  assertEquals(outs[4][0], 12);
  // Many small copies (past a pool chunk): still independent.
  const many = Array.from(
    { length: 400 },
    (_, i) => copyOut(new Uint8Array(40).fill(i & 255), 0, 40),
  );
  many.forEach((o, i) => assertEquals(o[39], i & 255, `copy ${i}`));
});

test("copyOut: word-aligned and unaligned sources and offsets, many sources in turn", () => {
  const whole = new Uint8Array(8192).map((_, i) => (i * 7 + 3) & 255);
  // Three regions of one buffer (one starts off a 4-byte boundary) used in turn: each copy must
  // come from the source it names, whatever was copied from before.
  const sources = [whole.subarray(0, 2048), whole.subarray(2048 + 1, 4096), whole.subarray(4096)];
  const expect: { o: Uint8Array; src: Uint8Array; off: number }[] = [];
  for (let n = 0; n < 300; n++) {
    const src = sources[n % 3],
      len = 1 + (n * 13) % 70,
      off = ((n * 4) % 1800) + (n % 5 === 0 ? 1 : 0);
    expect.push({ o: copyOut(src, off, len), src, off });
  }
  const snapshot = expect.map((e) => Array.from(e.src.subarray(e.off, e.off + e.o.length)));
  whole.fill(0);
  expect.forEach((e, k) => {
    assertEquals(Array.from(e.o), snapshot[k], `copy ${k} (offset ${e.off}, ${e.o.length} B)`);
  });
});
