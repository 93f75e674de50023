/**
 * baidu_std codec: RpcMeta encode/decode (cross-checked against @bufbuild/protobuf's independent
 * wire encoder/decoder), frame encoding, the incremental parser and its protocol errors.
 */
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { ProtocolError } from "../../errors.ts";
import {
  encodeFrame,
  encodeFrameTo,
  FRAME_HEADER_SIZE,
  FrameEncoder,
  FrameParser,
  writeHeader,
} from "../../rpc/protocol/frame.ts";
import { decodeRpcMeta, encodeRpcMeta, type RpcMeta } from "../../rpc/protocol/rpc_meta.ts";
import { assert, assertEquals, assertThrows, test } from "../harness.ts";

const te = new TextEncoder();

/** A meta with every field set, including values that need 10-byte varints and bigints. */
function fullMeta(): RpcMeta {
  return {
    request: {
      serviceName: "example.EchoService",
      methodName: "Echo",
      logId: 1234567890123,
      traceId: -5,
      spanId: 2n ** 62n + 7n,
      parentSpanId: Number.MAX_SAFE_INTEGER,
      requestId: "req-ü-42",
      timeoutMs: 250,
    },
    response: { errorCode: -1, errorText: "ошибка: bad thing" },
    compressType: 1,
    correlationId: 2n ** 63n - 1n,
    attachmentSize: 3,
    chunkInfo: new Uint8Array([8, 1, 16, 2]),
    authenticationData: te.encode("token"),
    streamSettings: new Uint8Array([8, 99]),
    userFields: new Map([["k1", "v1"], ["ключ", "значение"], ["", "empty key"]]),
  };
}

/** The same meta written field by field with @bufbuild/protobuf's BinaryWriter. */
function writeWithBufbuild(m: RpcMeta): Uint8Array {
  const w = new BinaryWriter();
  const r = m.request!;
  w.tag(1, WireType.LengthDelimited).fork()
    .tag(1, WireType.LengthDelimited).string(r.serviceName)
    .tag(2, WireType.LengthDelimited).string(r.methodName)
    .tag(3, WireType.Varint).int64(r.logId!)
    .tag(4, WireType.Varint).int64(r.traceId!)
    .tag(5, WireType.Varint).int64(r.spanId!)
    .tag(6, WireType.Varint).int64(r.parentSpanId!)
    .tag(7, WireType.LengthDelimited).string(r.requestId!)
    .tag(8, WireType.Varint).int32(r.timeoutMs!)
    .join();
  w.tag(2, WireType.LengthDelimited).fork()
    .tag(1, WireType.Varint).int32(m.response!.errorCode!)
    .tag(2, WireType.LengthDelimited).string(m.response!.errorText!)
    .join();
  w.tag(3, WireType.Varint).int32(m.compressType!);
  w.tag(4, WireType.Varint).int64(m.correlationId!);
  w.tag(5, WireType.Varint).int32(m.attachmentSize!);
  w.tag(6, WireType.LengthDelimited).bytes(m.chunkInfo!);
  w.tag(7, WireType.LengthDelimited).bytes(m.authenticationData!);
  w.tag(8, WireType.LengthDelimited).bytes(m.streamSettings!);
  for (const [k, v] of m.userFields!) {
    w.tag(9, WireType.LengthDelimited).fork()
      .tag(1, WireType.LengthDelimited).string(k)
      .tag(2, WireType.LengthDelimited).string(v)
      .join();
  }
  return w.finish();
}

test("RpcMeta with every field encodes byte-identically to @bufbuild/protobuf", () => {
  const m = fullMeta();
  assertEquals(encodeRpcMeta(m).slice(), writeWithBufbuild(m));
});

test("RpcMeta with every field round-trips (bigints where needed)", () => {
  const m = fullMeta();
  const back = decodeRpcMeta(encodeRpcMeta(m).slice());
  assertEquals(back, m);
  assertEquals(typeof back.correlationId, "bigint");
  assertEquals(typeof back.request!.logId, "number");
  assertEquals(back.request!.traceId, -5);
});

test("decoding @bufbuild/protobuf output reads every field", () => {
  const m = fullMeta();
  assertEquals(decodeRpcMeta(writeWithBufbuild(m)), m);
});

