/**
 * KV store: sharding by FNV-1a, limits, ownership, and the KvPut / KvGet / MGet handlers used by
 * many concurrent sessions.
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { fnv1a32, KvStore } from "../../examples/demo/kv_store.ts";
import {
  decodeDynamicArray,
  decodeGetResponse,
  decodePutResponse,
  encodeKeyRequest,
  encodeMGetRequest,
  encodePutRequest,
} from "../../examples/demo/codec.ts";
import { type DemoCallContext, demoService } from "../../examples/demo/service.ts";
import { tempDir } from "./util.ts";

const te = new TextEncoder();

test("fnv1a32 matches the published FNV-1a 32 test vectors", () => {
  assertEquals(fnv1a32(te.encode("")), 0x811c9dc5);
  assertEquals(fnv1a32(te.encode("a")), 0xe40c292c);
  assertEquals(fnv1a32(te.encode("foobar")), 0xbf9cf968);
  assertEquals(fnv1a32(te.encode("xfoobarx"), 1, 7), 0xbf9cf968, "sub-range");
});

test("keys land on the shard FNV-1a of their UTF-8 bytes picks, spread over all shards", () => {
  const kv = new KvStore({ shards: 16 });
  for (let i = 0; i < 4000; i++) {
    const key = `key-${i}-ü`;
    assertEquals(kv.shardOf(key), fnv1a32(te.encode(key)) % 16, key);
    assertEquals(kv.shardOf(te.encode(key)), kv.shardOf(key), "bytes and string agree");
    kv.put(key, new Uint8Array([i & 0xff]));
  }
  const stats = kv.stats();
  assertEquals(stats.length, 16);
  assertEquals(stats.reduce((s, x) => s + x.entries, 0), 4000);
  for (const [i, s] of stats.entries()) {
    assert(s.entries > 150 && s.entries < 350, `shard ${i} has ${s.entries} of 4000`);
  }
  assertEquals(kv.size, 4000);
});

test("put copies the value, get returns it, delete and byte accounting are exact", () => {
  const kv = new KvStore();
  const v = new Uint8Array([1, 2, 3]);
  assertEquals(kv.put("k", v), false);
  v[0] = 99; // the caller reuses its buffer
  assertEquals(kv.get("k"), new Uint8Array([1, 2, 3]));
  assertEquals(kv.totalBytes, 1 + 3);
  assertEquals(kv.put("k", new Uint8Array(10)), true, "replaced");
  assertEquals(kv.totalBytes, 1 + 10);
  assertEquals(kv.mget(["k", "nope"]), [new Uint8Array(10), undefined]);
  assertEquals(kv.delete("k"), true);
  assertEquals(kv.delete("k"), false);
  assertEquals(kv.get("k"), undefined);
  assertEquals(kv.totalBytes, 0);
  assertEquals(kv.size, 0);
});

test("key and value limits are enforced with clear errors and leave the store unchanged", () => {
  const kv = new KvStore({ maxKeyBytes: 8, maxValueBytes: 16, maxTotalBytes: 40 });
  assertEquals(
    assertThrows(() => kv.put("", new Uint8Array(1)), VerbusError, "empty").code,
    "INVALID_ARGUMENT",
  );
  assertEquals(
    assertThrows(() => kv.put("123456789", new Uint8Array(1)), VerbusError, "8 UTF-8 bytes").code,
    "BOUNDS",
  );
  kv.put("12345678", new Uint8Array(1)); // exactly the limit
  assertEquals(
    assertThrows(() => kv.put("ééééé", new Uint8Array(1)), VerbusError, "longer").code,
    "BOUNDS",
  );
  assertEquals(
    assertThrows(() => kv.put("k", new Uint8Array(17)), VerbusError, "16 bytes").code,
    "BOUNDS",
  );
  assertEquals(
    assertThrows(() => kv.get(new Uint8Array([0xff, 0xfe])), VerbusError, "UTF-8").code,
    "INVALID_ARGUMENT",
  );
  assertEquals(
    assertThrows(() => kv.get("a\ud800"), VerbusError, "surrogate").code,
    "INVALID_ARGUMENT",
  );
  kv.put("a", new Uint8Array(16)); // 9 + 17 = 26 bytes
  assertEquals(
    assertThrows(() => kv.put("b", new Uint8Array(16)), VerbusError, "full").code,
    "FULL",
  );
  assertEquals(kv.get("b"), undefined);
  assertEquals(kv.totalBytes, 26);
  assertEquals(
    assertThrows(() => kv.mget(["a", ""]), VerbusError, "MGET key 1").code,
    "INVALID_ARGUMENT",
  );
  assertThrows(() => new KvStore({ shards: 0 }), VerbusError, "shards");
});

test("many concurrent sessions through KvPut/KvGet/MGet see one consistent store", async () => {
  const dir = tempDir();
  try {
    const kv = new KvStore({ shards: 8 });
    const svc = demoService({ kv, imageDir: dir.path })["verbus.Demo"];
    const ctx: DemoCallContext = {};
    const tick = () => new Promise<void>((r) => setTimeout(r, 0));
    const session = async (s: number) => {
      for (let i = 0; i < 50; i++) {
        const key = `s${s}/k${i % 10}`;
        const value = te.encode(`${s}:${i}`);
        decodePutResponse(await svc.KvPut(encodePutRequest(key, value), ctx));
        await tick(); // interleave with the other sessions
        assertEquals(decodeGetResponse(await svc.KvGet(encodeKeyRequest(key), ctx)), value, key);
        // a shared key every session writes
        await svc.KvPut(encodePutRequest("shared", te.encode(`${s}`)), ctx);
      }
    };
    await Promise.all(Array.from({ length: 20 }, (_, s) => session(s)));
    assertEquals(kv.size, 20 * 10 + 1);
    const keys = Array.from({ length: 20 }, (_, s) => `s${s}/k9`);
    const got = decodeDynamicArray(await svc.MGet(encodeMGetRequest([...keys, "missing"]), ctx));
    assertEquals(got.length, 21);
    for (let s = 0; s < 20; s++) assertEquals(got[s], te.encode(`${s}:49`), keys[s]);
    assertEquals(got[20], undefined);
    const shared = decodeGetResponse(await svc.KvGet(encodeKeyRequest("shared"), ctx));
    assert(
      shared !== undefined && /^\d+$/.test(new TextDecoder().decode(shared)),
      "shared key holds one session's value",
    );
    assert(kv.stats().every((s) => s.entries > 0), "every shard used");
  } finally {
    dir.remove();
  }
});

test("a steady stream of puts reuses the store's buffers: no fresh buffer per put (issue 12)", () => {
  const kv = new KvStore();
  const value = new Uint8Array(20_000);
  for (let i = 0; i < 5000; i++) {
    value[0] = i & 0xff;
    kv.put(`k${i % 64}`, value.subarray(0, 20_000 - (i % 900))); // sizes within one class
  }
  const m = kv.memory();
  assertEquals(m.allocations, 64, "one buffer per key, made once");
  assertEquals(m.inPlace, 5000 - 64);
  // k7's last put was i = 4999: its first byte and its length.
  assertEquals([kv.get("k7")![0], kv.get("k7")!.length], [4999 & 0xff, 20_000 - 4999 % 900]);
  const held = kv.get("k3")!;
  kv.put("k3", new Uint8Array(held.length).fill(9));
  assert(kv.get("k3")!.buffer === held.buffer, "overwritten in place");
  // Replaced by another size: the old buffer goes free and serves the next put of its class.
  kv.put("k3", new Uint8Array(100));
  kv.put("new", new Uint8Array(20_000));
  assertEquals(kv.memory().allocations, 65, "only the 100-byte value was new");
  assertEquals(kv.memory().reuses, 1);
  assert(kv.reservedBytes <= 65 * 20_480 + 200, `reserved ${kv.reservedBytes}`);
});

test("maxTotalBytes bounds the buffers held; past it a put is refused with FULL", () => {
  const kv = new KvStore({ maxTotalBytes: 100_000 });
  let refused: VerbusError | undefined;
  for (let i = 0; i < 10 && refused === undefined; i++) {
    try {
      kv.put(`k${i}`, new Uint8Array(20_000)); // 20,480 bytes each
    } catch (e) {
      refused = e as VerbusError;
    }
  }
  assertEquals(refused?.code, "FULL");
  assert(/KV store is full: .*100000 bytes/.test(refused!.message), refused!.message);
  assertEquals(kv.size, 4);
  assert(kv.reservedBytes <= 100_000, `reserved ${kv.reservedBytes}`);
  kv.delete("k0"); // its buffer is kept free and counted, then reused
  kv.put("again", new Uint8Array(19_000));
  assertEquals([kv.size, kv.memory().reuses], [4, 1]);
  assert(kv.reservedBytes <= 100_000);
});
