/**
 * The baidu_std frame parser on lent chunks (brpc RDMA receive blocks, valid only during the
 * push): every chunk is overwritten right after its push, as a reposted block is, and nothing the
 * handlers got may change; the parser copies the whole frames of a block once (one buffer), the
 * body of a split frame once (bodies up to 1 MiB: no regrowth), and what it keeps while paused.
 * Owned chunks are still handed out as views.
 */
import { encodeFrame, FrameParser } from "../../rpc/protocol/frame.ts";
import { LENT_BODY_START } from "../../rpc/protocol/frame_parser.ts";
import { encodeStreamFrame } from "../../rpc/protocol/stream_frame.ts";
import { assert, assertEquals, test } from "../harness.ts";

function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 13 + seed) & 0xff;
  return b;
}

/** Feeds `wire` in lent chunks of `size` bytes, each poisoned after its push. */
function feedLent(p: FrameParser, wire: Uint8Array, size: number): void {
  const block = new Uint8Array(size);
  for (let off = 0; off < wire.length; off += size) {
    const n = Math.min(size, wire.length - off);
    block.set(wire.subarray(off, off + n));
    p.push(block.subarray(0, n), true);
    block.fill(0xdd);
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) (out.set(p, o), o += p.length);
  return out;
}

type Got = { id: number; payload: Uint8Array; attachment: Uint8Array };

function collector(): { got: Got[]; parser: FrameParser } {
  const got: Got[] = [];
  const parser = new FrameParser((m, payload, attachment) =>
    got.push({ id: Number(m.correlationId), payload, attachment })
  );
  return { got, parser };
}

test("lent parser: whole frames in a block are copied out once, in one buffer; nothing aliases the block", () => {
  const { got, parser } = collector();
  const frames = Array.from({ length: 40 }, (_, i) => ({
    p: pattern(20 + i * 3, i),
    a: i % 3 === 0 ? pattern(7 + i, i + 100) : new Uint8Array(0),
  }));
  const wire = concat(frames.map((f, i) => encodeFrame({ correlationId: i }, f.p, f.a)));
  assert(wire.length < 8192);
  feedLent(parser, wire, 8192);
  assertEquals(got.length, 40);
  got.forEach((g, i) => {
    assertEquals(g.id, i);
    assertEquals(g.payload, frames[i].p);
    assertEquals(g.attachment, frames[i].a);
  });
  assertEquals(parser.copiedBytes, wire.length);
  assert(got[20].payload.buffer === got[39].payload.buffer, "views of one copy");
});

test("lent parser: frames split across blocks — each body gathered straight from the blocks, once", () => {
  const { got, parser } = collector();
  const sizes = [100_000, 5000, 900_000, 3];
  const wire = concat(sizes.map((n, i) => encodeFrame({ correlationId: i }, pattern(n, i))));
  feedLent(parser, wire, 8160);
  assertEquals(got.map((g) => g.payload.length), sizes);
  got.forEach((g, i) => assertEquals(g.payload, pattern(sizes[i], i)));
  // Every byte at most once: bodies, headers split at block edges, payloads of whole frames.
  assert(parser.copiedBytes <= wire.length, `${parser.copiedBytes} > ${wire.length}`);
  assert(parser.copiedBytes >= 1_005_003);
});

test("lent parser: a body above 1 MiB grows from there (counted); owned chunks are still views", () => {
  const { got, parser } = collector();
  const n = LENT_BODY_START * 3;
  const wire = encodeFrame({ correlationId: 0 }, pattern(n, 1));
  feedLent(parser, wire, 65536);
  assertEquals(got[0].payload, pattern(n, 1));
  assert(parser.copiedBytes > wire.length, "regrowth copies are counted");
  const owned = collector();
  const w2 = encodeFrame({ correlationId: 1 }, pattern(5000, 2));
  owned.parser.push(w2);
  assertEquals(owned.got[0].payload.buffer, w2.buffer, "an owned whole frame is a view");
  assertEquals(owned.parser.copiedBytes, 0);
});

test("lent parser: bytes kept while paused are copies; stream frames are copied out", () => {
  const got: Got[] = [];
  const parser: FrameParser = new FrameParser((m, payload, attachment) => {
    got.push({ id: Number(m.correlationId), payload, attachment });
    if (got.length === 1) parser.pause();
  }, {
    onStreamFrame: (meta, payload) => streams.push([meta, payload]),
  });
  const streams: [Uint8Array, Uint8Array][] = [];
  const wire = concat([
    encodeFrame({ correlationId: 0 }, pattern(300, 0)),
    encodeFrame({ correlationId: 1 }, pattern(400, 1)),
    encodeStreamFrame({ streamId: 5, frameType: 2, hasContinuation: false }, pattern(500, 2)),
  ]);
  feedLent(parser, wire, 4096);
  assertEquals(got.length, 1);
  assertEquals(parser.heldBytes, wire.length - (12 + 2 + 300));
  parser.resume();
  assertEquals(got.map((g) => g.id), [0, 1]);
  assertEquals(got[1].payload, pattern(400, 1));
  assertEquals(streams.length, 1);
  assertEquals(streams[0][1], pattern(500, 2));
});
