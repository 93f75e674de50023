/**
 * The simulated liburma with one JFC shared by many jetties, as the hub uses it: receive
 * completions of WRITE_IMM name the local jetty (`local_id`) and carry the immediate, one armed
 * JFC wakes its JFCE for any of its jetties, and the JFC's depth is a limit like a device's — an
 * overrun is reported (the records that fit, then an error), never dropped silently.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { URMA_CR_OPC, URMA_TM } from "../../ffi/symbols/liburma.ts";
import {
  CrReader,
  URMA_WR_FLAG,
  UrmaRecvBatch,
  UrmaSendBatch,
} from "../../transport/urma/data_path.ts";
import { UrmaContext } from "../../transport/urma/context.ts";
import type { Jetty } from "../../transport/urma/jetty.ts";
import { loadSim, makeSide, SKIP_NO_SIM } from "./util.ts";

test(
  "one JFC for three jetties: WRITE_IMM receives name each jetty (local_id) and carry imm_data",
  async () => {
    const u = await loadSim();
    const jfcs = () => Number(/jfc=(\d+)/.exec(u.liveObjects()!.detail)?.[1]);
    const base = jfcs(); // the process's hub may hold one already
    const sender = makeSide(u, 4096, 1);
    const ctx = UrmaContext.open(u);
    try {
      const jfce = ctx.createJfce();
      const jfc = ctx.createJfc(64, jfce);
      const buf = new Uint8Array(3 * 4096);
      const seg = ctx.registerSegment(buf, { token: 7 });
      const jetties: Jetty[] = [];
      for (let k = 0; k < 3; k++) {
        const jfr = ctx.createJfr(jfc, { depth: 4, token: 7 });
        const jetty = ctx.createJetty(jfc, jfr, { depth: 4 });
        const rb = new UrmaRecvBatch(u, 1);
        rb.recv(seg, seg.address + k * 4096, 64, 100 + k);
        assertEquals(rb.post(jetty), 0, u.lastError());
        jetties.push(jetty);
      }
      const tseg = sender.ctx.importSegment(seg.descriptor, 7);
      jfc.rearm();
      const woken = jfce.wait(3000);
      const sb = new UrmaSendBatch(u, 3, 3);
      for (let k = 0; k < 3; k++) {
        const target = sender.ctx.importJetty(jetties[k].address, 7);
        sb.sge(sender.seg, sender.seg.address, 8);
        sb.writeImm(target, tseg, tseg.address + k * 4096 + 1024, 0xabc0 + k, k, 0);
      }
      assertEquals(sb.post(sender.jetty), 0, u.lastError());
      assert((await woken) >= 1, "the armed JFC woke its JFCE");
      const cr = new CrReader(8);
      assertEquals(jfc.poll(cr), 3);
      const seen = [0, 1, 2].map((i) => [cr.localId(i), cr.imm(i), cr.opcode(i), cr.isRecv(i)]);
      assertEquals(
        seen,
        jetties.map((j, k) => [j.address.id, 0xabc0 + k, URMA_CR_OPC.WRITE_WITH_IMM, true]),
      );
      assertEquals(jfcs(), base + 2, "the sender's and the shared one");
    } finally {
      ctx.close();
      sender.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "JFC depth is enforced: an overrun is reported (records that fit, then an error), and the armed JFCE fires",
  async () => {
    const u = await loadSim();
    const sender = makeSide(u, 4096, 2);
    const ctx = UrmaContext.open(u);
    try {
      const jfce = ctx.createJfce();
      const jfc = ctx.createJfc(4, jfce);
      const buf = new Uint8Array(4096);
      const seg = ctx.registerSegment(buf, { token: 9 });
      const jfr = ctx.createJfr(jfc, { depth: 16, token: 9 });
      const jetty = ctx.createJetty(jfc, jfr, { depth: 16 });
      const rb = new UrmaRecvBatch(u, 8);
      for (let k = 0; k < 8; k++) rb.recv(seg, seg.address, 64, k);
      assertEquals(rb.post(jetty), 0);
      const tseg = sender.ctx.importSegment(seg.descriptor, 9);
      const target = sender.ctx.importJetty(jetty.address, 9);
      const sb = new UrmaSendBatch(u, 6, 6);
      for (let k = 0; k < 6; k++) {
        sb.sge(sender.seg, sender.seg.address, 4);
        sb.writeImm(target, tseg, tseg.address, k, k, 0);
      }
      assertEquals(sb.post(sender.jetty), 0, u.lastError()); // the sender's side is fine
      const cr = new CrReader(8);
      assertEquals(jfc.poll(cr), 4, "the four that fit");
      let error = "";
      try {
        jfc.poll(cr);
      } catch (e) {
        error = (e as Error).message;
      }
      assert(/overrun|lost/i.test(error), `the overrun is reported: "${error}"`);
      // a JFC that overran stays failed (a device puts it in error), and its JFCE was told
      const after = ctx.createJfc(4, ctx.createJfce());
      assertEquals(after.poll(cr), 0, "a new JFC is fine");
    } finally {
      ctx.close();
      sender.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "an overrun wakes a sleeping owner: the JFCE fires even though the record did not fit",
  async () => {
    const u = await loadSim();
    const sender = makeSide(u, 4096, 3);
    const ctx = UrmaContext.open(u);
    try {
      const jfce = ctx.createJfce();
      const jfc = ctx.createJfc(1, jfce);
      const seg = ctx.registerSegment(new Uint8Array(4096), { token: 5 });
      const jfr = ctx.createJfr(jfc, { depth: 4, token: 5, transMode: URMA_TM.RM });
      const jetty = ctx.createJetty(jfc, jfr, { depth: 4 });
      const rb = new UrmaRecvBatch(u, 2);
      rb.recv(seg, seg.address, 64, 0);
      rb.recv(seg, seg.address, 64, 1);
      assertEquals(rb.post(jetty), 0);
      const tseg = sender.ctx.importSegment(seg.descriptor, 5);
      const target = sender.ctx.importJetty(jetty.address, 5);
      const first = new UrmaSendBatch(u, 1, 1);
      first.sge(sender.seg, sender.seg.address, 4);
      first.writeImm(target, tseg, tseg.address, 1, 1, URMA_WR_FLAG.SOLICITED);
      assertEquals(first.post(sender.jetty), 0);
      jfc.rearm(); // armed while a record waits: the owner did not poll yet
      const woken = jfce.wait(3000);
      const second = new UrmaSendBatch(u, 1, 1);
      second.sge(sender.seg, sender.seg.address, 4);
      second.writeImm(target, tseg, tseg.address, 2, 2, 0);
      assertEquals(second.post(sender.jetty), 0);
      assert((await woken) >= 1, "woken by the overrun");
    } finally {
      ctx.close();
      sender.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);
