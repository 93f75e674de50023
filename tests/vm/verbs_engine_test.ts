/**
 * The process's one progress engine over verbs (Soft-RoCE VM; server on rxe1, clients bound to
 * rxe0, all in this process): every QP of the process shares one CQ and one completion channel
 * per device (transport/verbs/hub.ts), the engine finds work with one CQ poll — an idle verbs
 * session is never polled —, one parked wait serves every verbs session, and no wake-up is lost
 * under many sessions with random pauses across the spin and sleep thresholds.
 */
import { ProgressEngine } from "../../rpc/session/engine/engine.ts";
import { VerbsHub } from "../../transport/verbs/hub.ts";
import { assert, assertEquals, test } from "../harness.ts";
import {
  eventually,
  kernelResourceCounts,
  pattern,
  verbsClient,
  verbsServer,
} from "./fabric_verbs_util.ts";

const S = "t.Verbs";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function clients(port: number, n: number, mode: "poll" | "event" = "event") {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await verbsClient(port, { mode }));
  for (const c of out) assertEquals(c.fabric, "verbs", `verbs session (${c.handshake.reason})`);
  return out;
}

test("32 verbs sessions share one CQ per device (kernel CQ count does not grow)", async () => {
  const { server } = await verbsServer();
  const first = await clients(server.port, 1);
  let all = first;
  try {
    await first[0].call(S, "Echo", pattern(8, 0));
    const before = kernelResourceCounts();
    all = [...first, ...(await clients(server.port, 31))];
    await Promise.all(all.map((c, i) => c.call(S, "Echo", pattern(16, i))));
    const during = kernelResourceCounts();
    assertEquals(
      [during["rxe0.cq"], during["rxe1.cq"]],
      [before["rxe0.cq"], before["rxe1.cq"]],
      `CQs with 1 and with 32 sessions: ${JSON.stringify({ before, during })}`,
    );
    assert((during["rxe1.qp"] ?? 0) >= 32, `one QP per session: ${during["rxe1.qp"]}`);
    const hubs = VerbsHub.all();
    for (const h of hubs) assertEquals(h.counters.cqs, 1, `${h.ctx.deviceName}: one CQ`);
    const members = hubs.map((h) => h.members).sort((a, b) => a - b);
    assert(members.every((m) => m >= 32), `members per hub: ${members}`);
  } finally {
    await Promise.all(all.map((c) => c.close()));
    await server.close();
  }
}, { timeoutMs: 120_000 });

test(
  "an idle verbs session is never polled: 200 calls on one of 24 sessions poll only that one",
  async () => {
    const { server } = await verbsServer();
    const cs = await clients(server.port, 24);
    try {
      for (const c of cs) await c.call(S, "Echo", pattern(8, 1));
      await sleep(50);
      const sessions = [...server.fabric!.sessions];
      const before = sessions.map((s) => s.rounds);
      const engine = await ProgressEngine.forThread();
      const roundsBefore = engine.counters.sessionRounds;
      for (let i = 0; i < 200; i++) {
        const r = await cs[5].call(S, "Echo", pattern(64, i));
        assertEquals([r.path, r.response], ["EAGER", pattern(64, i)]);
      }
      const polled = sessions.filter((s, i) => s.rounds !== before[i]);
      assertEquals(polled.length, 1, "exactly one server session was polled");
      const rounds = engine.counters.sessionRounds - roundsBefore;
      assert(rounds < 200 * 12, `${rounds} session rounds for 200 calls (48 per turn if scanned)`);
    } finally {
      await Promise.all(cs.map((c) => c.close()));
      await server.close();
    }
  },
  { timeoutMs: 120_000 },
);

test(
  "one wait per device serves every verbs session: 40 idle sessions park one wait per channel",
  async () => {
    const { server } = await verbsServer({ mode: "event" });
    const cs = await clients(server.port, 40, "event");
    try {
      for (const c of cs) await c.call(S, "Echo", pattern(8, 2));
      // This process holds both ends: the clients' QPs on rxe0, the server's on rxe1 — two device
      // contexts, so two hubs (a CQ and its channel belong to one device), whatever the sessions.
      const engine = await ProgressEngine.forThread(), hubs = VerbsHub.all();
      assertEquals(hubs.length, 2, "one hub per device");
      const ok = await eventually(() => engine.parkedWaits === hubs.length, 5000);
      assert(ok, `the engine sleeps in one wait per hub (parked: ${engine.parkedWaits})`);
      await sleep(100);
      assertEquals(engine.parkedWaits, hubs.length, "still one wait per hub, not one per session");
      for (const h of hubs) {
        assertEquals(h.parkedWaits, 1, `${h.ctx.deviceName}: one completion-channel wait`);
      }
      const r = await cs[39].call(S, "Echo", pattern(8, 3));
      assertEquals([r.path, r.response], ["EAGER", pattern(8, 3)], "and it wakes for a call");
    } finally {
      await Promise.all(cs.map((c) => c.close()));
      await server.close();
    }
  },
  { timeoutMs: 120_000 },
);

test(
  "no verbs wake-up is lost: 32 sessions, random pauses across the spin and sleep thresholds",
  async () => {
    const { server } = await verbsServer({ mode: "event" });
    const cs = await clients(server.port, 32, "event");
    try {
      await Promise.all(cs.map(async (c, k) => {
        for (let i = 0; i < 25; i++) {
          const r = await c.call(S, "Echo", pattern(32, k * 1000 + i), {
            timeoutMs: 8000, // a lost wake-up would park the call for good: this catches it
          });
          assertEquals([r.path, r.response], ["EAGER", pattern(32, k * 1000 + i)], `${k}/${i}`);
          if (Math.random() < 0.5) await sleep(Math.random() * 25);
        }
      }));
    } finally {
      await Promise.all(cs.map((c) => c.close()));
      await server.close();
    }
  },
  { timeoutMs: 180_000 },
);
