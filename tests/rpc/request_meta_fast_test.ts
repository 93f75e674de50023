/**
 * The server's fast path for plain request metas (`decodeRequestMetaFast`): the cached request
 * plus `correlation_id` [+ `attachment_size`] decodes to exactly what the full decoder gives;
 * every other shape is left to the full decoder (which names what is wrong), in and out of the
 * frame parser.
 */
import { ProtocolError } from "../../errors.ts";
import { encodeFrame, FrameParser } from "../../rpc/protocol/frame.ts";
import { decodeRpcMeta, encodeRpcMeta, type RpcMeta } from "../../rpc/protocol/rpc_meta.ts";
import { decodeRequestMetaFast } from "../../rpc/protocol/rpc_meta_decode.ts";
import { assert, assertEquals, assertThrows, test } from "../harness.ts";

const REQ = { serviceName: "bench.Echo", methodName: "Echo", timeoutMs: 30000 };
const bytes = (m: RpcMeta) => encodeRpcMeta(m).slice();
/** Decodes `m` once with the full decoder (which caches its request), then with the fast path. */
function fast(
  m: RpcMeta,
  prime: RpcMeta = { request: REQ, correlationId: 1 },
): RpcMeta | undefined {
  decodeRpcMeta(bytes(prime));
  const b = bytes(m);
  return decodeRequestMetaFast(b, 0, b.length);
}

test("plain requests after the first decode take the fast path and equal the full decode", () => {
  for (
    const m of [
      { request: REQ, correlationId: 7 },
      { request: REQ, correlationId: 0 },
      { request: REQ, correlationId: 2 ** 48 + 5 },
      { request: REQ, correlationId: 300, attachmentSize: 5 },
      { request: REQ, correlationId: 1, attachmentSize: 0x7fffffff },
    ] as RpcMeta[]
  ) {
    const got = fast(m);
    assert(got !== undefined, `fast path for ${JSON.stringify(m)}`);
    assertEquals(got, decodeRpcMeta(bytes(m)));
    assert(Object.isFrozen(got.request), "the request is the shared frozen one");
  }
});

test("any other shape is left to the full decoder", () => {
  const other: [string, RpcMeta][] = [
    ["another method", { request: { ...REQ, methodName: "Other" }, correlationId: 1 }],
    ["a log id", { request: { ...REQ, logId: 9 }, correlationId: 1 }],
    ["no correlation id", { request: REQ }],
    ["an id past 2^49", { request: REQ, correlationId: 2 ** 50 }],
    ["a negative id", { request: REQ, correlationId: -1 }],
    ["a bigint id", { request: REQ, correlationId: 2n ** 63n - 1n }],
    ["user fields", { request: REQ, correlationId: 1, userFields: new Map([["k", "v"]]) }],
    ["compression", { request: REQ, correlationId: 1, compressType: 1 }],
    ["a response field", { request: REQ, correlationId: 1, response: { errorCode: 1 } }],
    ["an answer", { correlationId: 1 }],
  ];
  for (const [what, m] of other) assertEquals(fast(m), undefined, what);
  // attachment_size that is negative as an int32 (the full decoder then refuses the frame)
  const neg = new Uint8Array([
    ...bytes({ request: REQ, correlationId: 1 }),
    0x28,
    0xff,
    0xff,
    0xff,
    0xff,
    0x0f,
  ]);
  decodeRpcMeta(bytes({ request: REQ, correlationId: 1 }));
  assertEquals(decodeRequestMetaFast(neg, 0, neg.length), undefined, "attachment_size >= 2^31");
  // bytes after the known fields (an unknown field 15)
  const tail = new Uint8Array([...bytes({ request: REQ, correlationId: 1 }), 0x78, 0x01]);
  assertEquals(decodeRequestMetaFast(tail, 0, tail.length), undefined, "a trailing field");
  assertEquals(decodeRpcMeta(tail).correlationId, 1, "the full decoder skips it");
});

test("through the parser: a mixed stream decodes as the full decoder does, one meta per frame", () => {
  const metas: RpcMeta[] = [
    { request: REQ, correlationId: 1 },
    { request: REQ, correlationId: 2 },
    { request: { ...REQ, logId: 5 }, correlationId: 3 },
    { request: REQ, correlationId: 4, attachmentSize: 2 },
    { request: REQ, correlationId: 5, userFields: new Map([["a", "b"]]) },
    { request: REQ, correlationId: 6 },
  ];
  const frames = metas.map((m, i) =>
    encodeFrame(m, new Uint8Array([i, i]), m.attachmentSize ? new Uint8Array([9, 9]) : undefined)
  );
  const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  frames.reduce((off, f) => (all.set(f, off), off + f.length), 0);
  const got: RpcMeta[] = [];
  const parser = new FrameParser((meta, payload, att) => {
    got.push(meta);
    assertEquals(payload, new Uint8Array([got.length - 1, got.length - 1]));
    if (meta.attachmentSize) assertEquals(att, new Uint8Array([9, 9]));
  });
  parser.push(all);
  assertEquals(got.length, metas.length);
  for (let i = 0; i < metas.length; i++) {
    const m = { ...metas[i] };
    if (!m.attachmentSize) delete m.attachmentSize;
    assertEquals(got[i], decodeRpcMeta(encodeRpcMeta(m).slice()), `frame ${i}`);
  }
  assert(got[0] !== got[1], "every frame gets a meta of its own");
});

test("a malformed meta after the cached request is still refused, naming the defect", () => {
  const good = bytes({ request: REQ, correlationId: 1 });
  decodeRpcMeta(good);
  // the cached request, then correlation_id with a varint that runs past the end
  const meta = new Uint8Array([...good.subarray(0, good.length - 2), 0x20, 0x80]);
  const body = meta.length;
  const frame = new Uint8Array(12 + body);
  frame.set([0x50, 0x52, 0x50, 0x43, 0, 0, 0, body, 0, 0, 0, body]);
  frame.set(meta, 12);
  const parser = new FrameParser(() => {
    throw new Error("no frame must be delivered");
  });
  assertThrows(() => parser.push(frame), ProtocolError, "varint runs past the end");
});