test("our encoding reads back through @bufbuild/protobuf's BinaryReader", () => {
  const bytes = encodeRpcMeta({
    request: { serviceName: "a.B", methodName: "C", timeoutMs: 7 },
    correlationId: 9,
  })
    .slice();
  const r = new BinaryReader(bytes);
  assertEquals(r.tag(), [1, WireType.LengthDelimited]);
  const sub = new BinaryReader(r.bytes());
  assertEquals(sub.tag(), [1, WireType.LengthDelimited]);
  assertEquals(sub.string(), "a.B");
  assertEquals(sub.tag(), [2, WireType.LengthDelimited]);
  assertEquals(sub.string(), "C");
  assertEquals(sub.tag(), [8, WireType.Varint]);
  assertEquals(sub.int32(), 7);
  assertEquals(r.tag(), [4, WireType.Varint]);
  assertEquals(r.int64(), 9n);
  assertEquals(r.pos, r.len);
});

test("unknown fields of every wire type are skipped", () => {
  const w = new BinaryWriter();
  w.tag(99, WireType.Varint).uint64(2n ** 63n);
  w.tag(4, WireType.Varint).int64(77);
  w.tag(100, WireType.Bit64).fixed64(5);
  w.tag(101, WireType.LengthDelimited).bytes(new Uint8Array(300));
  w.tag(102, WireType.Bit32).fixed32(1);
  w.tag(103, WireType.StartGroup).tag(1, WireType.Varint).int32(3).tag(103, WireType.EndGroup);
  w.tag(2, WireType.LengthDelimited).fork().tag(9, WireType.Varint).int32(1)
    .tag(1, WireType.Varint).int32(1001).join();
  assertEquals(decodeRpcMeta(w.finish()), { correlationId: 77, response: { errorCode: 1001 } });
});

test("a long string and a big sub-message get multi-byte length prefixes", () => {
  const long = "x".repeat(5000) + "é".repeat(100);
  const m: RpcMeta = { response: { errorCode: 2001, errorText: long }, correlationId: 1 };
  const bytes = encodeRpcMeta(m).slice();
  assertEquals(bytes, writeWithResponse(long));
  assertEquals(decodeRpcMeta(bytes), m);
});

function writeWithResponse(text: string): Uint8Array {
  const w = new BinaryWriter();
  w.tag(2, WireType.LengthDelimited).fork().tag(1, WireType.Varint).int32(2001)
    .tag(2, WireType.LengthDelimited).string(text).join();
  w.tag(4, WireType.Varint).int64(1);
  return w.finish();
}

test("repeated identical request metas decode to equal (shared, frozen) objects", () => {
  const m: RpcMeta = {
    request: { serviceName: "s.S", methodName: "M", timeoutMs: 5 },
    correlationId: 1,
  };
  const a = decodeRpcMeta(encodeRpcMeta(m).slice());
  m.correlationId = 2;
  const b = decodeRpcMeta(encodeRpcMeta(m).slice());
  assertEquals(a.request, b.request);
  assertEquals(b.correlationId, 2);
  assert(Object.isFrozen(b.request), "shared request meta must be frozen");
  m.request!.methodName = "N";
  assertEquals(decodeRpcMeta(encodeRpcMeta(m).slice()).request!.methodName, "N");
});

test("undecodable metas throw ProtocolError naming the defect", () => {
  assertThrows(
    () => decodeRpcMeta(new Uint8Array([0x20, 0xff])),
    ProtocolError,
    "varint runs past the end",
  );
  assertThrows(
    () => decodeRpcMeta(new Uint8Array([0x0a, 0x05, 1])),
    ProtocolError,
    "exceeds the remaining",
  );
  assertThrows(() => decodeRpcMeta(new Uint8Array([0x0f])), ProtocolError, "invalid wire type 7");
  assertThrows(
    () => decodeRpcMeta(new Uint8Array([0x0a, 0x02, 0x10, 0x01])),
    ProtocolError,
    "lacks required service_name",
  );
  assertThrows(
    () => decodeRpcMeta(new Uint8Array([0x0a, 0x03, 0x0a, 0x01, 0x41])),
    ProtocolError,
    "lacks required method_name",
  );
  assertThrows(() => decodeRpcMeta(new Uint8Array(11).fill(0xff)), ProtocolError, "varint");
  assertThrows(() => decodeRpcMeta(new Uint8Array([0x00])), ProtocolError, "field number 0");
});

// ----------------------------------------------------------------------------------------------
// Frames

interface Got {
  meta: RpcMeta;
  payload: Uint8Array;
  attachment: Uint8Array;
}

