/**
 * verbus's brpc RDMA client against a brpc server written in the test from the protocol
 * description (tests/vm/brpc_peer.ts), over rxe0 → rxe1: every field of verbus's hello, the ACK,
 * the block size limit (the peer announces 2048-byte blocks: every send of verbus stays within
 * one), the credit arithmetic (never more sends outstanding than min(SQ, peer RQ) − 3, and the
 * window runs dry and comes back when the peer withholds credits), standalone ACKs only past half
 * the window, every burst ending in a SOLICITED send (the peer sleeps as brpc does, woken by
 * solicited completions only); and the same peer as a brpc client of a verbus server. Both runtimes.
 */
import { ConnectionClosedError } from "../../errors.ts";
import { connect } from "../../rpc/tcp/channel.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { CLIENT_ADDR, pattern, SERVER_ADDR, TEST_SERVICES } from "./fabric_verbs_util.ts";
import { serve } from "../../rpc/server/server.ts";
import { startBrpcPeer } from "./brpc_peer.ts";

test("brpc-rdma client vs a protocol-description peer: hello, ACK, block limit, credits", async () => {
  const peer = await startBrpcPeer(SERVER_ADDR, "rxe1", {
    blockSize: 2048,
    sqSize: 32,
    rqSize: 32,
    holdCredits: true,
    solicitedEvents: true,
  });
  const lines: string[] = [];
  const ch = await connect(`${SERVER_ADDR}:${peer.port}`, {
    // In the VM both addresses are local (TCP goes through lo): name the device, as brpc's
    // -rdma_device does, so the QP is on rxe0 and crosses the veth pair.
    brpcRdma: { device: "rxe0" },
    timeoutMs: 30_000,
    logger: { warn: (m) => void lines.push(m) },
  }).catch((e) => {
    throw new Error(`${e.message}; peer saw ${JSON.stringify(peer.logs)}`);
  });
  try {
    assertEquals(
      ch.transport,
      "brpc-rdma",
      `${lines.join("\n")}\npeer: ${JSON.stringify(peer.logs)}`,
    );
    const calls = Array.from({ length: 100 }, (_, i) => {
      const req = pattern(i % 2 === 0 ? 3000 : 10 + i, i);
      return ch.call("t.P", "Echo", req).then((r) => assertEquals(r.response, req, `call ${i}`));
    });
    await Promise.all(calls);
    // Lone small calls: each one send, neither at a window edge nor a batch end — it must still
    // be SOLICITED, or the peer (sleeping as brpc does) never wakes for it.
    for (let i = 0; i < 4; i++) {
      const r = await ch.call("t.P", "Echo", pattern(50, i));
      assertEquals(r.response, pattern(50, i));
    }
    const big = pattern(200_000, 5);
    assertEquals((await ch.call("t.P", "Echo", big)).response, big);
    const log = peer.logs[0];
    assertEquals(log.violations, []);
    assertEquals(log.hello.magic, "RDMA");
    assertEquals(
      [log.hello.msgLen, log.hello.helloVer, log.hello.implVer],
      [40, 2, 1],
    );
    assertEquals([log.hello.blockSize, log.hello.sqSize, log.hello.rqSize], [8160, 128, 128]);
    assertEquals(log.hello.gid, "0.0.0.0.0.0.0.0.0.0.255.255.10.77.0.1", "rxe0's IPv4 GID");
    const qpn = log.hello.qpNum as number;
    assert(qpn > 0 && qpn < 1 << 24, `qp_num ${qpn}`);
    assertEquals(log.ack, "00000001");
    assertEquals(log.frames, 105);
    assertEquals(log.maxRecvLen, 2048, "big messages are cut at the peer's block");
    // min(client SQ 128, peer RQ 32) − 3 = 29: reached (credits ran out), never passed.
    assertEquals(log.maxOutstanding, 29);
    assert(log.ackImms.every((imm) => imm > log.ackAbove), `ACKs ${log.ackImms} > ${log.ackAbove}`);
    assert(log.creditsIn > 0, "the client returned credits for the peer's answers");
  } finally {
    await ch.close();
    peer.close();
  }
});

test("brpc-rdma server vs a protocol-description client: its hello, block limit, credits", async () => {
  // The peer client on rxe0 announces 1024-byte blocks and 16-deep queues: the server's sends
  // must stay within 1024 bytes and within min(128, 16) − 3 = 13 outstanding.
  const peer = await startBrpcPeer(CLIENT_ADDR, "rxe0", {
    blockSize: 1024,
    sqSize: 16,
    rqSize: 16,
    holdCredits: true,
  });
  const lines: string[] = [];
  const server = await serve({
    port: 0,
    host: SERVER_ADDR,
    services: TEST_SERVICES,
    brpcRdma: { device: "rxe1" },
    logger: { warn: (m) => void lines.push(m) },
  });
  try {
    const requests = Array.from({ length: 60 }, (_, i) => pattern(i % 3 === 0 ? 3000 : 40 + i, i));
    const log = await peer.client(SERVER_ADDR, server.port, requests);
    assertEquals(log.violations, [], lines.join("\n"));
    assertEquals(log.frames, 60, "every answer, each equal to its request");
    assertEquals(log.hello.magic, "RDMA");
    assertEquals([log.hello.msgLen, log.hello.helloVer, log.hello.implVer], [40, 2, 1]);
    assertEquals([log.hello.blockSize, log.hello.sqSize, log.hello.rqSize], [8160, 128, 128]);
    assertEquals(log.hello.gid, "0.0.0.0.0.0.0.0.0.0.255.255.10.77.0.2", "rxe1's IPv4 GID");
    assertEquals(log.maxRecvLen, 1024, "answers cut at the peer's 1024-byte block");
    assertEquals(log.maxOutstanding, 13, "the server's window min(128, 16) − 3, reached");
    assert(log.ackImms.every((imm) => imm > log.ackAbove), `ACKs ${log.ackImms} > ${log.ackAbove}`);
    assertEquals(server.brpcRdma!.outcomes.ESTABLISHED, 1);
  } finally {
    await server.close();
    peer.close();
  }
});

test("brpc-rdma client: the peer dies (QP to ERR, TCP closed) — the call fails, the next reconnects", async () => {
  const peer = await startBrpcPeer(SERVER_ADDR, "rxe1", {
    blockSize: 8192,
    sqSize: 64,
    rqSize: 64,
    holdCredits: false,
    errorAfterFrames: 3,
  });
  const ch = await connect(`${SERVER_ADDR}:${peer.port}`, {
    brpcRdma: { device: "rxe0" },
    timeoutMs: 20_000,
    logger: { warn() {} },
  });
  try {
    for (let i = 0; i < 2; i++) await ch.call("t.P", "Echo", pattern(100, i));
    const lost = await ch.call("t.P", "Echo", pattern(100, 2)).then(() => null, (e) => e);
    assert(lost instanceof ConnectionClosedError, `the call in flight fails like a reset: ${lost}`);
    const again = await ch.call("t.P", "Echo", pattern(5000, 3));
    assertEquals(again.response, pattern(5000, 3), "the next call reconnected");
    assertEquals(ch.transport, "brpc-rdma");
    assertEquals(peer.logs.length, 2);
    assertEquals(peer.logs[1].violations, []);
  } finally {
    await ch.close();
    peer.close();
  }
});
