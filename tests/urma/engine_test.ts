/**
 * The process's one progress engine over URMA (simulated): every URMA session of a process
 * shares the hub's one JFC and JFCE (counted in the simulator), an idle session is never polled,
 * one parked wait serves every session, no wake-up is lost (many sessions, random pauses, in one
 * process and across processes and runtimes), and a JFC that fills up fails the sessions on it
 * with the reason — nothing hangs, the clients go on — while new sessions get a fresh JFC.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { ProgressEngine } from "../../rpc/session/engine.ts";
import { UrmaHub } from "../../transport/urma/hub.ts";
import { otherRuntime, withChild } from "../util/proc.ts";
import { stress } from "../fabric/stress.ts";
import { client, pattern, startServer, until } from "../fabric/util.ts";
import { closeHubs, loadSim, sessionObjects, SIM_PATH, SKIP_NO_SIM, skipCross } from "./util.ts";

const sim = { urma: { library: SIM_PATH } };
const urma = { fabrics: ["urma" as const], providerOptions: sim };
const urmaClient = { fabric: "urma" as const, providerOptions: sim };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const other = otherRuntime();
const SKIP_CROSS = skipCross(other);

/** JFCs of this process, as the simulator counts them. */
async function jfcs(): Promise<number> {
  const detail = (await loadSim()).liveObjects()!.detail;
  return Number(/jfc=(\d+)/.exec(detail)?.[1] ?? -1);
}

/** The hub every URMA session of this process uses (the simulator's). */
function hub(): UrmaHub {
  const hubs = UrmaHub.open.filter((h) => h.lib.path.endsWith("liburma.so.0"));
  assertEquals(hubs.length, 1, "one hub in this process");
  return hubs[0];
}

test("24 URMA sessions (48 endpoints, both sides here) share one JFC and one JFCE", async () => {
  const { server } = await startServer(urma);
  const clients = await Promise.all(Array.from({ length: 24 }, () => client(server, urmaClient)));
  try {
    for (const c of clients) {
      assertEquals(c.fabric, "urma (simulated)", JSON.stringify(c.handshake));
      const r = await c.call("test.Fabric", "Echo", pattern(16, 1));
      assertEquals([r.path, r.response], ["EAGER", pattern(16, 1)]);
    }
    assertEquals(await jfcs(), 1, "the simulator sees one JFC in this process");
    const h = hub();
    assertEquals(h.jfcs.length, 1);
    assert(h.bindings >= 48, `${h.bindings} jetties on the hub`);
    const sessions = [...server.fabric!.sessions];
    assertEquals(sessions.length, 24);
    for (const s of sessions) assert(s.endpoint.readiness?.source === h, "the hub is its source");
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await server.close();
  }
}, { skip: SKIP_NO_SIM, timeoutMs: 30_000 });