function collector(opts?: { maxBodySize?: number }): { parser: FrameParser; got: Got[] } {
  const got: Got[] = [];
  const parser = new FrameParser(
    (meta, payload, attachment) => got.push({ meta, payload, attachment }),
    opts,
  );
  return { parser, got };
}

function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

test("frame layout: PRPC, body_size and meta_size big-endian, meta, payload, attachment", () => {
  const payload = te.encode("hello"), att = te.encode("ATT");
  const meta: RpcMeta = { correlationId: 5 };
  const f = encodeFrame(meta, payload, att);
  const m = encodeRpcMeta(meta, 3).slice();
  assertEquals(Array.from(f.subarray(0, 4)), [0x50, 0x52, 0x50, 0x43]);
  const dv = new DataView(f.buffer, f.byteOffset);
  assertEquals(dv.getUint32(4), m.length + 5 + 3, "body_size");
  assertEquals(dv.getUint32(8), m.length, "meta_size");
  assertEquals(f.subarray(12, 12 + m.length), m);
  assertEquals(decodeRpcMeta(f, 12, 12 + m.length).attachmentSize, 3);
  assertEquals(f.subarray(12 + m.length), new Uint8Array([...payload, ...att]));
});

test("round trip: attachment, empty payload, big payload (3 MiB)", () => {
  const { parser, got } = collector();
  const big = pattern(3 << 20, 7);
  parser.push(encodeFrame({ correlationId: 1 }, te.encode("p"), te.encode("attach")));
  parser.push(encodeFrame({ correlationId: 2 }, new Uint8Array(0)));
  parser.push(encodeFrame({ correlationId: 3, response: { errorCode: 0 } }, big, pattern(1000, 3)));
  assertEquals(got.length, 3);
  assertEquals(got[0].payload, te.encode("p"));
  assertEquals(got[0].attachment, te.encode("attach"));
  assertEquals(got[1].payload.length, 0);
  assertEquals(got[1].attachment.length, 0);
  assertEquals(got[2].payload, big);
  assertEquals(got[2].attachment, pattern(1000, 3));
  assertEquals(got[2].meta.correlationId, 3);
});

test("frames split at every byte boundary parse the same", () => {
  const frames = [
    encodeFrame(
      { correlationId: 1, request: { serviceName: "a.B", methodName: "M" } },
      pattern(40, 1),
      pattern(9, 2),
    ),
    encodeFrame({ correlationId: 2 }, new Uint8Array(0)),
    encodeFrame({ correlationId: 3, userFields: new Map([["k", "v"]]) }, pattern(300, 5)),
  ];
  const stream = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  let o = 0;
  for (const f of frames) (stream.set(f, o), o += f.length);
  for (let cut = 0; cut <= stream.length; cut++) {
    const { parser, got } = collector();
    parser.push(stream.slice(0, cut));
    parser.push(stream.slice(cut));
    assertEquals(got.length, 3, `cut at ${cut}`);
    assertEquals(got[0].payload, pattern(40, 1), `cut at ${cut}`);
    assertEquals(got[0].attachment, pattern(9, 2), `cut at ${cut}`);
    assertEquals(got[2].payload, pattern(300, 5), `cut at ${cut}`);
    assertEquals(got.map((g) => g.meta.correlationId), [1, 2, 3]);
    assertEquals(parser.bufferedBytes, 0);
  }
  // and one byte at a time
  const { parser, got } = collector();
  for (let i = 0; i < stream.length; i++) parser.push(stream.slice(i, i + 1));
  assertEquals(got.map((g) => g.meta.correlationId), [1, 2, 3]);
  assertEquals(got[2].payload, pattern(300, 5));
});

test("many frames in one chunk, delivered in order", () => {
  const enc = new FrameEncoder();
  const parts: Uint8Array[] = [];
  for (let i = 0; i < 500; i++) {
    parts.push(enc.encode({ correlationId: i }, pattern(i % 50, i)).slice());
  }
  const total = parts.reduce((n, p) => n + p.length, 0);
  const chunk = new Uint8Array(total);
  let o = 0;
  for (const p of parts) (chunk.set(p, o), o += p.length);
  const { parser, got } = collector();
  parser.push(chunk);
  assertEquals(got.length, 500);
  for (let i = 0; i < 500; i++) {
    assertEquals(got[i].meta.correlationId, i);
    assertEquals(got[i].payload, pattern(i % 50, i));
  }
  assertEquals(parser.frames, 500);
});

