/**
 * brpc's RDMA connections on a shared completion queue (as on the verbs hub), on the host: the
 * fake QPs (`fake_qp.ts`) announce on one in-memory readiness source (`fake_shared_cq.ts`), and
 * the connections of both sides are driven by the process's progress engine — no connection
 * waits on a completion queue of its own — while credits run out and come back; at close every
 * QP leaves the shared CQ. In event mode (`usePolling: false`) each connection runs its own loop
 * instead, which must keep the event loop turning even when its wait returns at once.
 */
import { type Channel, connect } from "../../rpc/tcp/channel.ts";
import { type Handler, serve } from "../../rpc/server/server.ts";
import { _setBrpcQpFactory } from "../../transport/brpc_rdma/mod.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { fakeFactory, type FakeQp } from "./fake_qp.ts";
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

/**
 * A server and a channel on fake QPs over one shared CQ with brpcRdma `extra` options (small
 * queues), `calls` echoes checked; then `check` with the channel still open. Checks at the end
 * that every QP closed and nothing was logged.
 */
async function onSharedCq(
  extra: Record<string, unknown>,
  calls: number,
  check: (cq: FakeSharedCq, made: FakeQp[], ch: Channel) => Promise<void>,
): Promise<void> {
  const cq = new FakeSharedCq();
  const f = fakeFactory(cq);
  _setBrpcQpFactory(f.factory);
  const small = { sqSize: 16, rqSize: 16, blockSize: 4096, ...extra };
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
      const reqs = Array.from({ length: calls }, (_, i) => bytes(i % 4 === 0 ? 10_000 : 64 + i, i));
      const got = await Promise.all(reqs.map((r) => ch.call("t.B", "Echo", r)));
      got.forEach((g, i) => assertEquals(g.response, reqs[i]));
      assertEquals(f.made.length, 2);
      for (const q of f.made) {
        assert(q.wire.some((w) => w.len === 0 || w.imm > 0), "credits came back");
      }
      await check(cq, f.made, ch);
    } finally {
      await ch.close();
    }
    await until(() => cq.members === 0 && f.made.every((q) => q.closed));
    assertEquals(lines, []);
  } finally {
    _setBrpcQpFactory(null);
    await server.close();
  }
}

test("brpc-rdma on a shared CQ: the engine drives both sides (no own waits), 300 calls echoed, QPs leave at close", async () => {
  await onSharedCq({}, 300, async (cq, made, ch) => {
    assertEquals(cq.members, 2);
    for (const q of made) {
      assertEquals(q.waits, 0, "a connection on a shared CQ never waits on its own");
      assert(q.announce, "its completions are announced to the engine");
    }
    assert(cq.counters.collects > 0, "the engine collected the shared CQ");
    // Idle: the engine parks its one wait on the shared source, and calls still work after it.
    await until(() => cq.counters.sleeps > 0);
    assertEquals((await ch.call("t.B", "Echo", bytes(100, 1))).response, bytes(100, 1));
  });
});

test("brpc-rdma on a shared CQ with usePolling false: each connection runs its own event loop (no engine), calls echoed", async () => {
  await onSharedCq({ usePolling: false }, 200, async (cq, made) => {
    for (const q of made) {
      assert(!q.polling, "event mode asked for");
      assert(!q.announce, "nothing announced to an engine");
      assert(q.waits > 0, "the connection waited on its own");
    }
    assertEquals(cq.counters.collects, 0, "no engine collected the shared CQ");
    await until(() => made.every((q) => q.waits > 1));
  });
});

test("brpc-rdma in event mode: a shared CQ's wait that returns at once does not starve the event loop", async () => {
  await onSharedCq({ usePolling: false }, 20, async (_cq, made, ch) => {
    // As the verbs hub's wait did while tokens for the engine were queued: the connections' own
    // loops come back at once, every time. Timers must still fire and calls still complete.
    for (const q of made) q.waitAtOnce = true;
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 50));
    const late = Date.now() - t0 - 50;
    assertEquals((await ch.call("t.B", "Echo", bytes(3000, 7))).response, bytes(3000, 7));
    for (const q of made) {
      assert(
        !q.starved,
        `the loop of QP ${q.qpNum} never gave a macrotask (timer ${late} ms late)`,
      );
      q.waitAtOnce = false;
    }
  });
});
