/**
 * The per-call frame fast paths (`rpc/protocol/frame_fast.ts`): request frames from a per-method
 * cache and answers written in place must be byte-identical to the general encoder's frames, and
 * fall back (or re-encode) where the shortcut does not apply.
 */
import { encodeFrame, FrameParser, type FrameSink } from "../../rpc/protocol/frame.ts";
import {
  encodeRequestFrameTo,
  encodeResponseFrameTo,
  RequestMetaCache,
} from "../../rpc/protocol/frame_fast.ts";
import { decodeRpcMeta, type RpcMeta } from "../../rpc/protocol/rpc_meta.ts";
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
          const prefix = cache.prefix(service, method, timeoutMs);
          encodeRequestFrameTo(s, prefix, id, pattern(payload, 1), pattern(att, 2));
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
  encodeRequestFrameTo(s, small.prefix("s.S", "M3", 1), 9, pattern(4, 4));
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

test("reuseAnswerMeta: plain answers share one meta object and read the same as decodeRpcMeta", () => {
  const metas: RpcMeta[] = [
    { correlationId: 1 },
    { correlationId: 2 ** 48 + 3 },
    { correlationId: 77, attachmentSize: 3 },
    { correlationId: 2n ** 60n }, // too big for the fast path
    { correlationId: 5, response: { errorCode: 1002, errorText: "nope" } },
    { correlationId: 6, compressType: 1 },
    { correlationId: -1 },
    { attachmentSize: 0 },
  ];
  const frames = metas.map((m) =>
    encodeFrame(m, pattern(10, 1), pattern(m.attachmentSize ?? 0, 2))
  );
  const seen: { meta: RpcMeta; copy: RpcMeta; payload: Uint8Array; att: Uint8Array }[] = [];
  const parser = new FrameParser((meta, payload, att) => {
    seen.push({ meta, copy: { ...meta }, payload, att });
  }, { reuseAnswerMeta: true });
  const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  frames.reduce((off, f) => (all.set(f, off), off + f.length), 0);
  parser.push(all);
  assertEquals(seen.length, metas.length);
  for (let i = 0; i < metas.length; i++) {
    const want = decodeRpcMeta(frames[i], 12, 12 + frames[i][11]);
    const got = seen[i].copy;
    assertEquals(got.correlationId, want.correlationId, `frame ${i} id`);
    assertEquals(got.attachmentSize, want.attachmentSize, `frame ${i} attachment_size`);
    assertEquals(got.response, want.response, `frame ${i} response`);
    assertEquals(got.compressType, want.compressType, `frame ${i} compress_type`);
    assertEquals(seen[i].payload, pattern(10, 1), `frame ${i} payload`);
    assertEquals(seen[i].att, pattern(metas[i].attachmentSize ?? 0, 2), `frame ${i} attachment`);
  }
  assert(seen[0].meta === seen[1].meta && seen[1].meta === seen[2].meta, "one shared object");
  for (const i of [3, 4, 5, 6, 7]) {
    assert(seen[i].meta !== seen[0].meta, `frame ${i} decoded in full`);
  }
  const plain = new FrameParser((meta) =>
    seen.push({ meta, copy: meta, payload: pattern(0, 0), att: pattern(0, 0) })
  );
  plain.push(frames[0]);
  plain.push(frames[1]);
  assert(
    seen.at(-1)!.meta !== seen.at(-2)!.meta,
    "without the option every frame has its own meta",
  );
});

test("a large answer leaves by reference into a sink that can take it; the bytes are the same", () => {
  for (const size of [64 * 1024 - 1, 64 * 1024, 1 << 20]) {
    const slab = sink();
    const queued: Uint8Array[] = [];
    const byRef: FrameSink = {
      get writeBuffer() {
        return slab.writeBuffer;
      },
      reserve: (n) => slab.reserve(n),
      commit: (n) => slab.commit(n),
      write(bytes) {
        queued.push(bytes);
        return true;
      },
    };
    const payload = pattern(size, 9);
    assert(encodeResponseFrameTo(byRef, 77, payload));
    const head = slab.bytes();
    const all = new Uint8Array(head.length + queued.reduce((n, q) => n + q.length, 0));
    all.set(head);
    if (queued.length > 0) all.set(queued[0], head.length);
    assertEquals(all, encodeFrame({ correlationId: 77 }, payload), `size ${size}`);
    assertEquals(queued.length, size >= 64 * 1024 ? 1 : 0, `size ${size}: by reference or not`);
    if (queued.length > 0) assert(queued[0] === payload, "the handler's own buffer, not a copy");
    // With an attachment the payload is copied (payload and attachment form one body).
    if (size < 1 << 20) {
      queued.length = 0;
      const fresh = sink();
      const att: FrameSink = { ...byRef, writeBuffer: fresh.writeBuffer, reserve: fresh.reserve };
      att.commit = fresh.commit;
      assert(encodeResponseFrameTo(att, 78, payload, pattern(5, 1)));
      assertEquals(queued.length, 0, "copied when there is an attachment");
      assertEquals(fresh.bytes(), encodeFrame({ correlationId: 78 }, payload, pattern(5, 1)));
    }
  }
});
