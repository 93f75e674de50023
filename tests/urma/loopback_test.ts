/**
 * URMA over the simulated liburma inside one process: two contexts, each with its own jetty and
 * segment, exchange WRITE, READ, WRITE_IMM and SEND_IMM; token, bounds and ordering rules; the
 * segment-before-jetty rule; RC bind; one-call urma_write/urma_read.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { URMA_CR_OPC, URMA_TM } from "../../ffi/symbols/liburma.ts";
import {
  CrReader,
  URMA_WR_FLAG,
  UrmaRecvBatch,
  UrmaSendBatch,
} from "../../transport/urma/data_path.ts";
import { URMA_CR } from "../../transport/urma/errors.ts";
import { closeHubs, loadSim, makeSide, pattern, pollSome, type Side, SKIP_NO_SIM } from "./util.ts";

const C = URMA_WR_FLAG.COMPLETE;

/** a imports b's segment then b's jetty (the required order). */
function connect(a: Side, b: Side, token = b.token) {
  const seg = a.ctx.importSegment(b.seg.descriptor, token);
  const tj = a.ctx.importJetty(b.jetty.address, token);
  return { seg, tj };
}

test(
  "WRITE, READ, WRITE_IMM and SEND_IMM between two jetties move the right bytes and immediates",
  async () => {
    const u = await loadSim();
    assert(u.simulated, "the simulator reports simulated: true");
    const a = makeSide(u, 8192, 0x1111), b = makeSide(u, 8192, 0x2222);
    try {
      const { seg: bSeg, tj } = connect(a, b);
      const sb = new UrmaSendBatch(u, 8, 8);
      // WRITE: two local SGEs gathered into b at offset 100
      pattern(a.buf, 7);
      sb.sge(a.seg, a.seg.address + 0, 300);
      sb.sge(a.seg, a.seg.address + 1000, 200);
      assertEquals(sb.write(tj, bSeg, bSeg.address + 100, 1, C), 0);
      // READ: b[4000..4100) into a[5000..)
      pattern(b.buf.subarray(4000, 4100), 99);
      sb.sge(a.seg, a.seg.address + 5000, 100);
      assertEquals(sb.read(tj, bSeg, bSeg.address + 4000, 2, C), 1);
      assertEquals(sb.post(a.jetty), 0, u.lastError());
      assertEquals(a.jfc.poll(a.cr), 2);
      assertEquals([a.cr.userCtx(0), a.cr.status(0), a.cr.completionLen(0)], [1, 0, 500]);
      assertEquals([a.cr.userCtx(1), a.cr.status(1), a.cr.completionLen(1)], [2, 0, 100]);
      assert(!a.cr.isRecv(0), "send-side completion");
      assertEquals(b.buf.subarray(100, 400), a.buf.subarray(0, 300));
      assertEquals(b.buf.subarray(400, 600), a.buf.subarray(1000, 1200));
      assertEquals(a.buf.subarray(5000, 5100), b.buf.subarray(4000, 4100));

      // SEND_IMM and WRITE_IMM consume b's receives, in order, with 64-bit immediates
      const rb = new UrmaRecvBatch(u, 4);
      rb.recv(b.seg, b.seg.address + 6000, 512, 70);
      rb.recv(b.seg, b.seg.address + 7000, 512, 71);
      assertEquals(rb.post(b.jetty), 0);
      sb.reset();
      a.buf.set([1, 2, 3, 4, 5], 0);
      sb.sge(a.seg, a.seg.address, 5);
      sb.send(tj, 0x1234_5678_9abc, 3, C);
      sb.sge(a.seg, a.seg.address, 64);
      sb.writeImm(tj, bSeg, bSeg.address + 3000, 42, 4, C);
      assertEquals(sb.post(a.jetty), 0, u.lastError());
      assertEquals(a.jfc.poll(a.cr), 2);
      assertEquals([a.cr.status(0), a.cr.status(1)], [0, 0]);
      const rc = new CrReader(8);
      assertEquals(b.jfc.poll(rc), 2);
      assert(rc.isRecv(0) && rc.isRecv(1), "receive completions");
      assertEquals([rc.userCtx(0), rc.opcode(0), rc.completionLen(0), rc.imm(0)], [
        70,
        URMA_CR_OPC.SEND_WITH_IMM,
        5,
        0x1234_5678_9abc,
      ]);
      assertEquals(rc.immBig(0), 0x1234_5678_9abcn);
      assertEquals([rc.userCtx(1), rc.opcode(1), rc.imm(1)], [71, URMA_CR_OPC.WRITE_WITH_IMM, 42]);
      assertEquals([rc.remoteUasid(0), rc.remoteId(0)], [
        a.jetty.address.uasid,
        a.jetty.address.id,
      ]);
      assertEquals([...b.buf.subarray(6000, 6005)], [1, 2, 3, 4, 5]);
      assertEquals(b.buf.subarray(3000, 3064), a.buf.subarray(0, 64));
    } finally {
      a.ctx.close();
      b.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "a wrong token completes with REM_ACCESS_ABORT (segment) and the right one works",
  async () => {
    const u = await loadSim();
    const a = makeSide(u, 4096, 1), b = makeSide(u, 4096, 0xbeef);
    try {
      const bad = a.ctx.importSegment(b.seg.descriptor, 0xdead); // import succeeds; access is refused
      const good = a.ctx.importSegment(b.seg.descriptor, 0xbeef);
      const tj = a.ctx.importJetty(b.jetty.address, 0xbeef);
      const sb = new UrmaSendBatch(u, 4, 4);
      sb.sge(a.seg, a.seg.address, 16);
      sb.write(tj, bad, bad.address, 1, C);
      sb.sge(a.seg, a.seg.address, 16);
      sb.read(tj, bad, bad.address, 2, C);
      sb.sge(a.seg, a.seg.address, 16);
      sb.write(tj, good, good.address, 3, C);
      assertEquals(sb.post(a.jetty), 0);
      assertEquals(a.jfc.poll(a.cr), 3);
      assertEquals([a.cr.status(0), a.cr.status(1), a.cr.status(2)], [
        URMA_CR.REM_ACCESS_ABORT_ERR,
        URMA_CR.REM_ACCESS_ABORT_ERR,
        URMA_CR.SUCCESS,
      ]);
      // a jetty imported with the wrong token: sends are refused the same way
      const badJetty = a.ctx.importJetty(b.jetty.address, 0x0bad);
      const rb = new UrmaRecvBatch(u, 1);
      rb.recv(b.seg, b.seg.address, 64, 9);
      rb.post(b.jetty);
      sb.reset();
      sb.sge(a.seg, a.seg.address, 8);
      sb.send(badJetty, 5, 4, C);
      assertEquals(sb.post(a.jetty), 0);
      assertEquals(a.jfc.poll(a.cr), 1);
      assertEquals(a.cr.status(0), URMA_CR.REM_ACCESS_ABORT_ERR);
    } finally {
      a.ctx.close();
      b.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "out of bounds: local → LOC_ACCESS, remote → REM_ACCESS_ABORT, missing receive → RNR",
  async () => {
    const u = await loadSim();
    const a = makeSide(u, 4096, 5), b = makeSide(u, 4096, 6);
    try {
      const { seg: bSeg, tj } = connect(a, b);
      const sb = new UrmaSendBatch(u, 8, 8);
      sb.sge(a.seg, a.seg.address + 4000, 200); // runs past a's segment
      sb.write(tj, bSeg, bSeg.address, 1, C);
      sb.sge(a.seg, a.seg.address, 200);
      sb.write(tj, bSeg, bSeg.address + 4000, 2, C); // runs past b's segment
      sb.sge(a.seg, a.seg.address, 8);
      sb.read(tj, bSeg, bSeg.address - 8, 3, C); // starts before it
      sb.sge(a.seg, a.seg.address, 8);
      sb.send(tj, 1, 4, C); // b posted no receive
      sb.sge(a.seg, a.seg.address, 8);
      sb.write(tj, bSeg, bSeg.address + 4088, 5, C); // exactly the last 8 bytes: fine
      assertEquals(sb.post(a.jetty), 0);
      assertEquals(a.jfc.poll(a.cr), 5);
      assertEquals([0, 1, 2, 3, 4].map((i) => a.cr.status(i)), [
        URMA_CR.LOC_ACCESS_ERR,
        URMA_CR.REM_ACCESS_ABORT_ERR,
        URMA_CR.REM_ACCESS_ABORT_ERR,
        URMA_CR.RNR_RETRY_CNT_EXC_ERR,
        URMA_CR.SUCCESS,
      ]);
      assertEquals(
        [0, 1, 2, 3, 4].map((i) => a.cr.userCtx(i)),
        [1, 2, 3, 4, 5],
        "completions in posting order",
      );
      // A malformed request is refused at post time (URMA_EINVAL), naming the first bad WR.
      sb.reset();
      sb.sge(a.seg, a.seg.address, 8);
      sb.write(tj, bSeg, bSeg.address, 6, C);
      new DataView(sb.wrs.buffer).setUint32(0, 0x77, true); // unknown opcode
      assertEquals(sb.post(a.jetty), 22);
      assertEquals(sb.badIndex, 0);
    } finally {
      a.ctx.close();
      b.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "a jetty imported before the peer's segment fails with RNR_RETRY_CNT_EXC (as the real stack does)",
  async () => {
    const u = await loadSim();
    // The simulator judges "imported before the segment" per process: the sessions of earlier
    // tests and the process's hubs (their wake jetties import their own segment) must be gone.
    await closeHubs(u);
    const a = makeSide(u, 4096, 5), b = makeSide(u, 4096, 6);
    try {
      const early = a.ctx.importJetty(b.jetty.address, 6); // before importing b's segment
      const bSeg = a.ctx.importSegment(b.seg.descriptor, 6);
      const late = a.ctx.importJetty(b.jetty.address, 6);
      const sb = new UrmaSendBatch(u, 4, 4);
      sb.sge(a.seg, a.seg.address, 8);
      sb.write(early, bSeg, bSeg.address, 1, C);
      sb.sge(a.seg, a.seg.address, 8);
      sb.write(late, bSeg, bSeg.address, 2, C);
      assertEquals(sb.post(a.jetty), 0);
      assertEquals(a.jfc.poll(a.cr), 2);
      assertEquals([a.cr.status(0), a.cr.status(1)], [
        URMA_CR.RNR_RETRY_CNT_EXC_ERR,
        URMA_CR.SUCCESS,
      ]);
    } finally {
      a.ctx.close();
      b.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "RC: bound jetties exchange SEND_IMM; one-call urma_write / urma_read through a JFS",
  async () => {
    const u = await loadSim();
    const a = makeSide(u, 4096, 3, URMA_TM.RC), b = makeSide(u, 4096, 4, URMA_TM.RC);
    try {
      const { tj } = connect(a, b); // imports b's segment first, then its jetty
      a.jetty.bind(tj);
      assert(a.jetty.bound === tj, "bound");
      const rb = new UrmaRecvBatch(u, 1);
      rb.recv(b.seg, b.seg.address, 128, 11);
      assertEquals(rb.post(b.jetty), 0);
      const sb = new UrmaSendBatch(u, 2, 2);
      sb.sge(a.seg, a.seg.address, 16);
      sb.send(tj, 77, 1, C);
      assertEquals(sb.post(a.jetty), 0, u.lastError());
      assertEquals(a.jfc.poll(a.cr), 1);
      assertEquals(a.cr.status(0), 0);
      const rc = new CrReader(4);
      assertEquals(b.jfc.poll(rc), 1);
      assertEquals([rc.imm(0), rc.userCtx(0)], [77, 11]);

      // one-call forms need a JFS; RC JFS would need a bind, so use an RM pair for them
      const c = makeSide(u, 4096, 8), d = makeSide(u, 4096, 9);
      try {
        const { seg: dSeg, tj: dj } = connect(c, d);
        const jfs = c.ctx.createJfs(c.jfc);
        pattern(c.buf, 3);
        assertEquals(
          jfs.write(dj, dSeg, c.seg, dSeg.address + 10, c.seg.address, 100, C, 5),
          0,
          u.lastError(),
        );
        assertEquals(
          jfs.read(dj, c.seg, dSeg, c.seg.address + 2000, dSeg.address + 10, 100, C, 6),
          0,
        );
        assertEquals(c.jfc.poll(c.cr), 2);
        assertEquals([c.cr.status(0), c.cr.status(1)], [0, 0]);
        assertEquals(d.buf.subarray(10, 110), c.buf.subarray(0, 100));
        assertEquals(c.buf.subarray(2000, 2100), c.buf.subarray(0, 100));
      } finally {
        c.ctx.close();
        d.ctx.close();
      }
    } finally {
      a.ctx.close();
      b.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "JFCE: an armed JFC wakes the nonblocking wait; the event loop keeps running meanwhile",
  async () => {
    const u = await loadSim();
    const a = makeSide(u, 4096, 1), b = makeSide(u, 4096, 2);
    try {
      const { tj } = connect(a, b);
      const rb = new UrmaRecvBatch(u, 1);
      rb.recv(b.seg, b.seg.address, 64, 1);
      rb.post(b.jetty);
      b.jfc.rearm();
      assertEquals(await b.jfce.wait(20), 0, "nothing yet: times out");
      let ticks = 0;
      const timer = setInterval(() => ticks++, 5);
      const waiting = b.jfce.wait(5000);
      const t0 = performance.now();
      setTimeout(() => {
        const sb = new UrmaSendBatch(u, 1, 1);
        sb.sge(a.seg, a.seg.address, 8);
        sb.send(tj, 1, 1, 0);
        sb.post(a.jetty);
      }, 60);
      assertEquals(await waiting, 1, "one JFC event");
      clearInterval(timer);
      assert(performance.now() - t0 < 4000, "woken by the completion, not the timeout");
      assert(ticks >= 3, `timers ran while waiting (${ticks})`);
      assertEquals(await pollSome(b), 1);
      assertEquals(b.cr.imm(0), 1);
    } finally {
      a.ctx.close();
      b.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test("100 create / import / delete cycles leave zero live objects", async () => {
  const u = await loadSim();
  const before = u.liveObjects()!.total;
  for (let i = 0; i < 100; i++) {
    const a = makeSide(u, 1024, i), b = makeSide(u, 1024, i + 1);
    const { seg, tj } = connect(a, b);
    const sb = new UrmaSendBatch(u, 1, 1);
    sb.sge(a.seg, a.seg.address, 8);
    sb.write(tj, seg, seg.address, i, C);
    assertEquals(sb.post(a.jetty), 0);
    assertEquals(a.jfc.poll(a.cr), 1);
    assertEquals(a.cr.status(0), 0);
    if (i % 2) {
      tj.close();
      seg.close();
    }
    a.ctx.close();
    b.ctx.close();
    a.ctx.close(); // safe twice
  }
  const after = u.liveObjects()!;
  assertEquals(after.total, before, after.detail);
  // the counter does see a leak
  const c = makeSide(u, 64, 1);
  assertEquals(u.liveObjects()!.total, before + 6, "context, jfce, jfc, jfr, jetty, segment");
  c.ctx.close();
  assertEquals(u.liveObjects()!.total, before);
}, { skip: SKIP_NO_SIM, timeoutMs: 60_000 });
