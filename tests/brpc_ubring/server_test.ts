/**
 * A verbus server in brpc's UBRing mode against a client peer written from the protocol
 * description (ubring_peer.ts): every field of the server's hello, calls over the rings; hostile
 * client hellos (a name that is not the client's own object, a size that is not one, an object
 * smaller than announced, a name with no NUL, other versions) end FAILED or FALLBACK_TCP with
 * the reason and nothing left in /dev/shm; hostile ring contents fail that connection only: the
 * server serves the next client; plain TCP clients of a UBRing server, and UBRing clients of a
 * plain server, are served over TCP. Both runtimes.
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { encodeFrame } from "../../rpc/protocol/frame.ts";
import { type Handler, serve, type Server } from "../../rpc/server/server.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { bytes, logger, ubringObjects, until } from "./util.ts";
import { MiB, peerClient, type PeerClientConfig } from "./ubring_peer.ts";

const services: Record<string, Record<string, Handler>> = { "t.B": { Echo: (r) => r } };

async function withServer<T>(
  fn: (s: Server, log: ReturnType<typeof logger>) => Promise<T>,
): Promise<T> {
  const log = logger();
  const s = await serve({ port: 0, services, brpcUbring: {}, fabric: false, logger: log });
  try {
    return await fn(s, log);
  } finally {
    await s.close();
  }
}

/** A well-behaved peer client's call, as proof the server still serves. */
async function goodCall(port: number, id: number): Promise<void> {
  const c = await peerClient(port);
  assert(c.ok, `handshake: ${!c.ok && c.why}`);
  try {
    assertEquals(await c.call("t.B", "Echo", bytes(5000, id), id), bytes(5000, id));
  } finally {
    c.close();
  }
}

test("brpc-ubring server vs a protocol-description client: hello fields, calls over the rings", () =>
  withServer(async (s) => {
    const c = await peerClient(s.port);
    assert(c.ok, !c.ok ? c.why : "");
    try {
      assertEquals([c.hello.magic, c.hello.msgLen, c.hello.helloVer, c.hello.implVer], [
        "UB",
        64,
        2,
        1,
      ]);
      assertEquals(c.hello.len, BigInt(4 * MiB));
      assertEquals(
        c.hello.name,
        `UBRING_127.0.0.1:${c.conn.localAddress.port}_C`,
        "the client's name echoed",
      );
      for (let i = 1; i <= 20; i++) {
        const req = bytes(i * 997, i);
        assertEquals(await c.call("t.B", "Echo", req, i), req, `call ${i}`);
      }
      assertEquals(s.brpcUbring!.outcomes.ESTABLISHED, 1);
      assertEquals(ubringObjects(), [], "both names unlinked once established");
    } finally {
      c.close();
    }
  }));

test("brpc-ubring server: hostile client hellos end FAILED or FALLBACK_TCP with the reason", () =>
  withServer(async (s, log) => {
    const nul48 = new Uint8Array(48).fill(0x41);
    const cases: [PeerClientConfig, string, RegExp][] = [
      [
        { name: "UBRING_127.0.0.1:1_C" },
        "FAILED",
        /names shm object "UBRING_127\.0\.0\.1:1_C", but the client/,
      ],
      [{ hello: { name: nul48 } }, "FAILED", /no NUL in its 48 bytes/],
      [
        { hello: { len: BigInt(8 * MiB) } },
        "FAILED",
        /has 4194304 bytes, fewer than the 8388608 announced/,
      ],
      [{ hello: { len: BigInt(5 * MiB) } }, "FAILED", /5242880 is not a multiple of 4194304/],
      [{ hello: { len: 1n << 62n } }, "FAILED", /is not a multiple/],
      [{ hello: { msgLen: 63 } }, "FAILED", /msg_len 63 is below 64/],
      [{ hello: { helloVer: 9, implVer: 9 } }, "FALLBACK_TCP", /hello_ver 9 \/ impl_ver 9/],
    ];
    let n = 0;
    for (const [cfg, state, why] of cases) {
      const c = await peerClient(s.port, cfg);
      if (c.ok) c.close();
      else c.conn.close();
      n++;
      await until(() => Object.values(s.brpcUbring!.outcomes).reduce((a, b) => a + b, 0) === n);
      assertEquals(s.brpcUbring!.outcomes[state] > 0, true, `${state} for ${why}`);
      assert(log.lines.some((l) => why.test(l)), `${why} in ${log.lines.join("\n")}`);
    }
    assertEquals(s.brpcUbring!.outcomes.FAILED, 6);
    assertEquals(s.brpcUbring!.outcomes.FALLBACK_TCP, 1);
    assertEquals(ubringObjects(), [], "nothing left in /dev/shm");
    await goodCall(s.port, 7);
  }));

test("brpc-ubring server: hostile ring contents fail that connection only", () =>
  withServer(async (s, log) => {
    const acts: [
      string,
      (c: Awaited<ReturnType<typeof peerClient>> & { ok: true }) => void,
      RegExp,
    ][] = [
      ["bad flag", (c) => c.rings.rawBlock(5, 10, 0), /has flag 5/],
      [
        "length past the block",
        (c) => c.rings.rawBlock(2, 200, 0),
        /says 200 byte\(s\) from 0: past its 60-byte/,
      ],
      ["tail out of the ring", (c) => {
        c.rings.lieTail(70_000);
        c.rings.write(
          encodeFrame(
            { request: { serviceName: "t.B", methodName: "Echo" }, correlationId: 1 },
            bytes(10, 1),
          ),
        );
      }, /tail 70000 is out of its ring/],
    ];
    for (const [what, act, why] of acts) {
      const c = await peerClient(s.port);
      assert(c.ok, what);
      act(c);
      await until(() => c.closed, 3000);
      assert(log.lines.some((l) => why.test(l)), `${what}: ${why} in ${log.lines.join("\n")}`);
      c.close();
      await goodCall(s.port, 3);
    }
    assertEquals(s.brpcUbring!.outcomes.ESTABLISHED, 6);
  }));

test("brpc-ubring: plain TCP clients of a UBRing server, UBRing clients of a plain server", async () => {
  await withServer(async (s) => {
    const ch = await connect(`127.0.0.1:${s.port}`);
    try {
      assertEquals((await ch.call("t.B", "Echo", bytes(100, 1))).response, bytes(100, 1));
      assertEquals(ch.transport, "tcp");
      assertEquals(s.brpcUbring!.outcomes.NOT_UBRING, 1);
    } finally {
      await ch.close();
    }
  });
  const plain = await serve({ port: 0, services, fabric: false, logger: logger() });
  const log = logger();
  const ch = await connect(`127.0.0.1:${plain.port}`, { brpcUbring: {}, logger: log });
  try {
    assertEquals((await ch.call("t.B", "Echo", bytes(100, 2))).response, bytes(100, 2));
    assertEquals(ch.transport, "tcp");
    assert(
      log.lines.some((l) => /brpc-ubring client to .*: using plain TCP/.test(l)),
      log.lines.join("\n"),
    );
  } finally {
    await ch.close();
    await plain.close();
  }
  assertEquals(ubringObjects(), []);
});
