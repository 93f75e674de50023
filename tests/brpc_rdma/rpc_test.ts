/**
 * The baidu_std channel and server in brpc's RDMA mode, on the host: the QPs are the in-memory
 * fake (tests/brpc_rdma/fake_qp.ts, a real RC QP's rules where the protocol depends on them), the
 * handshake runs on real TCP. Many calls in flight on small queues (credits run out and come
 * back), messages larger than a block, a QP error (calls fail, the next call reconnects), and
 * the fallbacks: no RDMA on this host, a plain client, a server without RDMA mode.
 */
import { ConnectionClosedError } from "../../errors.ts";
import { connect } from "../../rpc/tcp/channel.ts";
import { type Handler, serve } from "../../rpc/server/server.ts";
import { _setBrpcQpFactory } from "../../transport/brpc_rdma/mod.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { fakeFactory, type FakeQp, RNR_RETRY_EXC_ERR } from "./fake_qp.ts";

const services: Record<string, Record<string, Handler>> = {
  "t.B": {
    Echo(req, ctx) {
      if (ctx.requestAttachment?.length) ctx.responseAttachment = ctx.requestAttachment;
      return req;
    },
  },
};

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 7 + seed) & 0xff;
  return b;
}

function logger() {
  const lines: string[] = [];
  return { lines, warn: (m: string) => void lines.push(m) };
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function withFake<T>(fn: (made: FakeQp[]) => Promise<T>): Promise<T> {
  const f = fakeFactory();
  _setBrpcQpFactory(f.factory);
  try {
    return await fn(f.made);
  } finally {
    _setBrpcQpFactory(null);
  }
}

test("brpc-rdma: 300 calls in flight on 16-deep queues, messages of 3 blocks, echoed whole", () =>
  withFake(async (made) => {
    const small = { sqSize: 16, rqSize: 16, blockSize: 4096 };
    const server = await serve({ port: 0, services, brpcRdma: small, logger: logger() });
    const ch = await connect(`127.0.0.1:${server.port}`, { brpcRdma: small, timeoutMs: 20_000 });
    try {
      await until(() => server.brpcRdma!.outcomes.ESTABLISHED === 1);
      const calls = Array.from({ length: 300 }, (_, i) => {
        const req = bytes(i % 3 === 0 ? 12_000 : 100 + i, i);
        const att = i % 5 === 0 ? bytes(5000, i + 1) : undefined;
        return ch.call("t.B", "Echo", req, { attachment: att }).then((r) => ({ r, req, att }));
      });
      for (const { r, req, att } of await Promise.all(calls)) {
        assertEquals(r.response, req);
        assertEquals(r.attachment.length, att?.length ?? 0);
      }
      assertEquals(made.length, 2);
      for (const q of made) {
        const peerBlock = q.peer!.blockSize;
        assert(q.wire.every((w) => w.len <= peerBlock), "a send is never longer than a block");
        assert(q.wire.some((w) => w.len === peerBlock), "big messages fill whole blocks");
        assert(q.posted <= q.rqSize);
        const data = q.wire.filter((w) => w.len > 0);
        const signalled = data.filter((w) => (w.flags & 2) !== 0);
        // quarter of the window (16 − 3 = 13 → 3): every 3rd data send, wr_id 3
        assert(signalled.length > 0 && signalled.every((w) => w.wrId === 3), "signal rule");
      }
      const acks = made.flatMap((q) => q.wire.filter((w) => w.len === 0));
      assert(acks.every((w) => w.imm > 6 && (w.flags & 2) !== 0), "ACKs: > half window, signalled");
    } finally {
      await ch.close();
      await server.close();
    }
  }));

test("brpc-rdma: a receiver that never answers returns credits in standalone ACKs", () =>
  withFake(async (made) => {
    let got = 0;
    const sink: Record<string, Record<string, Handler>> = {
      "t.B": { Sink: () => new Promise<Uint8Array>(() => void got++) },
    };
    const server = await serve({
      port: 0,
      services: sink,
      brpcRdma: {},
      logger: logger(),
      drainTimeoutMs: 50,
    });
    const ch = await connect(`127.0.0.1:${server.port}`, { brpcRdma: {}, timeoutMs: 60_000 });
    try {
      // 3.6 MB of requests: ~440 sends against a window of 125
      for (let i = 0; i < 400; i++) void ch.call("t.B", "Sink", bytes(9000, i)).catch(() => {});
      const t0 = Date.now();
      while (got < 400 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 5));
      assertEquals(got, 400, "every request arrived although the server sent no data");
      const serverQp = made[1];
      const acks = serverQp.wire.filter((w) => w.len === 0);
      assert(acks.length >= 3, `standalone ACKs carried the credits (${acks.length})`);
      assertEquals(serverQp.wire.filter((w) => w.len > 0).length, 0);
      const sent = made[0].wire.filter((w) => w.len > 0).length;
      const back = acks.reduce((s, w) => s + w.imm, 0);
      assert(sent > 125 && back >= sent - 125 && back <= sent, `credits: ${back} of ${sent}`);
    } finally {
      await ch.close();
      await server.close();
    }
  }));

