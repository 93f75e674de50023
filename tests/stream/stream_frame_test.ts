/**
 * The stream wire format against protobuf's own encoder (@bufbuild/protobuf's BinaryWriter, the
 * field numbers of brpc's streaming_rpc_meta.proto): StreamSettings and StreamFrameMeta encode to
 * the same bytes and decode back, ids past 2^53 and brpc's INVALID_STREAM_ID (-1) included;
 * truncated or malformed metas are ProtocolErrors naming the defect.
 */
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { ProtocolError } from "../../errors.ts";
import {
  decodeStreamFrameMeta,
  decodeStreamSettings,
  encodeStreamFrame,
  encodeStreamFrameMeta,
  encodeStreamSettings,
  FRAME_DATA,
  FRAME_FEEDBACK,
  FRAME_RST,
  INVALID_STREAM_ID,
} from "../../rpc/protocol/stream_frame.ts";
import { assertEquals, assertThrows, test } from "../harness.ts";

const BIG = (1n << 60n) + 5n;

test("StreamSettings: the bytes protobuf writes, and back", () => {
  for (const id of [0, 1, 300, 2 ** 40, BIG, INVALID_STREAM_ID]) {
    const w = new BinaryWriter().uint32(8).int64(id).uint32(16).bool(true).uint32(24).bool(true);
    w.uint32(32).int64(7).uint32(32).int64(BIG);
    const want = w.finish();
    const s = { streamId: id, needFeedback: true, writable: true, extraStreamIds: [7, BIG] };
    assertEquals([...encodeStreamSettings(s)], [...want]);
    assertEquals(decodeStreamSettings(want), s);
  }
  // packed extra_stream_ids, absent flags
  const packed = new BinaryWriter().uint32(8).int64(3).uint32(34).fork().int64(4).int64(5).join()
    .finish();
  assertEquals(decodeStreamSettings(packed).extraStreamIds, [4, 5]);
  assertEquals(decodeStreamSettings(packed).needFeedback, false);
});

test("StreamFrameMeta: the bytes protobuf writes, and back", () => {
  const w = new BinaryWriter().uint32(8).int64(BIG).uint32(16).int64(9).uint32(24).int32(FRAME_DATA)
    .uint32(32).bool(true);
  const data = { streamId: BIG, sourceStreamId: 9, frameType: FRAME_DATA, hasContinuation: true };
  assertEquals([...encodeStreamFrameMeta(data)], [...w.finish()]);
  const fb = new BinaryWriter().uint32(8).int64(2).uint32(16).int64(1).uint32(24).int32(
    FRAME_FEEDBACK,
  ).uint32(42).fork().uint32(8).int64(123456789).join().finish();
  const feedback = {
    streamId: 2,
    sourceStreamId: 1,
    frameType: FRAME_FEEDBACK,
    hasContinuation: false,
    consumedSize: 123456789,
  };
  assertEquals([...encodeStreamFrameMeta(feedback)], [...fb]);
  assertEquals(decodeStreamFrameMeta(fb, 0, fb.length), feedback);
  const rst = encodeStreamFrame({ streamId: -1, frameType: FRAME_RST, hasContinuation: false });
  assertEquals(new TextDecoder().decode(rst.subarray(0, 4)), "STRM");
  const meta = rst.subarray(12);
  assertEquals(decodeStreamFrameMeta(meta, 0, meta.length).streamId, -1);
});

test("malformed metas are ProtocolErrors naming the defect", () => {
  const cases: [number[], string][] = [
    [[0x10, 0x01], "lacks required stream_id"],
    [[0x08], "varint runs past the end"],
    [[0x08, 0x01, 0x2a, 0x05, 0x08], "length 5 exceeds the remaining bytes"],
    [[0x08, 0x01, 0x00], "field number 0"],
    [[0x08, 0x01, 0x0b], "unsupported wire type 3"],
    [
      [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
      "longer than 10 bytes",
    ],
  ];
  for (const [bytes, text] of cases) {
    const b = new Uint8Array(bytes);
    assertThrows(() => decodeStreamFrameMeta(b, 0, b.length), ProtocolError, text);
  }
  assertThrows(() => decodeStreamSettings(new Uint8Array([0x10, 1])), ProtocolError, "stream_id");
});
