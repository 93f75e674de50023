/**
 * brpc's RDMA connections on a shared completion queue (as on the verbs hub), on the host: the
 * fake QPs (`fake_qp.ts`) announce on one in-memory readiness source (`fake_shared_cq.ts`), and
 * the connections of both sides are driven by the process's progress engine — no connection
 * waits on a completion queue of its own — while credits run out and come back; at close every
 * QP leaves the shared CQ.
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { type Handler, serve } from "../../rpc/server/server.ts";
import { _setBrpcQpFactory } from "../../transport/brpc_rdma/mod.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { fakeFactory } from "./fake_qp.ts";
import { FakeSharedCq } from "./fake_shared_cq.ts";

const services: Record<string, Record<string, Handler>> = {
  "t.B": { Echo: (req) => req },
};

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 13 + seed) & 0xff;
  return b;
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

test("brpc-rdma on a shared CQ: the engine drives both sides (no own waits), 300 calls echoed, QPs leave at close", async () => {
  const cq = new FakeSharedCq();
  const f = fakeFactory(cq);
  _setBrpcQpFactory(f.factory);
  const small = { sqSize: 16, rqSize: 16, blockSize: 4096 };
  const lines: string[] = [];
  const server = await serve({
    port: 0,
    services,
    brpcRdma: small,
    logger: { warn: (m) => void lines.push(m) },
  });
  try {
    const ch = await connect(`127.0.0.1:${server.port}`, { brpcRdma: small, timeoutMs: 20_000 });
    try {
      await until(() => server.brpcRdma!.outcomes.ESTABLISHED === 1);
      assertEquals(ch.transport, "brpc-rdma");
      const reqs = Array.from({ length: 300 }, (_, i) => bytes(i % 4 === 0 ? 10_000 : 64 + i, i));
      const got = await Promise.all(reqs.map((r) => ch.call("t.B", "Echo", r)));
      got.forEach((g, i) => assertEquals(g.response, reqs[i]));
      assertEquals(f.made.length, 2);
      assertEquals(cq.members, 2);
      for (const q of f.made) {
        assertEquals(q.waits, 0, "a connection on a shared CQ never waits on its own");
        assert(q.announce, "its completions are announced to the engine");
        assert(q.wire.some((w) => w.len === 0 || w.imm > 0), "credits came back");
      }
      assert(cq.counters.collects > 0, "the engine collected the shared CQ");
      // Idle: the engine parks its one wait on the shared source, and calls still work after it.
      await until(() => cq.counters.sleeps > 0);
      assertEquals((await ch.call("t.B", "Echo", bytes(100, 1))).response, bytes(100, 1));
    } finally {
      await ch.close();
    }
    await until(() => cq.members === 0);
    assert(f.made.every((q) => q.closed), "both QPs closed");
    assertEquals(lines, []);
  } finally {
    _setBrpcQpFactory(null);
    await server.close();
  }
});