test(
  "an idle URMA session is never polled: 200 calls on one of 24 sessions poll only that one",
  async () => {
    const { server } = await startServer(urma);
    const clients = await Promise.all(Array.from({ length: 24 }, () => client(server, urmaClient)));
    try {
      for (const c of clients) await c.call("test.Fabric", "Echo", pattern(8, 1)); // everyone once
      await sleep(50);
      const sessions = [...server.fabric!.sessions];
      const before = sessions.map((s) => s.rounds);
      const active = clients[5];
      for (let i = 0; i < 200; i++) {
        const r = await active.call("test.Fabric", "Echo", pattern(64, i));
        assertEquals([r.path, r.response], ["EAGER", pattern(64, i)]);
      }
      const polled = sessions.filter((s, i) => s.rounds !== before[i]);
      assertEquals(polled.length, 1, "exactly one server session was polled");
      assert(hub().counters.misnamed === 0, "every immediate named its jetty's token");
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM, timeoutMs: 30_000 },
);

test(
  "one wait serves every URMA session: 40 idle sessions park one wait on the one JFCE",
  async () => {
    const { server } = await startServer(urma);
    const clients = await Promise.all(Array.from({ length: 40 }, () => client(server, urmaClient)));
    try {
      for (const c of clients) await c.call("test.Fabric", "Echo", pattern(8, 2));
      const engine = await ProgressEngine.forThread();
      await until(() => engine.parkedWaits === 1, 3000, "the engine to sleep in one wait");
      await sleep(100);
      assertEquals(engine.parkedWaits, 1, "still one wait");
      assertEquals(hub().parkedWaits, 1, "one wait on the JFCE");
      const sleeps = hub().counters.sleeps;
      const r = await clients[39].call("test.Fabric", "Echo", pattern(8, 3));
      assertEquals([r.path, r.response], ["EAGER", pattern(8, 3)], "and it wakes for a call");
      assert(sleeps > 0, "the wait really slept on the JFCE");
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM, timeoutMs: 30_000 },
);

/** The stress against a URMA server on `port`. */
const target = (port: number) => ({
  port,
  echo: "test.Fabric/Echo",
  label: "urma (simulated)",
  client: urmaClient,
});

test(
  "no URMA wake-up is lost: 32 sessions, random pauses across the spin and sleep thresholds",
  async () => {
    const { server } = await startServer(urma);
    try {
      await stress(target(server.port), 32, 40, 25);
    } finally {
      await server.close();
    }
  },
  { skip: SKIP_NO_SIM, timeoutMs: 90_000 },
);

test(`no URMA wake-up is lost across processes: 16 sessions to a ${other} server`, async () => {
  await withChild(other, "tests/urma/fixtures/fabric_server.ts", {
    args: [SIM_PATH],
    timeoutMs: 30_000,
  }, async (child) => {
    await stress(target(child.port), 16, 40, 25);
  });
}, { skip: SKIP_CROSS, timeoutMs: 90_000 });

test(
  "a JFC that fills up fails its sessions naming the JFC; nothing hangs, clients go on, new sessions work",
  async () => {
    const u = await loadSim();
    await closeHubs(u);
    // A hub that lies about what its jetties need: 16 jetties on a 64-record JFC.
    const tiny = UrmaHub.forProcess(u, undefined, 0, { jfcDepth: 64, cqesPerJetty: 4 });
    const { server } = await startServer(urma);
    const clients = await Promise.all(Array.from({ length: 6 }, () => client(server, urmaClient)));
    try {
      for (const c of clients) assertEquals(c.fabric, "urma (simulated)");
      const first = tiny.jfcs[0];
      // 6 clients × 16 calls at once: far more records than 64 before anyone reaps. A call in
      // flight on a session that fails is rejected naming the reason; it never hangs.
      const calls = clients.flatMap((c, k) =>
        Array.from(
          { length: 16 },
          (_, i) =>
            c.call("test.Fabric", "Echo", pattern(40, k * 100 + i), { timeoutMs: 8000 })
              .then((r) => assertEquals(r.response, pattern(40, k * 100 + i), `${k}/${i}`)),
        )
      );
      const settled = await Promise.allSettled(calls);
      for (const o of settled) {
        if (o.status === "rejected") assert(/JFC/.test(String(o.reason)), String(o.reason));
      }
      assert(settled.some((o) => o.status === "rejected"), "the overrun showed");
      for (const [k, c] of clients.entries()) { // and every client goes on (TCP or a new session)
        const r = await c.call("test.Fabric", "Echo", pattern(8, k), { timeoutMs: 8000 });
        assertEquals(r.response, pattern(8, k));
      }
      const fresh = await client(server, urmaClient);
      try {
        assertEquals(fresh.fabric, "urma (simulated)", JSON.stringify(fresh.handshake));
        const r = await fresh.call("test.Fabric", "Echo", pattern(8, 9));
        assertEquals([r.path, r.response], ["EAGER", pattern(8, 9)]);
        if (first.broken !== null) {
          assert(tiny.jfcs.some((j) => j !== first && j.broken === null), "on a fresh JFC");
        }
      } finally {
        await fresh.close();
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await server.close();
      await until(() => sessionObjects(u) === 0, 5000, "the sessions to close");
      tiny.close(); // the next user gets a normal hub
    }
  },
  { skip: SKIP_NO_SIM, timeoutMs: 60_000 },
);