test("encodeFrameTo writes into a sink exactly what encodeFrame returns", () => {
  const sink = {
    writeBuffer: new Uint8Array(1024),
    at: 100,
    committed: 0,
    reserve(n: number) {
      assert(n <= 1024 - this.at);
      return this.at;
    },
    commit(n: number) {
      this.committed = n;
    },
  };
  const meta: RpcMeta = { correlationId: 77, response: { errorCode: 1002, errorText: "nope" } };
  encodeFrameTo(sink, meta, pattern(70, 1), pattern(5, 2));
  const expected = encodeFrame(meta, pattern(70, 1), pattern(5, 2));
  assertEquals(sink.committed, expected.length);
  assertEquals(sink.writeBuffer.subarray(100, 100 + expected.length), expected);
});

test("stop() inside the handler hands the rest of the stream over", () => {
  const f1 = encodeFrame({ correlationId: 1 }, te.encode("x"));
  const raw = te.encode("RAW-BYTES");
  const chunk = new Uint8Array([...f1, ...raw]);
  const got: number[] = [];
  const parser: FrameParser = new FrameParser((m) => {
    got.push(Number(m.correlationId));
    parser.stop();
  });
  parser.push(chunk);
  parser.push(te.encode("+more"));
  assertEquals(got, [1]);
  assertEquals(new TextDecoder().decode(parser.takeRemaining()), "RAW-BYTES+more");
});

function header(body: number, meta: number): Uint8Array {
  const h = new Uint8Array(FRAME_HEADER_SIZE);
  writeHeader(h, 0, body, meta);
  return h;
}

test("bad magic is a ProtocolError showing the bytes, even on the first byte", () => {
  const { parser } = collector();
  const e = assertThrows(
    () => parser.push(te.encode("GET / HTTP/1.1\r\n")),
    ProtocolError,
    "bad magic",
  );
  assert(e.message.includes('"GET "'), e.message);
  assertEquals(e.code, "PROTOCOL");
  // the parser stays failed
  assertThrows(() => parser.push(encodeFrame({}, new Uint8Array(0))), ProtocolError, "bad magic");
  const one = collector();
  assertThrows(() => one.parser.push(new Uint8Array([0x51])), ProtocolError, "bad magic");
  // magic wrong in a later frame
  const two = collector();
  const good = encodeFrame({ correlationId: 1 }, new Uint8Array(0));
  assertThrows(
    () => two.parser.push(new Uint8Array([...good, 0x50, 0x52, 0x50, 0x44])),
    ProtocolError,
    "frame 2",
  );
  assertEquals(two.got.length, 1);
});

test("meta_size > body_size is a ProtocolError naming both", () => {
  const { parser } = collector();
  assertThrows(
    () => parser.push(header(10, 11)),
    ProtocolError,
    "meta_size=11 is bigger than body_size=10",
  );
});

test("oversize frame is refused from the header alone (default 64 MiB, configurable)", () => {
  const { parser } = collector();
  assertThrows(
    () => parser.push(header(64 * 1024 * 1024 + 1, 0)),
    ProtocolError,
    "body_size=67108865 exceeds max_body_size=67108864",
  );
  const small = collector({ maxBodySize: 100 });
  small.parser.push(encodeFrame({}, new Uint8Array(80)));
  assertEquals(small.got.length, 1);
  assertThrows(
    () => small.parser.push(encodeFrame({}, new Uint8Array(101))),
    ProtocolError,
    "max_body_size=100",
  );
});

test("attachment_size that does not fit is a ProtocolError", () => {
  const meta = encodeRpcMeta({ correlationId: 1, attachmentSize: 50 }).slice();
  const frame = new Uint8Array([
    ...header(meta.length + 10, meta.length),
    ...meta,
    ...new Uint8Array(10),
  ]);
  const { parser } = collector();
  assertThrows(
    () => parser.push(frame),
    ProtocolError,
    "bad attachment_size=50: only 10 bytes follow",
  );
  const neg = encodeRpcMeta({ correlationId: 1, attachmentSize: -1 }).slice();
  const c2 = collector();
  assertThrows(
    () => c2.parser.push(new Uint8Array([...header(neg.length, neg.length), ...neg])),
    ProtocolError,
    "bad attachment_size=-1",
  );
});

test("garbage meta is a ProtocolError", () => {
  const garbage = new Uint8Array([0xff, 0xff, 0xff]);
  const { parser } = collector();
  assertThrows(
    () => parser.push(new Uint8Array([...header(3, 3), ...garbage])),
    ProtocolError,
    "undecodable RpcMeta",
  );
});
