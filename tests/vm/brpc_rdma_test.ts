/**
 * brpc's RDMA mode over real Soft-RoCE (VM): a verbus server with `brpcRdma` on rxe1 (10.77.0.2)
 * and a verbus channel with `brpcRdma` from rxe0 (10.77.0.1), so the QPs are brought up from the
 * hellos' GIDs and QP numbers across the veth pair. Many calls in flight on small queues (credits
 * run out and come back), messages of several blocks, and a plain TCP client of the same server.
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { serve } from "../../rpc/server/server.ts";
import { VerbsHub } from "../../transport/verbs/hub.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { pattern, SERVER_ADDR, TEST_SERVICES } from "./fabric_verbs_util.ts";

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

// Both completion modes: on rxe "auto" is event mode (the connection's own loop: poll until
// empty, then the hub's off-thread channel wait); usePolling true puts the connections on the
// progress engine (spin-then-sleep).
for (const usePolling of ["auto", true] as const) {
  test(`brpc-rdma over rxe (usePolling ${usePolling}): 200 calls in flight on 16-deep queues, 40 KB messages, echoed`, async () => {
    const lines: string[] = [];
    const logger = { warn: (m: string) => void lines.push(m) };
    // Both addresses are local in the VM (TCP goes through lo): name the devices, as brpc's
    // -rdma_device does, so the QPs sit on rxe0 and rxe1 and cross the veth pair.
    const small = { sqSize: 16, rqSize: 16, usePolling };
    const server_ = { ...small, device: "rxe1" }, client = { ...small, device: "rxe0" };
    const server = await serve({
      port: 0,
      host: SERVER_ADDR,
      services: TEST_SERVICES,
      brpcRdma: server_,
      logger,
    });
    const ch = await connect(`${SERVER_ADDR}:${server.port}`, {
      brpcRdma: client,
      logger,
      timeoutMs: 30_000,
    });
    try {
      await until(() => server.brpcRdma!.outcomes.ESTABLISHED === 1);
      assertEquals(lines, [], "no fallback, no failure");
      const calls = Array.from({ length: 200 }, (_, i) => {
        const req = pattern(i % 4 === 0 ? 40_000 : 64 + i, i);
        return ch.call("t.Verbs", "Echo", req, { attachment: pattern(i % 7 === 0 ? 9000 : 0, i) })
          .then((r) => ({ r, req, i }));
      });
      const waits = () =>
        VerbsHub.all().reduce(
          (a, h) => [a[0] + h.counters.ownWaits, a[1] + h.counters.ownWaitTimeouts],
          [0, 0],
        );
      const [w0, t0] = waits(), start = Date.now();
      for (const { r, req, i } of await Promise.all(calls)) {
        assertEquals(r.response, req, `call ${i}`);
        assertEquals(r.attachment.length, i % 7 === 0 ? 9000 : 0);
      }
      const [w1, t1] = waits();
      console.log(
        `     (${usePolling}) ${Date.now() - start} ms: own waits ${w1 - w0}, timed out ${t1 - t0}`,
      );
      const big = pattern(1 << 20, 9);
      assertEquals((await ch.call("t.Verbs", "Echo", big)).response, big);
    } finally {
      await ch.close();
      await server.close();
    }
  });
}

test("brpc-rdma over rxe: event-mode and engine-driven connections on one hub, in one process, calls on both at once", async () => {
  // Two clients on rxe0 (one hub, one shared CQ): one in event mode, one driven by the progress
  // engine, so the hub has both tokens queued for the engine and a connection that waits on its
  // own. Neither may hold up the other (a loop spinning in microtasks would stop both: no call
  // would complete, and a timer would never fire).
  const lines: string[] = [];
  const logger = { warn: (m: string) => void lines.push(m) };
  const small = { sqSize: 16, rqSize: 16 };
  const server = await serve({
    port: 0,
    host: SERVER_ADDR,
    services: TEST_SERVICES,
    brpcRdma: { ...small, device: "rxe1", usePolling: true },
    logger,
  });
  const addr = `${SERVER_ADDR}:${server.port}`;
  const opts = (usePolling: boolean) => ({
    brpcRdma: { ...small, device: "rxe0", usePolling },
    logger,
    timeoutMs: 30_000,
  });
  const event = await connect(addr, opts(false));
  const polled = await connect(addr, opts(true));
  let ticks = 0;
  const timer = setInterval(() => ticks++, 10);
  try {
    await until(() => server.brpcRdma!.outcomes.ESTABLISHED === 2);
    assertEquals([event.transport, polled.transport], ["brpc-rdma", "brpc-rdma"]);
    const run = (ch: typeof event, seed: number) =>
      Promise.all(Array.from({ length: 100 }, (_, i) => {
        const req = pattern(i % 5 === 0 ? 20_000 : 100 + i, seed + i);
        return ch.call("t.Verbs", "Echo", req).then((r) => assertEquals(r.response, req));
      }));
    await Promise.all([run(event, 1), run(polled, 1000)]);
    await until(() => ticks > 0, 2000);
    assertEquals(lines, [], "no fallback, no failure");
  } finally {
    clearInterval(timer);
    await event.close();
    await polled.close();
    await server.close();
  }
});

test("brpc-rdma over rxe: plain TCP clients of the same server; RDMA clients reconnect", async () => {
  const lines: string[] = [];
  const logger = { warn: (m: string) => void lines.push(m) };
  const server = await serve({
    port: 0,
    host: SERVER_ADDR,
    services: TEST_SERVICES,
    brpcRdma: { device: "rxe1" },
    logger,
  });
  try {
    const plain = await connect(`${SERVER_ADDR}:${server.port}`);
    assertEquals((await plain.call("t.Verbs", "Echo", pattern(100, 1))).response, pattern(100, 1));
    await plain.close();
    for (let i = 0; i < 3; i++) {
      const ch = await connect(`${SERVER_ADDR}:${server.port}`, {
        brpcRdma: { device: "rxe0" },
        logger,
      });
      const r = await ch.call("t.Verbs", "Echo", pattern(20_000, i));
      assertEquals(r.response, pattern(20_000, i));
      await ch.close();
    }
    await until(() => server.brpcRdma!.outcomes.ESTABLISHED === 3);
    assertEquals(server.brpcRdma!.outcomes.NOT_RDMA, 1);
    assert(!lines.some((l) => l.includes("FAILED")), lines.join("\n"));
  } finally {
    await server.close();
  }
});
