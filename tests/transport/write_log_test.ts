/**
 * The write log (transport/write_log.ts) over a simulated link: the "post" copies a sealed batch
 * into the receiver's log, as one RDMA WRITE would, and the receiver writes its applied count into
 * the sender's ack word. Order, merging, wrap-around, flow control and hostile batches.
 */
import { assert, assertEquals, test } from "../harness.ts";
import {
  LOG_FULL,
  LOG_HEADER_BYTES,
  LOG_SEAL_FIRST,
  LOG_TAIL_BYTES,
  LogReader,
  logSizeProblem,
  LogWriter,
} from "../../transport/write_log.ts";

const S = 8192, L = 16384;

/** A one-way link: writer on side A, reader on side B. */
function link(maxBatch = 2048) {
  const a = new Uint8Array(S + L + LOG_TAIL_BYTES), b = new Uint8Array(S + L + LOG_TAIL_BYTES);
  const ackA = new Int32Array(a.buffer);
  const writer = new LogWriter(new Uint8Array(L), maxBatch, ackA, (S + L) >> 2);
  const reader = new LogReader(b, S, L);
  let posts = 0;
  const post = (): number => {
    const n = writer.seal(false);
    if (n > 0) {
      b.set(writer.outbox.subarray(writer.sealedAt, writer.sealedAt + n), S + writer.sealedAt);
      posts++;
    }
    return n;
  };
  const apply = (): number | string => reader.applyNext();
  const ack = () => {
    ackA[(S + L) >> 2] = reader.applied | 0;
    reader.ackedUpTo = reader.applied;
  };
  return { a, b, writer, reader, post, apply, ack, posts: () => posts };
}

function bytes(n: number, seed: number): Uint8Array {
  const u = new Uint8Array(n);
  for (let i = 0; i < n; i++) u[i] = (seed * 31 + i) & 0xff;
  return u;
}

test("records land in order once their batch is applied; adjacent writes merge into one record", () => {
  const { b, writer, post, apply } = link();
  assertEquals(writer.reserve(100, 8) >= 0, true);
  writer.outbox.set(bytes(8, 1), writer.reserve(200, 8)); // a second record
  const at = writer.reserve(208, 4); // adjacent to the last: extends it
  writer.outbox.set(bytes(4, 2), at);
  assertEquals(writer.pending, 2, "the adjacent write merged into the last record");
  const n = post();
  assertEquals(n, LOG_HEADER_BYTES + 8 + 8 + 8 + 16, "header + two records, each padded to 8");
  assertEquals(
    b.subarray(200, 212).some((x) => x !== 0),
    false,
    "nothing lands before it is applied",
  );
  assertEquals(apply(), 2);
  assertEquals([...b.subarray(200, 208)], [...bytes(8, 1)]);
  assertEquals([...b.subarray(208, 212)], [...bytes(4, 2)]);
});

test("a later record to the same place wins (body first, state last, in one batch)", () => {
  const { b, writer, post, apply } = link();
  const w = (off: number, v: number) => {
    const at = writer.reserve(off, 4);
    new DataView(writer.outbox.buffer).setUint32(at, v, true);
  };
  w(64, 1);
  w(68, 2);
  w(64, 3); // not adjacent to 72: a new record, applied after the first
  post();
  assertEquals(apply(), 2);
  const d = new DataView(b.buffer);
  assertEquals([d.getUint32(64, true), d.getUint32(68, true)], [3, 2]);
});

test("many laps: batches wrap at the log's end without straddling it, and every byte arrives", () => {
  const { b, writer, post, apply, ack } = link(1024);
  let laps = 0, prevAt = -1;
  for (let round = 0; round < 400; round++) {
    for (let k = 0; k < 5; k++) {
      const off = ((round * 5 + k) * 40) % (S - 64), src = bytes(37, round + k);
      let at = writer.reserve(off, src.length);
      if (at === LOG_SEAL_FIRST) {
        post();
        assertEquals(typeof apply(), "number");
        at = writer.reserve(off, src.length);
      }
      assert(at >= 0, `round ${round}: room (status ${at})`);
      writer.outbox.set(src, at);
    }
    const n = post();
    assert(writer.sealedAt + n <= L, "a batch never crosses the log's end");
    if (writer.sealedAt < prevAt) laps++;
    prevAt = writer.sealedAt;
    assertEquals(apply(), 5);
    const off = ((round * 5 + 4) * 40) % (S - 64);
    assertEquals([...b.subarray(off, off + 37)], [...bytes(37, round + 4)], `round ${round}`);
    ack();
  }
  assert(laps >= 5, `the log wrapped (${laps} laps)`);
  assertEquals(writer.unacked, 0);
});

