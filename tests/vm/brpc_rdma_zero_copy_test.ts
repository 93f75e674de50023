/**
 * brpc's RDMA mode without a per-message copy, over real Soft-RoCE (VM): two connections brought
 * up by the real handshake on rxe0 and rxe1, frames encoded straight into each side's registered
 * send ring and parsed from lent receive blocks, both directions at once: small frames many to a
 * block, frames spanning many blocks, writes too big for the ring. Every frame's bytes are
 * checked, and the counters say what was copied: nothing by the connections on receive, on send
 * only the big writes.
 */
import { FrameReceiver, sendFrame, until } from "../brpc_rdma/conn_pair.ts";
import {
  BrpcRdmaConn,
  brpcRdmaOptionsSchema,
  clientHandshake,
  openBrpcQp,
  serverHandshake,
} from "../../transport/brpc_rdma/mod.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import type { TcpConn } from "../../transport/tcp/tcp.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { SERVER_ADDR } from "./fabric_verbs_util.ts";

test("brpc-rdma over rxe, zero copy: frames leave from the send ring, blocks are lent, both ways, bytes intact", async () => {
  const base = { sqSize: 16, rqSize: 16, preparedQps: 0 };
  const so = brpcRdmaOptionsSchema.parse({ ...base, device: "rxe1" });
  const co = brpcRdmaOptionsSchema.parse({ ...base, device: "rxe0" });
  let accepted!: (c: Promise<TcpConn | null>) => void;
  const server = new Promise<TcpConn | null>((r) => (accepted = (p) => void p.then(r)));
  const listener = await tcp.listen({
    host: SERVER_ADDR,
    port: 0,
    onConnection: (c) => accepted(serverHandshake(c, so, openBrpcQp, 5000).then((o) => o.conn)),
  });
  const sock = await tcp.connect({ host: SERVER_ADDR, port: listener.port, timeoutMs: 20_000 });
  const out = await clientHandshake(sock, co, openBrpcQp);
  const a = out.conn, b = await server;
  try {
    assert(a instanceof BrpcRdmaConn && b instanceof BrpcRdmaConn, `${out.state} ${out.reason}`);
    const size = (i: number) =>
      i % 50 === 49 ? 200_000 : i % 10 === 9 ? 60_000 : 50 + (i * 37) % 900;
    const ra = new FrameReceiver(a, size, true, true), rb = new FrameReceiver(b, size, true, true);
    let total = 0, big = 0, n = 0;
    for (let round = 0; round < 20; round++) {
      for (let k = 0; k < 10; k++, n++) {
        const at = a.pendingWriteBytes;
        sendFrame(a, n, size(n));
        sendFrame(b, n, size(n));
        if (size(n) === 200_000) big += a.pendingWriteBytes - at;
      }
      total += a.pendingWriteBytes;
      await until(() => rb.frames === n && ra.frames === n, 30_000, rb);
      assertEquals(ra.bad, []);
    }
    ra.recheck();
    rb.recheck();
    assertEquals([ra.bad, rb.bad], [[], []]);
    const ca = a.counters, cb = b.counters;
    console.log(`     a→b: ${JSON.stringify(ca)}; parser at b copied ${rb.parser.copiedBytes}`);
    // The writes too big for the ring are copied; the rest leaves in place unless the ring had no
    // room for a frame (then it waits in heap memory and is copied: the other counter).
    assert(ca.copiedOnSend >= big, "writes too big for the ring are copied");
    assert(ca.sentInPlace >= (total - big) / 2, `in place ${ca.sentInPlace} of ${total}`);
    assertEquals(ca.sentInPlace + ca.copiedOnSend, total);
    assertEquals([cb.copiedOnReceive, cb.receivedLent], [0, total]);
    assert(rb.parser.copiedBytes <= total, "the parser copied each byte once at most");
  } finally {
    a?.close();
    b?.close();
    await listener.close();
  }
});
