/**
 * The per-call frame fast paths (`rpc/protocol/frame_fast.ts`): request frames from a per-method
 * cache and answers written in place must be byte-identical to the general encoder's frames, and
 * fall back (or re-encode) where the shortcut does not apply.
 */
import { encodeFrame, type FrameSink } from "../../rpc/protocol/frame.ts";
import { encodeResponseFrameTo, RequestMetaCache } from "../../rpc/protocol/frame_fast.ts";
import type { RpcMeta } from "../../rpc/protocol/rpc_meta.ts";
import { assert, assertEquals, test } from "../harness.ts";

/** A sink that appends frames to one buffer, as a connection's slab does. */
function sink(): FrameSink & { bytes(): Uint8Array } {
  const buf = new Uint8Array(1 << 20);
  let used = 0;
  return {
    writeBuffer: buf,
    reserve: () => used,
    commit(n: number) {
      used += n;
    },
    bytes: () => buf.slice(0, used),
  };
}

function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

const IDS = [0, 1, 127, 128, 300, 2 ** 31 - 1, 2 ** 31, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER];

test("cached request frames are byte-identical to encodeFrame (ids, timeouts, attachments)", () => {
  const cache = new RequestMetaCache();
  for (const id of IDS) {
    for (const timeoutMs of [1, 5000, 0x7fffffff]) {
      for (const [payload, att] of [[64, 0], [0, 0], [1000, 3], [70, 300]]) {
        for (const [service, method] of [["example.EchoService", "Echo"], ["a.B", "Ü"]]) {
          const s = sink();
          cache.encodeTo(s, service, method, timeoutMs, id, pattern(payload, 1), pattern(att, 2));
          const meta: RpcMeta = {
            request: { serviceName: service, methodName: method, timeoutMs },
            correlationId: id,
          };
          const want = encodeFrame(meta, pattern(payload, 1), pattern(att, 2));
          assertEquals(s.bytes(), want, `${service}.${method} id ${id} timeout ${timeoutMs}`);
        }
      }
    }
  }
});

test("the request cache re-encodes when the timeout of a method changes", () => {
  const cache = new RequestMetaCache();
  const a = cache.prefix("s.S", "M", 100);
  assert(cache.prefix("s.S", "M", 100) === a, "same method and timeout: the same bytes");
  const b = cache.prefix("s.S", "M", 200);
  assert(b !== a, "another timeout: new bytes");
  const want = encodeFrame(
    { request: { serviceName: "s.S", methodName: "M", timeoutMs: 200 } },
    pattern(0, 0),
  );
  assertEquals(b, want.subarray(12), "the request field with the new timeout");
  const small = new RequestMetaCache(2);
  for (let i = 0; i < 10; i++) small.prefix("s.S", `M${i}`, 1);
  const s = sink();
  small.encodeTo(s, "s.S", "M3", 1, 9, pattern(4, 4));
  const meta: RpcMeta = {
    request: { serviceName: "s.S", methodName: "M3", timeoutMs: 1 },
    correlationId: 9,
  };
  assertEquals(
    s.bytes(),
    encodeFrame(meta, pattern(4, 4)),
    "still right after the cache was emptied",
  );
});

test("answers written in place are byte-identical to encodeFrame", () => {
  for (const id of IDS) {
    for (const [payload, att] of [[64, 0], [0, 0], [100, 1], [5, 200]]) {
      const s = sink();
      assert(encodeResponseFrameTo(s, id, pattern(payload, 3), pattern(att, 4)), `id ${id}`);
      const want = encodeFrame({ correlationId: id }, pattern(payload, 3), pattern(att, 4));
      assertEquals(s.bytes(), want, `id ${id}, payload ${payload}, attachment ${att}`);
    }
  }
  const s = sink();
  assert(encodeResponseFrameTo(s, 7, pattern(3, 3), undefined), "no attachment given");
  assertEquals(s.bytes(), encodeFrame({ correlationId: 7 }, pattern(3, 3)));
});

test("answers whose id the shortcut cannot write are left to the general encoder", () => {
  for (const id of [2n ** 63n - 1n, 5n, -1, 1.5, Number.MAX_SAFE_INTEGER + 1]) {
    const s = sink();
    assertEquals(encodeResponseFrameTo(s, id, pattern(3, 3)), false, `id ${id}`);
    assertEquals(s.bytes().length, 0, "nothing written");
  }
});
