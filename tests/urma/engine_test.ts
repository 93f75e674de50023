/**
 * The process's one progress engine over URMA (simulated): every URMA session of a process
 * shares the hub's one JFC and JFCE (counted in the simulator), an idle session is never polled,
 * one parked wait serves every session, no wake-up is lost (many sessions, random pauses, in one
 * process and across processes and runtimes), a post that finds the JFC full reaps it and goes
 * on, and a JFC that overruns (more notifications than it holds before a reap) fails the sessions on it
 * with the reason — nothing hangs, the clients go on — while new sessions get a fresh JFC.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { ProgressEngine } from "../../rpc/session/engine/engine.ts";
import { Completions, OK, SIGNALED } from "../../transport/fabric.ts";
import { type HubOptions, UrmaHub } from "../../transport/urma/hub.ts";
import type { Client } from "../../rpc/client/client.ts";
import type { Server } from "../../rpc/server/server.ts";
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

/** Notifications each session endpoint sends its peer in one turn: more than a tiny JFC holds. */
const KICKS = 20;

/**
 * Runs `body` with this process's hub opened with `options` (tests shrink its JFCs), a server and
 * `count` clients on it; closes them all, waits for the sessions' objects, closes the hub.
 */
async function onTinyHub(
  options: HubOptions,
  count: number,
  body: (tiny: UrmaHub, server: Server, clients: Client[]) => Promise<void>,
): Promise<void> {
  const u = await loadSim();
  await closeHubs(u);
  const tiny = UrmaHub.forProcess(u, undefined, 0, options);
  const { server } = await startServer(urma);
  const clients = await Promise.all(
    Array.from({ length: count }, () => client(server, urmaClient)),
  );
  try {
    for (const c of clients) assertEquals(c.fabric, "urma (simulated)");
    await body(tiny, server, clients);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await server.close();
    await until(() => sessionObjects(u) === 0, 5000, "the sessions to close");
    tiny.close(); // the next user gets a normal hub
  }
}

test(
  "a JFC that fills up fails its sessions naming the JFC; nothing hangs, clients go on, new sessions work",
  // A hub that lies about what its jetties need: 16 records each, on JFCs of 16 — so every jetty
  // has a JFC of its own (a peer's notifications land on a JFC its own posts do not fill: the
  // simulator refuses a post on a full JFC, and the poster reaps and goes on, see below).
  () =>
    onTinyHub({ jfcDepth: 16, cqesPerJetty: 16 }, 6, async (tiny, server, clients) => {
      const placed = [...tiny.jfcs];
      // In one turn (no reap in between), whatever the call path coalesces into one doorbell:
      // every session endpoint, on both sides, notifies its peer KICKS times — each a receive
      // record on the JFC of the peer's jetty, more than it holds — and 6 × 16 calls start. A
      // call in flight on a session that fails is rejected naming the reason; it never hangs.
      const endpoints = [
        ...clients.map((c) => c.session!.endpoint),
        ...[...server.fabric!.sessions].map((s) => s.endpoint),
      ];
      for (const ep of endpoints) for (let k = 0; k < KICKS; k++) ep.kick();
      const calls = clients.flatMap((c, k) =>
        Array.from(
          { length: 16 },
          (_, i) =>
            c.call("test.Fabric", "Echo", pattern(40, k * 100 + i), { timeoutMs: 8000 })
              .then((r) => {
                assertEquals(r.response, pattern(40, k * 100 + i), `${k}/${i}`);
                return r.path;
              }),
        )
      );
      const settled = await Promise.allSettled(calls);
      // A call fails naming the overrun — also when only the server's side broke and this client
      // saw just the remote access abort of its next write: it waits for the server's notice.
      for (const o of settled) {
        if (o.status === "rejected") {
          assert(/the shared JFC failed .*overrun/.test(String(o.reason)), String(o.reason));
        }
      }
      const broken = placed.filter((j) => j.broken !== null);
      assert(
        broken.length > 0,
        "the overrun showed (the device reported it, the hub broke the JFC)",
      );
      assert(broken.every((j) => /overrun/.test(j.broken!)), broken.map((j) => j.broken).join());
      // The calls on the sessions that broke failed over: rejected naming the overrun, or — the
      // ones the server never took, as its notice lists them — redone over TCP.
      assert(
        settled.some((o) => o.status === "rejected" || o.value === "TCP_FALLBACK"),
        "calls on the broken JFC failed over",
      );
      assert(clients.some((c) => c.session?.failed), "a session on the broken JFC failed");
      for (const [k, c] of clients.entries()) { // and every client goes on (TCP or a new session)
        const r = await c.call("test.Fabric", "Echo", pattern(8, k), { timeoutMs: 8000 });
        assertEquals(r.response, pattern(8, k));
      }
      const fresh = await client(server, urmaClient);
      try {
        assertEquals(fresh.fabric, "urma (simulated)", JSON.stringify(fresh.handshake));
        const r = await fresh.call("test.Fabric", "Echo", pattern(8, 9));
        assertEquals([r.path, r.response], ["EAGER", pattern(8, 9)]);
        assert(tiny.jfcs.some((j) => !broken.includes(j) && j.broken === null), "on a fresh JFC");
      } finally {
        await fresh.close();
      }
    }),
  { skip: SKIP_NO_SIM, timeoutMs: 60_000 },
);

test(
  "a post that finds the JFC full reaps it and posts the rest: the endpoint stays up, every completion arrives",
  // 8 records per JFC: one batch of 12 signaled reads brings 12 send records before a reap.
  () =>
    onTinyHub({ jfcDepth: 8, cqesPerJetty: 1 }, 1, async (tiny, _server, [c]) => {
      const ep = c.session!.endpoint;
      const staging = c.session!.layouts.client.staging; // read targets nobody else uses now
      const dst = ep.local.subarray(staging.offset, staging.offset + 12 * 64);
      for (let k = 0; k < 12; k++) {
        assertEquals(ep.read(1000 + k, dst.subarray(k * 64, k * 64 + 64), 0, SIGNALED), OK);
      }
      ep.flush(); // the simulator refuses the request that finds the JFC full (URMA_EAGAIN)
      assert(!ep.failed, `the endpoint is up: ${ep.failureReason}`);
      assert(tiny.counters.fullPosts > 0, "a post found the JFC full and went on after a reap");
      const cq = new Completions(64), ids: number[] = [];
      await until(
        () => {
          const n = ep.poll(cq);
          for (let i = 0; i < n; i++) {
            assertEquals(cq.status[i], 0, ep.statusText(cq.status[i]));
            ids.push(cq.wrId[i]);
          }
          return ids.length >= 12;
        },
        5000,
        "the 12 completions",
      );
      assertEquals(ids, Array.from({ length: 12 }, (_, k) => 1000 + k), "each once, in order");
      assert(tiny.jfcs.every((j) => j.broken === null), "no JFC broke");
      const r = await c.call("test.Fabric", "Echo", pattern(8, 3), { timeoutMs: 8000 });
      assertEquals([r.path, r.response], ["EAGER", pattern(8, 3)]);
    }),
  { skip: SKIP_NO_SIM, timeoutMs: 30_000 },
);