test("flow control: without acks the writer says FULL, never overwrites; an ack frees the room", () => {
  const { writer, post, apply, ack } = link(1024);
  let full = false, batches = 0;
  for (let i = 0; i < 1000 && !full; i++) {
    const at = writer.reserve((i * 64) % S, 60);
    if (at === LOG_FULL) full = true;
    else if (at === LOG_SEAL_FIRST) post(), batches++;
  }
  assert(full, "the log filled up");
  assert(writer.unacked <= L, `unacked ${writer.unacked} ≤ ${L}`);
  for (let i = 0; i < batches; i++) assertEquals(typeof apply(), "number", `batch ${i}`);
  assertEquals(writer.reserve(0, 60), LOG_FULL, "still full until the ack arrives");
  ack();
  assert(writer.reserve(0, 60) >= 0, "room again after the ack");
});

test("acks only when FULL, for many laps: a wrap that meets FULL resumes at 0 and nothing is lost", () => {
  const { b, writer, post, apply, ack } = link(1024);
  let fulls = 0, sealed = 0, applied = 0;
  for (let i = 0; i < 3000; i++) {
    const off = (i * 48) % (S - 64), src = bytes(41, i);
    let at = writer.reserve(off, src.length);
    if (at === LOG_SEAL_FIRST) {
      post(), sealed++;
      at = writer.reserve(off, src.length);
    }
    if (at === LOG_FULL) { // the receiver applies everything and acknowledges
      fulls++;
      if (writer.pending > 0) post(), sealed++;
      for (; applied < sealed; applied++) {
        assertEquals(typeof apply(), "number", `batch ${applied}`);
      }
      ack();
      at = writer.reserve(off, src.length);
    }
    assert(at >= 0, `write ${i}: room after the ack (status ${at})`);
    writer.outbox.set(src, at);
    if (i % 7 === 6) post(), sealed++;
    if (i % 7 === 6) {
      for (; applied < sealed; applied++) {
        assertEquals(typeof apply(), "number", `batch ${applied}`);
      }
      assertEquals([...b.subarray(off, off + 41)], [...src], `write ${i} landed`);
    }
  }
  assert(fulls >= 10, `the log was full ${fulls} times`);
});

test("an empty batch is a kick; nothing to seal is nothing posted", () => {
  const { writer, apply, b, reader } = link();
  assertEquals(writer.seal(false), 0);
  const n = writer.seal(true);
  assertEquals(n, LOG_HEADER_BYTES);
  b.set(writer.outbox.subarray(writer.sealedAt, writer.sealedAt + n), S + writer.sealedAt);
  assertEquals(apply(), 0);
  assertEquals(reader.applied, LOG_HEADER_BYTES);
});

test("hostile batches are errors naming what is wrong, and nothing lands outside the rpc region", () => {
  const cases: [string, (h: DataView, at: number) => void, RegExp][] = [
    ["wrong seq", (h, at) => h.setUint32(at, 7, true), /batch 1 is neither at offset 0/],
    ["huge length", (h, at) => h.setUint32(at + 4, L * 2, true), /claims 32768 bytes/],
    ["odd length", (h, at) => h.setUint32(at + 4, 33, true), /claims 33 bytes/],
    ["more records", (h, at) => h.setUint32(at + 8, 9, true), /claims 9 records but ends after 1/],
    [
      "record too long",
      (h, at) => h.setUint32(at + 20, 4000, true),
      /record 0 of 4000 bytes runs past/,
    ],
    [
      "outside the region",
      (h, at) => h.setUint32(at + 16, S - 2, true),
      /targets \[8190, \+8\), past the 8192-byte region/,
    ],
  ];
  for (const [name, spoil, want] of cases) {
    const { b, writer, apply } = link();
    writer.outbox.set(bytes(8, 5), writer.reserve(16, 8));
    const n = writer.seal(false);
    b.set(writer.outbox.subarray(0, n), S);
    spoil(new DataView(b.buffer), S);
    const r = apply();
    assert(typeof r === "string" && want.test(r), `${name}: ${r}`);
    assertEquals(
      b.subarray(S - 8, S).some((x) => x !== 0),
      false,
      `${name}: nothing written near the end`,
    );
  }
});

test("sizes and limits are checked", () => {
  assertEquals(logSizeProblem(1 << 20), null);
  assert(/multiple of 4096/.test(logSizeProblem(5000) ?? ""));
  let threw = "";
  try {
    new LogWriter(new Uint8Array(L), 100, new Int32Array(16), 0);
  } catch (e) {
    threw = (e as Error).message;
  }
  assert(/batch limit 100/.test(threw), threw);
  threw = "";
  try {
    new LogReader(new Uint8Array(S + L), S, L);
  } catch (e) {
    threw = (e as Error).message;
  }
  assert(/no room for a 16384-byte log/.test(threw), threw);
});
