/**
 * verbus's brpc RDMA client against a brpc server written in the test from the protocol
 * description (tests/vm/brpc_peer.ts), over rxe0 → rxe1: every field of verbus's hello, the ACK,
 * the block size limit (the peer announces 2048-byte blocks: every send of verbus stays within
 * one), the credit arithmetic (never more sends outstanding than min(SQ, peer RQ) − 3, and the
 * window runs dry and comes back when the peer withholds credits), standalone ACKs only past half
 * the window. Both runtimes.
 */
import { connect } from "../../rpc/channel.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { pattern, SERVER_ADDR } from "./fabric_verbs_util.ts";
import { startBrpcPeer } from "./brpc_peer.ts";

test("brpc-rdma client vs a protocol-description peer: hello, ACK, block limit, credits", async () => {
  const peer = await startBrpcPeer(SERVER_ADDR, "rxe1", {
    blockSize: 2048,
    sqSize: 32,
    rqSize: 32,
    holdCredits: true,
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
    assertEquals(log.frames, 101);
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
