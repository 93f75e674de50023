/**
 * verbus's brpc UBRing client against a server peer written from the protocol description
 * (ubring_peer.ts, which imports none of verbus's brpc_ubring modules): every field of verbus's
 * hello, the ACK, calls of many blocks both ways with the peer's flow control; the peer's hostile
 * hellos (wrong magic, short msg_len, other versions, a tail that gives no size or another size
 * than its hello, an object smaller than announced, silence) end FAILED or FALLBACK_TCP with the
 * reason; hostile ring contents (a bad flag, a length past the block, a read position past the
 * length, a tail out of the ring or past what was written) fail that connection with a clear
 * error and the next call reconnects; the peer's close is acknowledged; a peer without heartbeat
 * is dropped. Both runtimes.
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { brpcUbringOptionsSchema } from "../../transport/brpc_ubring/options.ts";
import { ubringClientHandshake } from "../../transport/brpc_ubring/handshake.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { bytes, logger, ubringObjects, until } from "./util.ts";
import { MiB, type PeerRings, type PeerServerConfig, startPeerServer } from "./ubring_peer.ts";

async function withPeer<T>(
  cfg: PeerServerConfig,
  fn: (p: Awaited<ReturnType<typeof startPeerServer>>) => Promise<T>,
) {
  const p = await startPeerServer(cfg);
  try {
    return await fn(p);
  } finally {
    await p.close();
  }
}

/** The client handshake alone against a peer configured to lie. */
async function handshakeWith(cfg: PeerServerConfig, timeoutMs = 2000) {
  return await withPeer(cfg, async (p) => {
    const conn = await tcp.connect({ host: "127.0.0.1", port: p.port });
    const o = brpcUbringOptionsSchema.parse({ handshakeTimeoutMs: timeoutMs });
    const out = await ubringClientHandshake(conn, o);
    out.conn?.close();
    return out;
  });
}

test("brpc-ubring client vs a protocol-description server: hello, ACK, calls both ways", () =>
  withPeer({}, async (p) => {
    const log = logger();
    const ch = await connect(`127.0.0.1:${p.port}`, {
      brpcUbring: {},
      timeoutMs: 10_000,
      logger: log,
    });
    try {
      const calls = Array.from({ length: 60 }, (_, i) => {
        const req = bytes(i % 4 === 0 ? 70_000 : 1 + i * 13, i);
        return ch.call("t.P", "Echo", req).then((r) => assertEquals(r.response, req, `call ${i}`));
      });
      await Promise.all(calls);
      assertEquals(ch.transport, "brpc-ubring", log.lines.join("\n"));
      const l = p.logs[0];
      assertEquals(l.notes, []);
      assertEquals([l.hello!.magic, l.hello!.msgLen, l.hello!.helloVer, l.hello!.implVer], [
        "UB",
        64,
        2,
        1,
      ]);
      assertEquals(l.hello!.len, BigInt(4 * MiB));
      assert(/^UBRING_127\.0\.0\.1:\d+_C$/.test(l.hello!.name), l.hello!.name);
      assertEquals(l.ack, 1);
      assertEquals(l.frames, 60);
    } finally {
      await ch.close();
    }
    assertEquals(ubringObjects().filter((n) => n.endsWith("_C")), [], "the client's name is gone");
  }));

test("brpc-ubring client: hostile server hellos end FAILED or FALLBACK_TCP with the reason", async () => {
  const cases: [PeerServerConfig, string, RegExp][] = [
    [{ hello: { magic: "XX" } }, "FAILED", /answered "XX".*not a UBRing hello/],
    [{ hello: { msgLen: 10 } }, "FAILED", /msg_len 10 is below 64/],
    [{ hello: { helloVer: 0, implVer: 0 } }, "FALLBACK_TCP", /zeroed versions/],
    [{ hello: { helloVer: 3 } }, "FALLBACK_TCP", /hello_ver 3 \/ impl_ver 1/],
    [{ initialTail: 0xffffffff }, "FAILED", /from its tail 4294967295/],
    [{ initialTail: 100 }, "FAILED", /not a multiple of 4194304/],
    [
      { hello: { len: BigInt(8 * MiB) } },
      "FAILED",
      /hello says len 8388608, its tail \d+ says 4194304/,
    ],
    [
      { initialTail: (8 * MiB - 64) / 64 - 1, hello: { len: BigInt(8 * MiB) } },
      "FAILED",
      /fewer than/,
    ],
  ];
  for (const [cfg, state, why] of cases) {
    const out = await handshakeWith(cfg);
    assertEquals(
      out.state,
      state,
      `${JSON.stringify(cfg, (_, v) => typeof v === "bigint" ? `${v}` : v)}: ${out.reason}`,
    );
    assert(why.test(out.reason ?? ""), `${out.reason} ~ ${why}`);
  }
  assertEquals(ubringObjects().filter((n) => n.endsWith("_C")), [], "no name left behind");
});

