/**
 * The verbs hub under receive exhaustion (Soft-RoCE VM, providers only, no rpc layer): every
 * kick is a WRITE_WITH_IMM that consumes one of the receiver's 16 zero-length receives. A
 * sender that kicks 300 times while the receiving process does not drain its CQ runs the
 * receive queue dry: the receiver's QP answers with RNR NAKs, the sender's NIC retries, and once
 * the receiver drains again every kick arrives, in order, on a healthy session — no error, no
 * hang, no lost kick. The receive completions name the endpoint by its token. And the
 * resource pool: later sessions take prepared PD/MRs/QP, finished ones are renewed (MRs kept,
 * buffers zeroed).
 */
import { Completions, OK } from "../../transport/fabric.ts";
import type { ClientFabricProvider, SessionSizes } from "../../transport/provider.ts";
import {
  createClientProvider,
  createServerProvider,
  type VerbsServerProvider,
} from "../../transport/verbs/provider.ts";
import { VERBS_QP_CAPS } from "../../transport/verbs/qp.ts";
import { ResourcePool } from "../../transport/verbs/resource_pool.ts";
import type { VerbsEndpoint } from "../../transport/verbs/verbs_endpoint.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { CLIENT_ADDR, eventually, SERVER_ADDR } from "./fabric_verbs_util.ts";
import { readFileSync } from "node:fs";

const SIZES: SessionSizes = { server: 256 << 10, client: 128 << 10, maxMessage: 8192 };
const KICKS = 300;

/** One verbs session through the providers alone: the client's and the server's endpoints. */
async function pair(sp: unknown, cp: unknown, sessionId: number) {
  const offer = await (sp as VerbsServerProvider).offer({
    sessionId,
    sizes: SIZES,
    peer: { bootId: "", pid: 0, host: CLIENT_ADDR },
    params: { mode: "event" },
  });
  const c = await (cp as ClientFabricProvider).open(offer.offer, SIZES) as VerbsEndpoint;
  const s = await offer.connect() as VerbsEndpoint;
  return { c, s };
}

/** rxe's count of RNR NAKs the sender (rxe0) received (-1 when the counter is not exposed). */
function rnrNaksSent(): number {
  try {
    return Number(
      readFileSync("/sys/class/infiniband/rxe0/ports/1/hw_counters/rcvd_rnr_err", "utf8"),
    );
  } catch {
    return -1;
  }
}

test(
  `receive exhaustion: ${KICKS} kicks into a 16-deep receive queue that is not drained are delayed by RNR, never lost`,
  async () => {
    const sp = await createServerProvider({ addr: SERVER_ADDR, mode: "event" }, () => {});
    if (typeof sp === "string") throw new Error(sp);
    const cp = await createClientProvider({ sourceAddr: CLIENT_ADDR, mode: "event" });
    if (typeof cp === "string") throw new Error(cp);
    const { c, s } = await pair(sp, cp, 7);
    try {
      assertEquals(VERBS_QP_CAPS.rqDepth, 16, "the receive queue this test exhausts");
      const hub = s.resources.hub, naksBefore = rnrNaksSent();
      const start = s.doorbell();
      const out = new Completions(64);
      // 300 kicks, each its own WRITE_WITH_IMM (poll() rings the doorbell at once), and the server
      // side's hub is not drained meanwhile: after 16 the receive queue is empty.
      for (let i = 0; i < KICKS; i++) {
        c.kick();
        c.poll(out);
      }
      await new Promise((r) => setTimeout(r, 300));
      assert(
        !c.failed && !s.failed,
        `healthy while exhausted: ${c.failureReason} ${s.failureReason}`,
      );
      // (a wait parked by an earlier test may drain this process's hub meanwhile: the NAK count,
      // not the receive count, proves the queue ran dry)
      const arrived = await eventually(() => {
        hub.drain(); // the receiver looks again: receives are reposted, the sender's retries land
        c.poll(out);
        return s.kicksReceived === KICKS;
      }, 30_000);
      assert(arrived, `all ${KICKS} kicks arrived (got ${s.kicksReceived})`);
      assertEquals(s.doorbell() - start, KICKS, "the doorbell word moved once per kick, in order");
      assert(!c.failed && !s.failed, `healthy after: ${c.failureReason} ${s.failureReason}`);
      assertEquals(hub.counters.wrongImm, 0, "every immediate named its endpoint's token");
      const naks = rnrNaksSent();
      if (naks >= 0) {
        assert(naks > naksBefore, `the sender on rxe0 received RNR NAKs (${naksBefore} → ${naks})`);
      }
    } finally {
      c.close();
      s.close();
      await Promise.all([c.released, s.released]);
      sp.close();
      cp.close();
    }
  },
  { timeoutMs: 90_000 },
);

test(
  "prepared resources: sessions after the first take a ready PD/MRs/QP; finished ones are renewed, MRs reused and zeroed",
  async () => {
    const sp = await createServerProvider(
      { addr: SERVER_ADDR, mode: "event", preparedQps: 2 },
      () => {},
    );
    if (typeof sp === "string") throw new Error(sp);
    const cp = await createClientProvider({
      sourceAddr: CLIENT_ADDR,
      mode: "event",
      preparedQps: 2,
    });
    if (typeof cp === "string") throw new Error(cp);
    const rkeys = new Set<number>();
    let pool: ResourcePool | null = null, missesAfterFirst = 0, renewedAfterFirst = 0;
    try {
      for (let i = 0; i < 6; i++) {
        const { c, s } = await pair(sp, cp, 100 + i);
        try {
          rkeys.add(s.resources.region.rkey);
          assert(
            s.local.subarray(8192, 8192 + 4096).every((b) => b === 0),
            `session ${i}: the region holds nothing of an earlier session`,
          );
          assertEquals(c.write(1, 8192, new Uint8Array(4096).fill(0xab), 0), OK, "write");
          c.kick();
          c.poll(new Completions(4));
          assert(await eventually(() => s.local[8192 + 4095] === 0xab, 5000), "the write landed");
        } finally {
          c.close();
          s.close();
          await Promise.all([c.released, s.released]);
        }
        await new Promise((r) => setTimeout(r, 50)); // the pool renews off the session's path
        pool = ResourcePool.of(s.resources.hub);
        if (i === 0) {
          missesAfterFirst = pool.counters.misses;
          renewedAfterFirst = pool.counters.renewed;
        }
      }
      assertEquals(pool!.counters.misses, missesAfterFirst, "sessions 2–6 found resources ready");
      assert(pool!.counters.renewed >= renewedAfterFirst + 5, `renewed: ${pool!.counters.renewed}`);
      assert(rkeys.size <= 3, `6 sessions used ${rkeys.size} region MRs (registrations reused)`);
    } finally {
      sp.close();
      cp.close();
    }
  },
  { timeoutMs: 90_000 },
);
