/**
 * LARGE_GET objects: `big:<size>` parsing, the deterministic generator and its range verifier,
 * and the LargeGet handler (generated objects, KV fallback, bad sizes, missing keys).
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { EREQUEST, RpcError } from "../../rpc/errors.ts";
import { KvStore } from "../../examples/demo/kv_store.ts";
import {
  fillLargeObject,
  generateLargeObject,
  LARGE_OBJECT_MAX_BYTES,
  LargeObjectSource,
  parseBigKey,
  verifyLargeObject,
} from "../../examples/demo/large_object.ts";
import { encodeKeyRequest, encodePutRequest } from "../../examples/demo/codec.ts";
import { demoService } from "../../examples/demo/service.ts";
import { tempDir } from "./util.ts";

test("parseBigKey reads sizes with k / m suffixes and ignores other keys", () => {
  assertEquals(parseBigKey("big:4096"), 4096);
  assertEquals(parseBigKey("big:64k"), 64 * 1024);
  assertEquals(parseBigKey("big:64K"), 64 * 1024);
  assertEquals(parseBigKey("big:1m"), 1024 * 1024);
  assertEquals(parseBigKey("big:64m"), LARGE_OBJECT_MAX_BYTES);
  assertEquals(parseBigKey("user:1"), undefined);
  assertEquals(parseBigKey("BIG:1k"), undefined, "prefix is case-sensitive");
});

test("parseBigKey refuses bad sizes with a clear INVALID_ARGUMENT", () => {
  for (
    const [key, text] of [
      ["big:", "expected big:<digits>"],
      ["big:abc", "expected big:<digits>"],
      ["big:1g", "expected big:<digits>"],
      ["big:-1", "expected big:<digits>"],
      ["big:1.5k", "expected big:<digits>"],
      ["big: 1k", "expected big:<digits>"],
      ["big:0", "outside 1..67108864"],
      ["big:65m", "outside 1..67108864"],
      ["big:999999999999", "outside"],
    ] as const
  ) {
    const e = assertThrows(() => parseBigKey(key), VerbusError, text);
    assertEquals(e.code, "INVALID_ARGUMENT", key);
  }
  assertThrows(() => parseBigKey("big:2k", 1024), VerbusError, "outside 1..1024");
});

test("generated objects are deterministic, size-dependent and verifiable by range", () => {
  const a = generateLargeObject(4099), b = generateLargeObject(4099);
  assertEquals(a, b, "same size, same bytes");
  const c = generateLargeObject(4100);
  assert(c.subarray(0, 64).some((x, i) => x !== a[i]), "a different size gives a different stream");
  const distinct = new Set(a).size;
  assert(distinct > 200, `bytes look random (${distinct} distinct values)`);
  assertEquals(verifyLargeObject(4099, a), -1);
  // Any unaligned sub-range, written into an unaligned view, equals the slice of the whole.
  for (const [off, len] of [[0, 1], [1, 7], [3, 4096], [4095, 4], [2, 0], [4098, 1]]) {
    const backing = new Uint8Array(len + 3);
    const part = backing.subarray(1, 1 + len);
    fillLargeObject(4099, part, off);
    assertEquals(part, a.subarray(off, off + len), `range ${off}+${len}`);
    assertEquals(verifyLargeObject(4099, part, off), -1);
  }
  const bad = a.slice();
  bad[1234] ^= 1;
  assertEquals(verifyLargeObject(4099, bad), 1234);
  assertEquals(verifyLargeObject(4099, a, 1), 0, "range past the end");
  assertThrows(() => fillLargeObject(10, new Uint8Array(4), 8), VerbusError, "outside");
});

test("LargeObjectSource caches generated objects and falls back to the KV", () => {
  const kv = new KvStore();
  const src = new LargeObjectSource(kv, { cacheBytes: 100 * 1024 });
  const o = src.get("big:64k");
  assertEquals(o.length, 65536);
  assertEquals(verifyLargeObject(65536, o), -1);
  assert(src.get("big:64k") === o, "second get is served from the cache");
  src.get("big:40k"); // evicts big:64k (64 + 40 > 100)
  assert(src.get("big:64k") !== o, "evicted object is regenerated");
  kv.put("plain", new Uint8Array([7, 8]));
  assertEquals(src.get("plain"), new Uint8Array([7, 8]));
  assertEquals(assertThrows(() => src.get("nothing"), VerbusError, "nothing").code, "NOT_FOUND");
});

test("LargeGet handler serves big:1m and KV keys, refuses bad sizes as bad requests", async () => {
  const dir = tempDir();
  try {
    const svc = demoService({ imageDir: dir.path })["verbus.Demo"];
    const big = await svc.LargeGet(encodeKeyRequest("big:1m"), {});
    assertEquals(big.length, 1 << 20);
    assertEquals(verifyLargeObject(1 << 20, big), -1);
    const value = new Uint8Array(100_000).fill(5);
    await svc.BigPut(encodePutRequest("blob", value), {});
    assertEquals(await svc.LargeGet(encodeKeyRequest("blob"), {}), value);
    for (const key of ["big:0", "big:12q", "big:100m"]) {
      let err: unknown;
      try {
        await svc.LargeGet(encodeKeyRequest(key), {});
      } catch (e) {
        err = e;
      }
      assert(
        err instanceof RpcError && err.errorCode === EREQUEST,
        `${key}: refused as a bad request, got ${err}`,
      );
      assert(err.errorText.includes(key), `${key}: error text names the key: ${err.errorText}`);
      assertEquals(err.context.reason, "INVALID_ARGUMENT");
    }
    let missing: unknown;
    try {
      await svc.LargeGet(encodeKeyRequest("absent"), {});
    } catch (e) {
      missing = e;
    }
    assert(
      missing instanceof RpcError && missing.errorCode === EREQUEST &&
        missing.errorText.includes("absent"),
      String(missing),
    );
    assertEquals(missing.context.reason, "NOT_FOUND");
  } finally {
    dir.remove();
  }
});
