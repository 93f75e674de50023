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
