/**
 * Hellos with peers that cannot share this side's regions: a client or server of the previous
 * hello version (its regions have no stream rings) is refused at the hello with a reason naming
 * the versions, never given a session whose layout it would misread; the calls go over TCP.
 * And a peer with no verbus fabric at all (a stock brpc or other baidu_std-only server) is
 * logged at warn once per address in a process, at info after that.
 * @module
 */
import { pid } from "node:process";
import { connect as connectChannel } from "../../rpc/tcp/channel.ts";
import { connect } from "../../rpc/client/client.ts";
import { EREQUEST, RpcError } from "../../rpc/errors.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import {
  ACK_ON,
  bootId,
  decodeAck,
  encodeHello,
  FABRIC_SERVICE,
  HELLO_VERSION,
} from "../../rpc/session/handshake/hello.ts";
import { MAX_PEERS } from "../../rpc/session/handshake/peer_fallback_log.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { SMALL_REGION } from "../fabric/util.ts";

const SMALL = SMALL_REGION;
const enc = new TextEncoder(), dec = new TextDecoder();

/** A log that keeps warn and info lines apart. */
function lines() {
  const warn: string[] = [], info: string[] = [];
  return {
    warn,
    info,
    logger: { warn: (m: string) => warn.push(m), info: (m: string) => info.push(m) },
  };
}

/** A TCP-only server with an echo, and `fabric` methods standing in for `verbus.Fabric`. */
async function tcpServer(
  fabric?: Record<string, (req: Uint8Array) => Uint8Array>,
): Promise<Server> {
  return await serve({
    port: 0,
    host: "127.0.0.1",
    services: {
      "t.S": { Echo: (req: Uint8Array) => req },
      ...(fabric ? { [FABRIC_SERVICE]: fabric } : {}),
    },
    fabric: false,
    logger: { warn: () => {}, info: () => {} },
  });
}

test("the hello version moved past 1 with the stream rings", () => {
  assert(HELLO_VERSION >= 2, `HELLO_VERSION ${HELLO_VERSION}`);
});

test("a client of hello version 1 (regions without stream rings) is refused naming both versions; the server stays on TCP with it", async () => {
  const { logger, warn, info } = lines();
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: { "t.S": { Echo: (req: Uint8Array) => req } },
    fabric: { fabrics: ["shm"], region: SMALL },
    logger,
  });
  const ch = await connectChannel({ host: "127.0.0.1", port: server.port });
  try {
    // What a client of the previous layout sends: the same fields, version 1.
    const old = {
      version: 1,
      bootId: bootId(),
      pid,
      fabrics: ["shm"],
      region: SMALL,
      params: { shm: {} },
    };
    const e = await assertRejects(
      () => ch.call(FABRIC_SERVICE, "Hello", enc.encode(JSON.stringify(old))),
      RpcError,
    );
    assertEquals(e.errorCode, EREQUEST);
    for (
      const want of [
        "field version",
        "version 1",
        "no stream rings",
        `speaks ${HELLO_VERSION}`,
        "TCP",
      ]
    ) {
      assert(e.errorText.includes(want), `${want}: ${e.errorText}`);
    }
    const last = server.fabric!.history.at(-1);
    assertEquals(last?.state, "FALLBACK_TCP", JSON.stringify(last));
    assertEquals(server.fabric!.sessions.size, 0);
    // No offer was prepared: an ACK finds no pending hello.
    await assertRejects(
      () => ch.call(FABRIC_SERVICE, "Ack", new Uint8Array([0, 0, 0, 1])),
      RpcError,
      "without a pending",
    );
    assert([...warn, ...info].some((l) => l.includes("version 1")), [...warn, ...info].join("\n"));
    // Its calls are served over TCP; a client of this version still gets shm.
    assertEquals(dec.decode((await ch.call("t.S", "Echo", enc.encode("tcp"))).response), "tcp");
    const c = await connect({ host: "127.0.0.1", port: server.port }, {
      region: SMALL,
      logger: { warn: () => {} },
    });
    try {
      assertEquals(c.fabric, "shm", JSON.stringify(c.handshake));
    } finally {
      await c.close();
    }
  } finally {
    ch.close();
    await server.close();
  }
});

test("a server of hello version 1 — refusing this client's hello, or answering with its own version — leaves the client on TCP with the reason; no ACK 1 is sent", async () => {
  const acks: number[] = [];
  const ack = (req: Uint8Array) => (acks.push(decodeAck(req)), new Uint8Array(0));
  // An old server's schema takes only version 1: it answers EREQUEST naming the field.
  const refusing = await tcpServer({
    Hello: () => {
      throw new RpcError(EREQUEST, "client hello: field version: Invalid input: expected 1");
    },
    Ack: ack,
  });
  // A server that answers a hello of version 1 (what an old server would answer an old client).
  const answering = await tcpServer({
    Hello: () =>
      encodeHello({
        version: 1,
        sessionId: 7,
        fabric: "shm",
        decisions: { shm: { state: "ON" } },
        region: { ...SMALL },
        methods: ["t.S/Echo"],
        batchBudget: 16,
        largeThreshold: 8192,
      } as never),
    Ack: ack,
  });
  try {
    for (
      const [server, want] of [[refusing, "refused this client's hello version"], [
        answering,
        "the server speaks hello version 1",
      ]] as const
    ) {
      const { logger, warn } = lines();
      const c = await connect({ host: "127.0.0.1", port: server.port }, { region: SMALL, logger });
      try {
        assertEquals(c.fabric, "tcp");
        assertEquals(c.handshake.state, "FALLBACK_TCP");
        const reason = c.handshake.reason ?? "";
        assert(reason.includes(want), reason);
        assert(reason.includes("TCP"), reason);
        assert(warn.some((l) => l.includes(want)), warn.join("\n"));
        const r = await c.call("t.S", "Echo", enc.encode("over tcp"));
        assertEquals(dec.decode(r.response), "over tcp");
        assertEquals(c.stats().calls.TCP_FALLBACK, 1);
      } finally {
        await c.close();
      }
    }
    assert(!acks.includes(ACK_ON), `ACKs sent: ${acks}`);
  } finally {
    await refusing.close();
    await answering.close();
  }
});

test("a baidu_std-only server is logged at warn once per address per process, at info after", async () => {
  const a = await tcpServer(), b = await tcpServer();
  try {
    const warnAt = (log: ReturnType<typeof lines>) =>
      log.warn.filter((l) => l.includes("offers no verbus fabric")).length;
    const infoAt = (log: ReturnType<typeof lines>) =>
      log.info.filter((l) => l.includes("offers no verbus fabric")).length;
    const runs: [Server, number, number][] = [[a, 1, 0], [a, 0, 1], [a, 0, 1], [b, 1, 0], [
      b,
      0,
      1,
    ]];
    for (const [server, warns, infos] of runs) {
      const log = lines();
      const c = await connect({ host: "127.0.0.1", port: server.port }, {
        region: SMALL,
        logger: log.logger,
      });
      try {
        assertEquals(c.fabric, "tcp");
        assert((c.handshake.reason ?? "").includes("offers no verbus fabric"), c.handshake.reason);
        assertEquals(
          [warnAt(log), infoAt(log)],
          [warns, infos],
          `${server.port}: ${JSON.stringify(log)}`,
        );
        assertEquals(dec.decode((await c.call("t.S", "Echo", enc.encode("x"))).response), "x");
      } finally {
        await c.close();
      }
    }
    assert(MAX_PEERS > 0);
  } finally {
    await a.close();
    await b.close();
  }
});
