/**
 * The hub when its JFC overruns (a peer in another context sends more notifications than the JFC
 * holds before the hub reaps): the records that fit are delivered, the overrun breaks the JFC,
 * every jetty on it is told why and announced (so its session notices), and the next jetty goes on
 * a fresh JFC (of the hub's one JFCE).
 */
import { assert, assertEquals, test } from "../harness.ts";
import type { CrReader } from "../../transport/urma/data_path.ts";
import { UrmaRecvBatch, UrmaSendBatch } from "../../transport/urma/data_path.ts";
import { UrmaHub } from "../../transport/urma/hub.ts";
import type { CompletionSink } from "../../transport/urma/hub_binding.ts";
import { closeHubs, loadSim, makeSide, SKIP_NO_SIM } from "./util.ts";

test(
  "a JFC overrun breaks the hub's JFC: its jetties are told why and announced; new jetties get a fresh JFC",
  async () => {
    const u = await loadSim();
    await closeHubs(u);
    const hub = UrmaHub.forProcess(u, undefined, 0, { jfcDepth: 8, cqesPerJetty: 1, prepared: 0 });
    const sender = makeSide(u, 4096, 11);
    try {
      const p = hub.pool.take("RM");
      let received = 0;
      const failures: string[] = [];
      const sink: CompletionSink = {
        onCompletion: (r: CrReader, i: number) => void (r.isRecv(i) && received++),
        afterReap() {},
        onJfcFailure: (why) => void failures.push(why),
      };
      const binding = hub.bind(p.jetty.address.id, p.home, sink);
      const seg = hub.ctx.registerSegment(new Uint8Array(4096), { token: p.token });
      const rb = new UrmaRecvBatch(u, 16);
      for (let k = 0; k < 16; k++) rb.recv(seg, seg.address, 64, k);
      assertEquals(rb.post(p.jetty), 0, u.lastError());
      const tseg = sender.ctx.importSegment(seg.descriptor, p.token);
      const target = sender.ctx.importJetty(p.jetty.address, p.token);
      const sb = new UrmaSendBatch(u, 12, 12);
      for (let k = 0; k < 12; k++) {
        sb.sge(sender.seg, sender.seg.address, 4);
        sb.writeImm(target, tseg, tseg.address, binding.token, k, 0);
      }
      assertEquals(sb.post(sender.jetty), 0, u.lastError());
      const before = hub.doorbell();
      const out = new Uint32Array(hub.capacity);
      const n1 = hub.collect(out); // the records that fit (a poll reports an overrun once drained)
      assert(received > 0 && received <= 8, `the records that fit were delivered (${received})`);
      assert(n1 >= 1, "the delivered receives announced the jetty");
      assertEquals(failures.length, 0, "nothing is known yet");
      const n = hub.collect(out); // the next poll reports it
      assertEquals(failures.length, 1, "the jetty was told");
      assert(/JFC failed.*(overrun|lost)/i.test(failures[0]), failures[0]);
      assert(n >= 1 && [...out.subarray(0, n)].includes(binding.token), "and announced");
      assert(hub.doorbell() !== before, "the doorbell moved");
      const first = p.home;
      assert(first.broken !== null, "the JFC is broken");
      assert(hub.jfcs.length === 2 && hub.jfcs[1].users === 1, "the wake jetty moved to a new JFC");
      const next = hub.placeJetty();
      assert(next === hub.jfcs[1] && next.broken === null, "a new jetty goes on the fresh JFC");
      hub.unplaceJetty(next);
      hub.unbind(binding);
      target.close();
      tseg.close();
      hub.pool.retire(p);
      seg.close();
    } finally {
      sender.ctx.close();
      hub.close();
    }
  },
  { skip: SKIP_NO_SIM },
);
