/**
 * URMA asynchronous events on the simulated liburma: an injected jetty error
 * (urma_sim_inject_async_event → the context's async_fd → urma_get_async_event, read off the JS
 * thread) fails only the session whose jetty it names, with the event named; that client's
 * calls fall back to TCP and its session is negotiated again, while another session on the same
 * server keeps its fabric path throughout. An idle reader makes one long wait, which the last
 * watcher leaving, or the context closing, ends at once.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { client, echoUntilFabric, pattern, startServer, until } from "../fabric/util.ts";
import type { UrmaEndpoint } from "../../transport/urma/endpoint.ts";
import { ASYNC_WAIT_MS, UrmaAsyncEvents } from "../../transport/urma/async_events.ts";
import { UrmaRecvBatch } from "../../transport/urma/data_path.ts";
import { flushJetty, modifyJettyState, queryJettyState } from "../../transport/urma/jetty_state.ts";
import { loadSim, makeSide, SIM_PATH, SKIP_NO_SIM } from "./util.ts";

const sim = { urma: { library: SIM_PATH } };

test(
  "an injected jetty error arrives as URMA_EVENT_JETTY_ERR, fails only that session, falls back to TCP, then re-negotiates",
  async () => {
    const { server } = await startServer({ fabrics: ["urma"], providerOptions: sim });
    const hit = await client(server, { fabric: "urma", providerOptions: sim, reestablishMs: 50 });
    const other = await client(server, { fabric: "urma", providerOptions: sim });
    try {
      assertEquals((await hit.call("test.Fabric", "Echo", pattern(64, 1))).path, "EAGER");
      assertEquals((await other.call("test.Fabric", "Echo", pattern(64, 2))).path, "EAGER");
      const ep = hit.session!.endpoint as UrmaEndpoint;
      const untouched = other.session!.endpoint as UrmaEndpoint;
      ep.simInjectAsyncEvent("URMA_EVENT_JETTY_ERR");
      await until(() => ep.failed, 3000, "the async event to fail the endpoint");
      assert(ep.failureReason!.includes("URMA_EVENT_JETTY_ERR"), `${ep.failureReason}`);
      assert(
        ep.flushedOnError > 0,
        `its posted receives came back as WR_FLUSH_ERR: ${ep.flushedOnError}`,
      );
      assert(!untouched.failed, `the other session is untouched: ${untouched.failureReason}`);
      const fallback = await hit.call("test.Fabric", "Echo", pattern(64, 3));
      assertEquals([fallback.path, fallback.response], ["TCP_FALLBACK", pattern(64, 3)]);
      const still = await other.call("test.Fabric", "Echo", pattern(64, 4));
      assertEquals([still.path, still.response], ["EAGER", pattern(64, 4)]);
      const back = await echoUntilFabric(hit, pattern(64, 5));
      assertEquals([back.path, back.response], ["EAGER", pattern(64, 5)], "re-negotiated");
      assert(hit.session!.endpoint !== ep, "a new endpoint (new jetty) after re-negotiation");
      assertEquals((await other.call("test.Fabric", "Echo", pattern(64, 6))).path, "EAGER");
    } finally {
      await hit.close();
      await other.close();
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "a port-down event fails every URMA session of the context, each named, and their calls go over TCP",
  async () => {
    const { server } = await startServer({ fabrics: ["urma"], providerOptions: sim });
    const a = await client(server, { fabric: "urma", providerOptions: sim });
    const b = await client(server, { fabric: "urma", providerOptions: sim });
    try {
      assertEquals((await a.call("test.Fabric", "Echo", pattern(16, 1))).path, "EAGER");
      assertEquals((await b.call("test.Fabric", "Echo", pattern(16, 2))).path, "EAGER");
      const ea = a.session!.endpoint as UrmaEndpoint, eb = b.session!.endpoint as UrmaEndpoint;
      ea.simInjectAsyncEvent("URMA_EVENT_PORT_DOWN");
      await until(() => ea.failed && eb.failed, 3000, "the port event to fail both endpoints");
      for (const ep of [ea, eb]) {
        assert(
          ep.failureReason!.includes("URMA_EVENT_PORT_DOWN on port/EID 1"),
          `${ep.failureReason}`,
        );
      }
      for (const c of [a, b]) {
        const r = await c.call("test.Fabric", "Echo", pattern(16, 3));
        assertEquals([r.path, r.response], ["TCP_FALLBACK", pattern(16, 3)]);
      }
    } finally {
      await a.close();
      await b.close();
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "jetty state after an error: query says ERROR, flush returns the posted receives as WR_FLUSH_ERR, modify makes it READY",
  async () => {
    const u = await loadSim();
    const side = makeSide(u, 8192, 0x3333);
    try {
      const rb = new UrmaRecvBatch(u, 2);
      rb.recv(side.seg, side.seg.address, 512, 81);
      rb.recv(side.seg, side.seg.address + 512, 512, 82);
      assertEquals(rb.post(side.jetty), 0);
      assertEquals(queryJettyState(side.jetty), "READY");
      assertEquals(
        flushJetty(side.jetty, side.cr),
        { records: 0, flushErr: 0 },
        "nothing while READY",
      );
      UrmaAsyncEvents.simInject(side.jetty, "URMA_EVENT_JETTY_ERR");
      assertEquals(queryJettyState(side.jetty), "ERROR");
      const events = UrmaAsyncEvents.of(side.ctx)!;
      const seen: string[] = [];
      const stop = events.watch(side.jetty, (r) => seen.push(r));
      assertEquals(events.drain(), 1, "read off the async fd");
      stop();
      assert(seen.length === 1 && seen[0].includes("URMA_EVENT_JETTY_ERR"), seen.join());
      assertEquals(flushJetty(side.jetty, side.cr), { records: 2, flushErr: 2 });
      assertEquals([side.cr.userCtx(0), side.cr.userCtx(1)], [81, 82]);
      assert(modifyJettyState(side.jetty, "READY"), "urma_modify_jetty is bound");
      assertEquals(queryJettyState(side.jetty), "READY");
    } finally {
      side.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

test(
  "an idle reader waits once, not five times a second; the last watcher leaving and the context closing each end its wait at once",
  async () => {
    const u = await loadSim();
    const side = makeSide(u, 8192, 0x4444);
    try {
      const events = UrmaAsyncEvents.of(side.ctx)!;
      const stop = events.watch(side.jetty, () => {});
      assert(events.running, "watching starts the reader");
      const w0 = events.waits;
      await new Promise((r) => setTimeout(r, 1500));
      // The 200 ms wait made 7–8 in this time.
      assert(events.waits - w0 <= 1, `${events.waits - w0} waits in 1.5 s of idle`);
      stop(); // (its wait lasts ASYNC_WAIT_MS: ending within a fifth of it is the wake)
      await until(() => !events.running, ASYNC_WAIT_MS / 5, "the reader to end when unwatched");
      // Again, and this time the context closes under the waiting reader.
      events.watch(side.jetty, () => {});
      assert(events.running, "watching again restarts it");
      await new Promise((r) => setTimeout(r, 50));
      side.ctx.close();
      await until(() => !events.running, ASYNC_WAIT_MS / 5, "the reader to end on close");
    } finally {
      side.ctx.close();
    }
  },
  { skip: SKIP_NO_SIM },
);