test("brpc-ubring client: a server that never answers the hello FAILs within the timeout", async () => {
  const listener = await tcp.listen({ host: "127.0.0.1", port: 0, onConnection: () => {} });
  try {
    const conn = await tcp.connect({ host: "127.0.0.1", port: listener.port });
    const out = await ubringClientHandshake(
      conn,
      brpcUbringOptionsSchema.parse({ handshakeTimeoutMs: 200 }),
    );
    assertEquals(out.state, "FAILED");
    assert(/within the handshake timeout/.test(out.reason!), out.reason);
  } finally {
    listener.close();
  }
});

test("brpc-ubring client: a fallback keeps the same connection on TCP", () =>
  withPeer({ hello: { helloVer: 0, implVer: 0 } }, async (p) => {
    const log = logger();
    const ch = await connect(`127.0.0.1:${p.port}`, { brpcUbring: {}, logger: log });
    try {
      assertEquals((await ch.call("t.P", "Echo", bytes(500, 1))).response, bytes(500, 1));
      assertEquals(ch.transport, "tcp");
      assertEquals(p.logs.length, 1);
      assertEquals(p.logs[0].ack, 0);
      assert(log.lines.some((l) => /FALLBACK_TCP.*zeroed versions/.test(l)), log.lines.join("\n"));
    } finally {
      await ch.close();
    }
  }));

/**
 * A peer that, once established, does `act` to the rings; verbus's calls must fail with `why`.
 * The first call connects (its request is written before `act`); the second is written after.
 * `after` runs while the peer's objects are still mapped.
 */
async function hostileRing(
  act: PeerServerConfig["established"],
  why: RegExp,
  after?: () => Promise<void>,
) {
  await withPeer({ established: act }, async (p) => {
    const ch = await connect(`127.0.0.1:${p.port}`, {
      brpcUbring: {},
      timeoutMs: 3000,
      logger: logger(),
    });
    try {
      const first = assertRejects(() => ch.call("t.P", "Echo", bytes(300, 2)));
      await until(() => p.logs[0]?.ack !== undefined);
      await new Promise((r) => setTimeout(r, 10));
      const second = assertRejects(() => ch.call("t.P", "Echo", bytes(300, 3)));
      for (const e of [await first, await second]) {
        assert(why.test(e.message), `${e.message} ~ ${why}`);
      }
      await after?.();
    } finally {
      await ch.close();
    }
  });
}

test("brpc-ubring client: hostile ring contents fail that connection, naming what was wrong", async () => {
  await hostileRing((r) => r.rawBlock(7, 10, 0), /block 0 of this side's ring has flag 7/);
  await hostileRing(
    (r) => r.rawBlock(2, 61, 0),
    /says 61 byte\(s\) from 0: past its 60-byte payload/,
  );
  await hostileRing((r) => r.rawBlock(2, 0, 0), /says 0 byte\(s\)/);
  await hostileRing((r) => r.rawBlock(2, 20, 20), /says 20 byte\(s\) from 20/);
  await hostileRing(
    (r) => r.lieTail(r.theirCap + 5),
    /tail 65540 is out of its ring of 65535 blocks/,
  );
  await hostileRing(
    (r) => r.lieTail(100),
    /tail moved from 65534 to 100, past the 6 block\(s\) written/,
  );
});

test("brpc-ubring client: the peer's close fails the connection and is acknowledged", async () => {
  let rings: PeerRings | null = null;
  await hostileRing(
    (r) => {
      rings = r;
      setTimeout(() => r.close(), 30);
    },
    /closed its ring/,
    () => until(() => rings!.closeAcked, 2000),
  );
});

test("brpc-ubring client: a peer that stops its heartbeat is dropped; verbus beats", async () => {
  let rings: PeerRings | null = null;
  await withPeer({ established: (r) => void (rings = r) }, async (p) => {
    const ch = await connect(`127.0.0.1:${p.port}`, {
      brpcUbring: { heartbeatMs: 20, heartbeatMisses: 2 },
      timeoutMs: 5000,
      logger: logger(),
    });
    try {
      const e = await assertRejects(() => ch.call("t.P", "Echo", bytes(10, 2)));
      assert(/the peer missed 3 heartbeats of 20 ms in a row/.test(e.message), e.message);
      assert(rings!.takeBeat(), "verbus set the peer's heart_beat");
    } finally {
      await ch.close();
    }
  });
});
