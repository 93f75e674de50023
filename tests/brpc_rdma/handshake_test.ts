/**
 * brpc's RDMA handshake against hostile peers, both directions, on the host (QPs from the
 * in-memory fake): the test's peer writes hellos byte by byte from the protocol description
 * (BRIEF §4), not with verbus's codec. Wrong magic, a short hello, msg_len out of bounds, huge
 * sizes, a bogus QPN or GID, zeroed versions, a lying ACK: each ends in FALLBACK_TCP or FAILED
 * with the reason, within the handshake timeout — never a crash or a hang.
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { type Handler, serve } from "../../rpc/server/server.ts";
import { encodeFrame, FrameParser } from "../../rpc/protocol/frame.ts";
import { clientHandshake } from "../../transport/brpc_rdma/handshake.ts";
import { _setBrpcQpFactory } from "../../transport/brpc_rdma/mod.ts";
import { brpcRdmaOptionsSchema } from "../../transport/brpc_rdma/options.ts";
import { RawReader, tcp } from "../../transport/tcp/mod.ts";
import type { TcpConn } from "../../transport/tcp/tcp.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { fakeFactory } from "./fake_qp.ts";

const services: Record<string, Record<string, Handler>> = { "t.B": { Echo: (r) => r } };
const OPTS = { handshakeTimeoutMs: 300 };

/** A v2 hello written field by field (big-endian), as the protocol description has it. */
function rawHello(f: {
  msgLen?: number;
  hello?: number;
  impl?: number;
  block?: number;
  sq?: number;
  rq?: number;
  lid?: number;
  gid?: number[];
  qpn?: number;
  magic?: string;
}): Uint8Array {
  const b = new Uint8Array(40);
  const d = new DataView(b.buffer);
  b.set(new TextEncoder().encode(f.magic ?? "RDMA"), 0);
  d.setUint16(4, f.msgLen ?? 40);
  d.setUint16(6, f.hello ?? 2);
  d.setUint16(8, f.impl ?? 1);
  d.setUint32(10, f.block ?? 8192);
  d.setUint16(14, f.sq ?? 128);
  d.setUint16(16, f.rq ?? 128);
  d.setUint16(18, f.lid ?? 0);
  b.set(f.gid ?? Array.from({ length: 16 }, (_, i) => i + 1), 20);
  d.setUint32(36, f.qpn ?? 0x42);
  return b;
}