test("brpc-rdma: a QP error fails the calls in flight like a reset; the next call reconnects", () =>
  withFake(async (made) => {
    const server = await serve({
      port: 0,
      services: { ...services, "t.S": { Hang: () => new Promise<Uint8Array>(() => {}) } },
      brpcRdma: {},
      logger: logger(),
      drainTimeoutMs: 50,
    });
    const ch = await connect(`127.0.0.1:${server.port}`, { brpcRdma: {} });
    try {
      const hanging = ch.call("t.S", "Hang", bytes(10, 1));
      await new Promise((r) => setTimeout(r, 50));
      made[0].fail(RNR_RETRY_EXC_ERR, 0);
      const e = await assertRejects(() => hanging, ConnectionClosedError);
      assert(e.message.includes("QP is in error"), e.message);
      const r = await ch.call("t.B", "Echo", bytes(20_000, 3));
      assertEquals(r.response, bytes(20_000, 3));
      await until(() => server.brpcRdma!.outcomes.ESTABLISHED === 2);
      assertEquals(made.length, 4);
    } finally {
      await ch.close();
      await server.close();
    }
  }));

test("brpc-rdma: plain clients of an RDMA-mode server, and RDMA clients of a plain server", () =>
  withFake(async () => {
    const log = logger();
    const rdmaServer = await serve({ port: 0, services, brpcRdma: {}, logger: log });
    const plainServer = await serve({ port: 0, services, logger: log });
    const clog = logger();
    const plain = await connect(`127.0.0.1:${rdmaServer.port}`);
    const toPlain = await connect(`127.0.0.1:${plainServer.port}`, { brpcRdma: {}, logger: clog });
    try {
      assertEquals((await plain.call("t.B", "Echo", bytes(30, 1))).response, bytes(30, 1));
      assertEquals(rdmaServer.brpcRdma!.outcomes.NOT_RDMA, 1);
      assertEquals((await toPlain.call("t.B", "Echo", bytes(30, 2))).response, bytes(30, 2));
      assert(clog.lines.some((l) => l.includes("C_HELLO_WAIT → FAILED")), clog.lines.join("\n"));
      assert(clog.lines.some((l) => l.includes("using plain TCP")), clog.lines.join("\n"));
    } finally {
      await plain.close();
      await toPlain.close();
      await rdmaServer.close();
      await plainServer.close();
    }
  }));

test("brpc-rdma: without an RDMA device both sides stay on TCP, the reason logged once", async () => {
  const slog = logger(), clog = logger();
  const server = await serve({ port: 0, services, brpcRdma: {}, logger: slog });
  try {
    for (let i = 0; i < 3; i++) {
      const ch = await connect(`127.0.0.1:${server.port}`, { brpcRdma: {}, logger: clog });
      assertEquals((await ch.call("t.B", "Echo", bytes(9000, i))).response, bytes(9000, i));
      await ch.close();
    }
    const fallbacks = clog.lines.filter((l) => l.includes("C_ALLOC_QPCQ → FALLBACK_TCP"));
    assertEquals(fallbacks.length, 1, clog.lines.join("\n"));
    assert(fallbacks[0].includes("no QP on this host"), fallbacks[0]);
    // The client sent no hello (as brpc's does when it cannot allocate): the server saw TCP.
    assertEquals(server.brpcRdma!.outcomes.NOT_RDMA, 3);
  } finally {
    await server.close();
  }
});

test("brpc-rdma: the last send of every burst is SOLICITED (brpc waits for solicited events)", () =>
  withFake(async (made) => {
    const server = await serve({ port: 0, services, brpcRdma: {}, logger: logger() });
    const ch = await connect(`127.0.0.1:${server.port}`, { brpcRdma: {} });
    try {
      for (let i = 0; i < 5; i++) {
        const before = made[0].wire.length;
        await ch.call("t.B", "Echo", bytes(i === 4 ? 30_000 : 50, i));
        const burst = made[0].wire.slice(before).filter((w) => w.len > 0);
        assert(
          burst.length >= 1 && (burst.at(-1)!.flags & 4) !== 0,
          `call ${i}: last send solicited`,
        );
        const answer = made[1].wire.filter((w) => w.len > 0).at(-1)!;
        assert((answer.flags & 4) !== 0, `answer ${i}: solicited`);
      }
    } finally {
      await ch.close();
      await server.close();
    }
  }));
