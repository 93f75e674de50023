/**
 * The notice of an ended fabric session (what its `verbus.Fabric/Watch` is answered) belongs to
 * the TCP connection the session lived on. The server keeps it for a Watch that comes late on
 * that connection, keyed by the peer's address; once the connection is gone, a new connection
 * from the same address and port (the kernel reuses ports; so does a NAT) must not be told how
 * another caller's session ended. Both runtimes, shm: a proxy makes the session's connection
 * leave from a known port, the server closes it (a protocol error), and a new connection from
 * that port asks.
 * @module
 */
import net from "node:net";
import { connect } from "../../rpc/client/client.ts";
import { encodeFrame, FrameParser } from "../../rpc/protocol/frame.ts";
import {
  byeSchema,
  decodeHello,
  encodeBye,
  FABRIC_SERVICE,
} from "../../rpc/session/handshake/hello.ts";
import { serve } from "../../rpc/server/server.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { until } from "./util.ts";

/** A port free now on 127.0.0.1. */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Forwards one connection to `port`, leaving from 127.0.0.1:`localPort`. */
async function proxy(port: number, localPort: number) {
  let upstream: net.Socket | null = null;
  const server = net.createServer((down) => {
    server.close(); // one connection only: a redial must not take the port again
    const up = net.connect({ host: "127.0.0.1", port, localAddress: "127.0.0.1", localPort });
    upstream = up;
    down.pipe(up);
    up.pipe(down);
    const end = () => (down.destroy(), up.destroy());
    down.on("error", end).on("close", end);
    up.on("error", end).on("close", end);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    upstream: () => upstream,
    close: () => (server.close(), upstream?.destroy()),
  };
}

/** Sends one Watch for `sessionId` from 127.0.0.1:`localPort`; resolves with the notice. */
function watchFrom(port: number, localPort: number, sessionId: number) {
  return new Promise<{ sessionId: number; reason: string }>((resolve, reject) => {
    const s = net.connect({ host: "127.0.0.1", port, localAddress: "127.0.0.1", localPort });
    const parser = new FrameParser((meta, payload) => {
      s.destroy();
      const r = meta.response;
      if (r !== undefined && r.errorCode) reject(new Error(r.errorText));
      else resolve(decodeHello(byeSchema, payload.slice(), "notice"));
    });
    s.on("data", (b: Uint8Array) => parser.push(new Uint8Array(b)));
    s.on("error", reject);
    s.on("connect", () =>
      s.write(encodeFrame(
        { request: { serviceName: FABRIC_SERVICE, methodName: "Watch" }, correlationId: 1 },
        encodeBye({ sessionId, reason: "watch" }),
      )));
  });
}

test("a new connection from the address and port of a closed one is not told how that connection's session ended", async () => {
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: { "t.N": { Echo: (r: Uint8Array) => r.slice() } },
    fabric: { fabrics: ["shm"] },
    logger: { warn: () => {}, info: () => {} },
  });
  const localPort = await freePort();
  const p = await proxy(server.port, localPort);
  const c = await connect({ host: "127.0.0.1", port: p.port }, {
    fabric: "shm",
    reestablishMs: 0,
    logger: { warn: () => {} },
  });
  try {
    assertEquals(c.fabric, "shm", JSON.stringify(c.handshake));
    assertEquals((await c.call("t.N", "Echo", Uint8Array.of(1))).path, "EAGER");
    const s = [...server.fabric!.sessions][0];
    assertEquals(s.peer.port, localPort, "the session's connection leaves from the known port");
    // The server closes that connection (a protocol error): it closes first, so the port is
    // free at once on this side (no TIME_WAIT here).
    p.upstream()!.write(new TextEncoder().encode("NOT A FRAME AT ALL"));
    await until("the session ended", () => server.fabric!.sessions.size === 0, 10_000);
    await until("the proxy's connection is gone", () => p.upstream()!.destroyed, 10_000);
    const notice = await watchFrom(server.port, localPort, s.id);
    assertEquals(notice.sessionId, s.id);
    assertEquals(notice.reason, "no such session on this connection", JSON.stringify(notice));
  } finally {
    p.close();
    await c.close();
    await server.close();
  }
});

test("on the same connection, a Watch after its session ended still gets that session's notice", async () => {
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: { "t.N": { Echo: (r: Uint8Array) => r.slice() } },
    fabric: { fabrics: ["shm"] },
    logger: { warn: () => {}, info: () => {} },
  });
  const c = await connect({ host: "127.0.0.1", port: server.port }, {
    fabric: "shm",
    reestablishMs: 0,
    logger: { warn: () => {} },
  });
  try {
    assertEquals((await c.call("t.N", "Echo", Uint8Array.of(1))).path, "EAGER");
    const s = [...server.fabric!.sessions][0];
    s.close("ended by the server for the test");
    await until("the session ended", () => server.fabric!.sessions.size === 0, 10_000);
    const r = await c.channel.call(
      FABRIC_SERVICE,
      "Watch",
      encodeBye({ sessionId: s.id, reason: "w" }),
    );
    const notice = decodeHello(byeSchema, r.response, "notice");
    assert(/ended by the server for the test/.test(notice.reason), notice.reason);
  } finally {
    await c.close();
    await server.close();
  }
});