function closedWithin(conn: TcpConn, ms: number): Promise<boolean> {
  if (conn.closed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    conn.onClose(() => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

async function withServer(
  fn: (
    port: number,
    s: Awaited<ReturnType<typeof serve>>,
    lines: string[],
    f: ReturnType<typeof fakeFactory>,
  ) => Promise<void>,
) {
  const f = fakeFactory();
  _setBrpcQpFactory(f.factory);
  const lines: string[] = [];
  const server = await serve({
    port: 0,
    services,
    brpcRdma: OPTS,
    logger: { warn: (m) => void lines.push(m) },
  });
  try {
    await fn(server.port, server, lines, f);
  } finally {
    _setBrpcQpFactory(null);
    await server.close();
  }
}

test("brpc-rdma server: every field of its hello; absurd client sizes are taken, ACK 0 keeps TCP", () =>
  withServer(async (port, server, _lines, f) => {
    const peer = await f.factory(brpcRdmaOptionsSchema.parse({})); // the QP this client "has"
    const conn = await tcp.connect({ host: "127.0.0.1", port });
    const r = new RawReader(conn);
    // A client with absurd (but legal) sizes: the server's windows take the minimum.
    conn.write(rawHello({ sq: 65535, rq: 65535, block: 0xffffffff, qpn: peer.qpNum }));
    const h = await r.read(40);
    const d = new DataView(h.buffer);
    assertEquals(new TextDecoder().decode(h.subarray(0, 4)), "RDMA");
    assertEquals([d.getUint16(4), d.getUint16(6), d.getUint16(8)], [40, 2, 1]);
    assertEquals(d.getUint32(10), 8160, "block_size: brpc's 8 KiB - 32");
    assertEquals([d.getUint16(14), d.getUint16(16)], [128, 128]);
    assertEquals(Array.from(h.subarray(20, 36)), new Array(16).fill(0xfe), "the fake's GID");
    const serverQp = f.made.find((q) => q.qpNum === d.getUint32(36))!;
    assert(serverQp !== undefined && serverQp.peer === peer, "brought up against our QPN");
    // ACK 0: both stay on TCP, the server's QP is released.
    conn.write(Uint8Array.of(0, 0, 0, 0));
    r.release();
    await new Promise((res) => setTimeout(res, 30));
    assertEquals(server.brpcRdma!.outcomes.FALLBACK_TCP, 1);
    assert(serverQp.closed, "QP released on fallback");
    conn.close();
  }));

test("brpc-rdma server: hostile hellos end FAILED (closed) or in a zeroed hello, never hang", () =>
  withServer(async (port, server, lines) => {
    const cases: [string, Uint8Array, "closed" | "zeroed"][] = [
      ["short hello", rawHello({}).subarray(0, 15), "closed"],
      ["msg_len 39", rawHello({ msgLen: 39 }), "closed"],
      ["msg_len 5000", rawHello({ msgLen: 5000 }), "closed"],
      ["msg_len 100, body missing", rawHello({ msgLen: 100 }), "closed"],
      ["zeroed versions", rawHello({ hello: 0, impl: 0 }), "zeroed"],
      ["hello_ver 3", rawHello({ hello: 3 }), "zeroed"],
      ["block 512", rawHello({ block: 512 }), "zeroed"],
      ["sq 4", rawHello({ sq: 4 }), "zeroed"],
      ["bogus QPN 0", rawHello({ qpn: 0 }), "zeroed"],
      ["QPN not a QP here", rawHello({ qpn: 0xabcdef }), "zeroed"],
      ["zero GID", rawHello({ gid: new Array(16).fill(0) }), "zeroed"],
    ];
    for (const [what, bytes, expect] of cases) {
      const conn = await tcp.connect({ host: "127.0.0.1", port });
      const r = new RawReader(conn);
      conn.write(bytes);
      if (expect === "closed") {
        assert(await closedWithin(conn, 2000), `${what}: closed within the timeout`);
        continue;
      }
      const h = await r.read(40);
      const d = new DataView(h.buffer);
      assertEquals(new TextDecoder().decode(h.subarray(0, 4)), "RDMA", what);
      assertEquals([d.getUint16(6), d.getUint16(8), d.getUint32(10), d.getUint32(36)], [
        0,
        0,
        0,
        0,
      ], `${what}: zeroed hello`);
      // Lying ACK: RDMA OK after the server said no → FAILED, closed.
      conn.write(Uint8Array.of(0, 0, 0, 1));
      assert(await closedWithin(conn, 2000), `${what}: ACK 1 after a zeroed hello closes`);
    }
    assert(
      server.brpcRdma!.outcomes.FAILED >= cases.length,
      JSON.stringify(server.brpcRdma!.outcomes),
    );
    assert(lines.some((l) => l.includes("msg_len 5000")), "reason logged");
    // The server still serves everyone else.
    const ch = await connect(`127.0.0.1:${port}`, { brpcRdma: {} });
    assertEquals((await ch.call("t.B", "Echo", Uint8Array.of(7))).response, Uint8Array.of(7));
    await ch.close();
  }));

test("brpc-rdma server: zeroed hello, ACK 0, then baidu_std on the same TCP connection", () =>
  withServer(async (port, server) => {
    const conn = await tcp.connect({ host: "127.0.0.1", port });
    const r = new RawReader(conn);
    conn.write(rawHello({ hello: 0, impl: 0 }));
    await r.read(40);
    conn.write(Uint8Array.of(0, 0, 0, 0));
    conn.write(
      encodeFrame(
        { request: { serviceName: "t.B", methodName: "Echo" }, correlationId: 5 },
        Uint8Array.of(1, 2, 3),
      ),
    );
    const rest = r.release();
    const got = new Promise<Uint8Array>((resolve) => {
      const p = new FrameParser((_m, payload) => resolve(payload.slice()));
      if (rest.length) p.push(rest);
      conn.onData((c) => p.push(c));
    });
    assertEquals(await got, Uint8Array.of(1, 2, 3));
    assertEquals(server.brpcRdma!.outcomes.FALLBACK_TCP, 1);
    conn.close();
  }));

/** A raw TCP "server" that answers a hello with `answer` (then optionally more bytes). */
async function hostileServer(answer: Uint8Array | null) {
  const conns: TcpConn[] = [];
  const listener = await tcp.listen({
    host: "127.0.0.1",
    port: 0,
    onConnection(c) {
      conns.push(c);
      const r = new RawReader(c);
      void r.read(40).then(() => {
        if (answer === null) c.close();
        else c.write(answer);
      }, () => {});
    },
  });
  return { listener, conns };
}

test("brpc-rdma client: hostile server hellos end FALLBACK_TCP or FAILED with the reason", async () => {
  const f = fakeFactory();
  const opts = brpcRdmaOptionsSchema.parse(OPTS);
  const cases: [string, Uint8Array | null, string, string][] = [
    ["closes on the hello", null, "FAILED", "closes on the hello"],
    ["wrong magic", rawHello({ magic: "PRPC" }), "FAILED", '"PRPC"'],
    ["short hello", rawHello({}).subarray(0, 12), "FAILED", "handshake timeout"],
    ["msg_len 4097", rawHello({ msgLen: 4097 }), "FAILED", "4097"],
    [
      "zeroed versions",
      rawHello({ hello: 0, impl: 0, block: 0, sq: 0, rq: 0, qpn: 0 }),
      "FALLBACK_TCP",
      "zeroed versions",
    ],
    ["bogus QPN", rawHello({ qpn: 0x123456 }), "FALLBACK_TCP", "bring-up failed"],
    ["huge QPN", rawHello({ qpn: 0xffffffff }), "FALLBACK_TCP", "qp_num"],
    ["tiny rq", rawHello({ rq: 1 }), "FALLBACK_TCP", "rq_size 1"],
  ];
  for (const [what, answer, state, reason] of cases) {
    const { listener, conns } = await hostileServer(answer);
    const conn = await tcp.connect({ host: "127.0.0.1", port: listener.port });
    const t0 = Date.now();
    const out = await clientHandshake(conn, opts, f.factory);
    assert(Date.now() - t0 < 2000, `${what}: no hang`);
    assertEquals(out.state, state, `${what}: ${out.reason}`);
    assert(out.reason!.includes(reason), `${what}: reason "${out.reason}"`);
    if (state === "FALLBACK_TCP") {
      assert(out.conn === conn && !conn.closed, `${what}: the TCP connection goes on`);
      // The client told the server with ACK 0.
      const s = conns[0];
      const ack = await new RawReader(s).read(4).catch(() => new Uint8Array(4).fill(9));
      assertEquals(Array.from(ack), [0, 0, 0, 0], `${what}: ACK 0`);
    } else assert(out.conn === null && conn.closed, `${what}: closed`);
    conn.close();
    for (const c of conns) c.close();
    listener.close();
  }
  assert(f.made.every((q) => q.closed), "every QP of a failed handshake is released");
});

test("brpc-rdma server: connections still in their handshake are bounded by maxConnections", async () => {
  const lines: string[] = [];
  const server = await serve({
    port: 0,
    services,
    brpcRdma: OPTS,
    maxConnections: 2,
    logger: { warn: (m) => void lines.push(m) },
  });
  try {
    const quiet = [];
    for (let i = 0; i < 2; i++) {
      quiet.push(await tcp.connect({ host: "127.0.0.1", port: server.port }));
    }
    await new Promise((r) => setTimeout(r, 30));
    const third = await tcp.connect({ host: "127.0.0.1", port: server.port });
    assert(await closedWithin(third, 2000), "the third silent connection is closed");
    assert(!quiet[0].closed && !quiet[1].closed, "the first two wait for their first bytes");
    assert(lines.some((l) => l.includes("2 in their handshake")), lines.join("\n"));
    for (const q of quiet) q.close();
  } finally {
    await server.close();
  }
});
