/**
 * The rings alone (two objects as plain memory): byte streams of every alignment and size —
 * whole and partial blocks, aligned and unaligned sources — come out byte-exact
 * across wrap-around, with the free-block count and the tail as the protocol has them. Both
 * runtimes.
 */
import { loadHelper } from "../../ffi/helper.ts";
import { UbringRings } from "../../transport/brpc_ubring/ring.ts";
import { assert, assertEquals, test } from "../harness.ts";

/** Two 64 KiB + 64-byte objects (1024 blocks each), tails initialised as a server does. */
async function pair() {
  const helper = await loadHelper();
  const a = new Uint8Array(64 + 1024 * 64), b = new Uint8Array(64 + 1024 * 64);
  new Uint32Array(a.buffer)[8] = 1023; // a's tail: the last block of b's ring, which a writes
  new Uint32Array(b.buffer)[8] = 1023;
  return { writer: new UbringRings(a, b, helper), reader: new UbringRings(b, a, helper) };
}

test("brpc-ubring rings: every alignment and size, across wrap-around, byte-exact", async () => {
  const { writer, reader } = await pair();
  assertEquals(writer.freeBlocks(), 1023, "one block always stays empty");
  const backing = new Uint8Array(40_000);
  for (let i = 0; i < backing.length; i++) backing[i] = (i * 31 + 7) & 0xff;
  let seed = 1;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
  for (let round = 0; round < 400; round++) {
    const off = rand(9), len = 1 + rand(round % 3 === 0 ? 30_000 : 700);
    const src = backing.subarray(off, off + len); // byteOffset 0..8: aligned and not
    const got: Uint8Array[] = [];
    let sent = 0;
    while (sent < len) {
      const n = writer.write(src, sent, len - sent);
      assert(n >= 0, writer.error ?? "");
      sent += n;
      for (let c = reader.read(); c !== null; c = reader.read()) got.push(c);
    }
    const all = new Uint8Array(got.reduce((s, c) => s + c.length, 0));
    got.reduce((o, c) => (all.set(c, o), o + c.length), 0);
    assertEquals(all, src, `round ${round}: ${len} bytes from offset ${off}`);
    assertEquals(writer.freeBlocks(), 1023, "everything read: the tail is back behind the writer");
  }
  assertEquals([writer.error, reader.error], [null, null]);
});
