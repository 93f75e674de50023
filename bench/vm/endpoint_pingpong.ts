/**
 * Bench helper: the verbs fabric alone, without the RPC layer. Builds a server and a client
 * {@link VerbsEndpoint} in this process through the real providers (rdma_cm over rxe0 → rxe1),
 * then ping-pongs a 64-byte RDMA WRITE plus a doorbell kick each way, busy-polling the doorbell
 * words — perftest's write_lat pattern through the endpoint's data path (bounce copy, inline
 * WRITE, one doorbell per kick) plus the drain of each side's hub CQ that the engine does every
 * turn. Returns round-trip times in µs.
 * @module
 */
import { computeLayout, regionConfigSchema } from "../../rpc/region/layout.ts";
import { VerbsClientProvider, VerbsServerProvider } from "../../transport/verbs/provider.ts";
import { Completions } from "../../transport/fabric.ts";
import type { VerbsEndpoint } from "../../transport/verbs/verbs_endpoint.ts";

/** p50 / mean round trip of `n` ping-pongs of 64 B (after a warm-up). */
export async function endpointPingPong(
  server: string,
  client: string,
  region: Record<string, number>,
  n: number,
): Promise<{ p50: number; mean: number }> {
  const sp = await VerbsServerProvider.create({ addr: server, port: 0, mode: "poll" }, () => {});
  if (typeof sp === "string") throw new Error(sp);
  const cp = await VerbsClientProvider.create({ sourceAddr: client, mode: "poll" });
  if (typeof cp === "string") throw new Error(cp);
  const cfg = regionConfigSchema.parse(region);
  const sl = computeLayout("server", cfg), cl = computeLayout("client", cfg);
  const sizes = { server: sl.size, client: cl.size, maxMessage: cfg.slotSize };
  const off = await sp.offer({
    sessionId: 1,
    sizes,
    peer: { bootId: "", pid: 0, host: client },
    params: { mode: "poll" },
  });
  let c: VerbsEndpoint, s: VerbsEndpoint;
  try {
    c = await cp.open(off.offer, sizes) as VerbsEndpoint;
    s = await off.connect() as VerbsEndpoint;
  } catch (e) {
    off.abort("bench pair failed");
    sp.close();
    throw e;
  }
  try {
    const msg = new Uint8Array(64).fill(5);
    const at = sl.slotLocal.offset, back = cl.slotLocal.offset;
    let seenS = s.doorbell(), seenC = c.doorbell();
    const cq = new Completions(16);
    // What the engine does every turn: drain each process hub (the shared CQ), which reposts the
    // receives the kicks (WRITE_WITH_IMM) consumed.
    const sHub = s.resources.hub, cHub = c.resources.hub;
    // kick() rings at the end of the job; this loop never yields, so poll() rings it now.
    const one = () => {
      c.write(0, at, msg, 0);
      c.kick();
      c.poll(cq);
      const end = performance.now() + 1000;
      let v;
      while ((v = s.doorbell()) === seenS) {
        sHub.drain();
        if (performance.now() > end) throw new Error("ping lost");
      }
      seenS = v;
      s.write(0, back, msg, 0);
      s.kick();
      s.poll(cq);
      while ((v = c.doorbell()) === seenC) {
        cHub.drain();
        if (performance.now() > end) throw new Error("pong lost");
      }
      seenC = v;
    };
    for (let i = 0; i < 500; i++) one();
    const t = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      one();
      t[i] = (performance.now() - t0) * 1000;
    }
    t.sort();
    return { p50: t[n >> 1], mean: t.reduce((a, b) => a + b, 0) / n };
  } finally {
    c.close();
    s.close();
    await Promise.all([c.released, s.released]);
    sp.close();
  }
}
