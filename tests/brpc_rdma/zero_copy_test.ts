/**
 * brpc's RDMA mode without a per-message copy, on the host (in-memory QPs, `fake_qp.ts`, whose
 * receive blocks are a reused pool poisoned after each receive and whose sends can be read late):
 * frames the sender encodes leave from its registered send ring in place; writes too big for the
 * ring, and output while it is full, are copied into it once; ring bytes are reused only after
 * their send completed; receive blocks are lent to the parser, which copies each byte once (the
 * whole frames of a block in one buffer; a frame split across blocks: its body, from the blocks); paused reading holds copies and withholds credits;
 * a handler that does not take lent chunks gets copies. The connection's counters say each.
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { type Handler, serve } from "../../rpc/server/server.ts";
import { _setBrpcQpFactory } from "../../transport/brpc_rdma/mod.ts";
import type { BrpcRdmaOptions } from "../../transport/brpc_rdma/options.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { connPair, FrameReceiver, sendFrame, until } from "./conn_pair.ts";
import { FakeQp } from "./fake_qp.ts";

test("brpc-rdma zero copy: encoded frames leave from the send ring in place, many per block; blocks are lent and the parser copies each byte once", async () => {
  const p = connPair({});
  try {
    const size = (i: number) => 100 + (i % 200);
    const r = new FrameReceiver(p.b, size);
    let total = 0, payload = 0, n = 0;
    for (let round = 0; round < 10; round++) {
      for (let k = 0; k < 50; k++, n++) payload += sendFrame(p.a, n, size(n));
      total += p.a.pendingWriteBytes;
      await until(() => r.frames === n && p.a.pendingWriteBytes === 0, 5000, r);
    }
    assertEquals(r.bad, []);
    const ca = p.a.counters, cb = p.b.counters;
    assertEquals([ca.sentInPlace, ca.copiedOnSend], [total, 0]);
    assertEquals([cb.receivedLent, cb.copiedOnReceive], [total, 0]);
    const copied = r.parser.copiedBytes;
    assert(copied >= payload && copied <= total, `parser copied ${copied} of ${total} bytes`);
    const sends = p.qa.wire.filter((w) => w.len > 0);
    assert(sends.length * 5 < n, `${n} frames in ${sends.length} sends: many frames per block`);
  } finally {
    p.close();
  }
});

test("brpc-rdma zero copy: a frame spanning many blocks is gathered by one copy; a write too big for the ring is copied once on send", async () => {
  const p = connPair({});
  try {
    const size = (i: number) => (i === 0 ? 60_000 : 300_000);
    const r = new FrameReceiver(p.b, size);
    sendFrame(p.a, 0, size(0));
    const t0 = p.a.pendingWriteBytes;
    await until(() => r.frames === 1, 5000, r);
    assertEquals([p.a.counters.sentInPlace, p.a.counters.copiedOnSend], [t0, 0]);
    assert(p.qb.wire.length >= 0 && p.b.counters.receives >= 15, "15 blocks or more");
    // The header lies whole in the first block; the body is gathered straight from the blocks.
    assertEquals(r.parser.copiedBytes, t0 - 12);
    sendFrame(p.a, 1, size(1));
    const t1 = p.a.pendingWriteBytes;
    await until(() => r.frames === 2, 5000, r);
    assertEquals([p.a.counters.sentInPlace, p.a.counters.copiedOnSend], [t0, t1]);
    assertEquals(r.parser.copiedBytes, t0 - 12 + t1 - 12);
    assertEquals(p.b.counters.copiedOnReceive, 0);
    assertEquals(r.bad, []);
  } finally {
    p.close();
  }
});

for (const blockSize of [4096, 65536]) {
  test(`brpc-rdma zero copy: sends read late never see their bytes rewritten; big writes and ring-full output are copied, in order (blocks of ${blockSize} B)`, async () => {
    const p = connPair({ blockSize }, true);
    try {
      const small = blockSize === 4096
        ? (i: number) => 1000 + (i * 37) % 2000
        : (i: number) => 20_000 + (i * 7919) % 40_000;
      const size = (i: number) => (i % 31 === 30 ? 100_000 : small(i));
      const r = new FrameReceiver(p.b, size, true, true);
      let total = 0, big = 0, n = 0;
      for (let round = 0; round < 3; round++) {
        const before = p.a.pendingWriteBytes;
        for (let k = 0; k < 310; k++, n++) {
          const at = p.a.pendingWriteBytes;
          sendFrame(p.a, n, size(n));
          if (size(n) === 100_000) big += p.a.pendingWriteBytes - at;
        }
        total += p.a.pendingWriteBytes - before;
        await until(() => r.frames === n, 20_000, r);
      }
      r.recheck();
      assertEquals(r.bad, []);
      assertEquals(p.qa.overwritten, 0, "no send's bytes changed between its post and its read");
      const c = p.a.counters;
      assertEquals(c.sentInPlace + c.copiedOnSend, total);
      assert(c.copiedOnSend >= big, "writes bigger than a ring reservation are copied");
      // Megabytes written in one go overflow the ring: the rest waits in heap memory and is
      // copied as the ring frees up.
      assert(c.sentInPlace > 0 && c.copiedOnSend > big, `in place ${c.sentInPlace} of ${total}`);
      assertEquals(p.b.counters.copiedOnReceive, 0);
    } finally {
      p.close();
    }
  });
}

test("brpc-rdma zero copy: paused reading holds copies of its blocks and withholds their credits; resumed, every frame arrives", async () => {
  const p = connPair({});
  try {
    p.b.pauseReading();
    const size = () => 3000;
    const r = new FrameReceiver(p.b, size);
    for (let i = 0; i < 60; i++) sendFrame(p.a, i, size());
    const total = p.a.pendingWriteBytes;
    const cap = p.a.window.localCapacity;
    await until(() => p.b.counters.receives === cap);
    await new Promise((res) => setTimeout(res, 20));
    assertEquals(p.b.counters.receives, cap, "the sender stopped at its window");
    assertEquals(p.a.window.remoteRq, 0, "no credit came back while paused");
    assert(p.a.counters.windowStalls > 0);
    assertEquals(r.frames, 0);
    const held = p.qa.wire.filter((w) => w.len > 0).reduce((s, w) => s + w.len, 0);
    assertEquals([p.b.counters.copiedOnReceive, p.b.counters.receivedLent], [held, 0]);
    p.b.resumeReading();
    await until(() => r.frames === 60, 5000, r);
    assertEquals(r.bad, []);
    const cb = p.b.counters;
    assertEquals([cb.copiedOnReceive, cb.receivedLent], [held, total - held]);
  } finally {
    p.close();
  }
});

test("brpc-rdma zero copy: a data handler that does not take lent chunks gets copies it may keep", async () => {
  const p = connPair({});
  try {
    const size = (i: number) => 10 + (i * 101) % 9000;
    const r = new FrameReceiver(p.b, size, false, true);
    for (let i = 0; i < 200; i++) sendFrame(p.a, i, size(i));
    const total = p.a.pendingWriteBytes;
    await until(() => r.frames === 200, 5000, r);
    r.recheck();
    assertEquals(r.bad, []);
    assertEquals([p.b.counters.copiedOnReceive, p.b.counters.receivedLent], [total, 0]);
  } finally {
    p.close();
  }
});

test("brpc-rdma zero copy: channel and server on QPs that read their sends late, 400 echoes up to 150 kB intact", async () => {
  const made: FakeQp[] = [];
  _setBrpcQpFactory((o: BrpcRdmaOptions) => {
    const q = new FakeQp(o);
    q.lateSends = true;
    made.push(q);
    return Promise.resolve(q);
  });
  const small = { sqSize: 16, rqSize: 16, blockSize: 4096 };
  const services: Record<string, Record<string, Handler>> = {
    "t.B": {
      async Echo(req) {
        await new Promise((res) => setTimeout(res, req.length % 3)); // kept past the receive
        return req;
      },
    },
  };
  const server = await serve({ port: 0, services, brpcRdma: small });
  try {
    const ch = await connect(`127.0.0.1:${server.port}`, { brpcRdma: small, timeoutMs: 20_000 });
    try {
      const reqs = Array.from({ length: 400 }, (_, i) => {
        const b = new Uint8Array(i % 40 === 0 ? 150_000 : 1 + (i * 131) % 6000);
        for (let k = 0; k < b.length; k++) b[k] = (k + i) & 0xff;
        return b;
      });
      const got = await Promise.all(reqs.map((q) => ch.call("t.B", "Echo", q)));
      got.forEach((g, i) => assertEquals(g.response, reqs[i]));
      assertEquals(ch.transport, "brpc-rdma");
      assertEquals(made.map((q) => q.overwritten), [0, 0]);
    } finally {
      await ch.close();
    }
  } finally {
    _setBrpcQpFactory(null);
    await server.close();
  }
});
