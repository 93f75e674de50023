/**
 * The process's one progress engine over shm: work is found in O(active sessions) — an idle
 * session is never polled —, one parked wait serves every session, and no session's wake-up is
 * lost (many sessions, random pauses longer than the engine's spin, in one process and across
 * processes and runtimes).
 */
import { assert, assertEquals, test } from "../harness.ts";
import { ProgressEngine } from "../../rpc/session/engine/engine.ts";
import { ProcessNotifyPage } from "../../transport/shm/notify_page.ts";
import { otherRuntime, withChild } from "../util/proc.ts";
import { stress } from "./stress.ts";
import { client, pattern, SHM_ONLY, startServer, until } from "./util.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(
  "an idle session is never polled: 200 calls on one of 24 sessions poll only that one",
  async () => {
    const { server } = await startServer();
    const clients = await Promise.all(Array.from({ length: 24 }, () => client(server)));
    try {
      for (const c of clients) await c.call("test.Fabric", "Echo", pattern(8, 1)); // everyone once
      await sleep(50);
      const sessions = [...server.fabric!.sessions];
      const before = sessions.map((s) => s.rounds);
      const engine = await ProgressEngine.forThread();
      const roundsBefore = engine.counters.sessionRounds;
      const active = clients[5];
      for (let i = 0; i < 200; i++) {
        const r = await active.call("test.Fabric", "Echo", pattern(64, i));
        assertEquals([r.path, r.response], ["EAGER", pattern(64, i)]);
      }
      const polled = sessions.filter((s, i) => s.rounds !== before[i]);
      assertEquals(polled.length, 1, "exactly one server session was polled");
      const rounds = engine.counters.sessionRounds - roundsBefore;
      // Two active sessions (the client's and the server's) over 200 calls: a few rounds each per
      // call. Polling every session every turn would take 48 per turn.
      assert(rounds < 200 * 12, `${rounds} session rounds for 200 calls`);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await server.close();
    }
  },
  { skip: SHM_ONLY, timeoutMs: 30_000 },
);

test("a new session is one look for a sleeping engine, not a busy-poll", async () => {
  const { server } = await startServer();
  const clients = [await client(server)];
  try {
    const engine = await ProgressEngine.forThread();
    await sleep(50); // asleep now (idleAfterMs is 5 ms)
    const before = engine.loopCounters;
    for (let i = 0; i < 20; i++) {
      clients.push(await client(server));
      await sleep(20); // asleep again before the next one
    }
    const turns = engine.loopCounters.turns - before.turns;
    const sleeps = engine.loopCounters.sleeps - before.sleeps;
    // Each new session (a server and a client registration) takes a turn or two. A 5 ms busy-poll
    // per registration took hundreds of turns per session.
    assert(turns < 20 * 6, `${turns} engine turns (${sleeps} sleeps) for 20 new sessions`);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await server.close();
  }
}, { skip: SHM_ONLY });

test("one wait serves every session: 40 idle sessions park one wait", async () => {
  const { server } = await startServer();
  const clients = await Promise.all(Array.from({ length: 40 }, () => client(server)));
  try {
    for (const c of clients) await c.call("test.Fabric", "Echo", pattern(8, 2));
    const engine = await ProgressEngine.forThread();
    await until(() => engine.parkedWaits === 1, 3000, "the engine to sleep in one wait");
    await sleep(100);
    assertEquals(engine.parkedWaits, 1, "still one wait");
    assertEquals(ProcessNotifyPage.current()!.parkedWaits, 1, "one futex wait on the notify page");
    const r = await clients[39].call("test.Fabric", "Echo", pattern(8, 3));
    assertEquals([r.path, r.response], ["EAGER", pattern(8, 3)], "and it wakes for a call");
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await server.close();
  }
}, { skip: SHM_ONLY, timeoutMs: 30_000 });

test(
  "one call in flight after another holds the engine once, and lets go when calls end",
  async () => {
    const { server } = await startServer();
    const c = await client(server);
    try {
      const engine = await ProgressEngine.forThread();
      await c.call("test.Fabric", "Echo", pattern(8, 4));
      await sleep(20);
      const before = engine.counters.holds;
      for (let i = 0; i < 200; i++) {
        const r = await c.call("test.Fabric", "Echo", pattern(64, i));
        assertEquals([r.path, r.response], ["EAGER", pattern(64, i)]);
      }
      const held = engine.counters.holds - before;
      // The caller submits its next call right after its answer: the hold is kept (it was taken
      // and released once per call, two Set updates each time).
      assert(held >= 1 && held <= 20, `${held} holds taken for 200 calls`);
      await sleep(20); // no calls: the client let go of the engine…
      await c.call("test.Fabric", "Echo", pattern(8, 5));
      assertEquals(engine.counters.holds - before - held, 1, "…and takes it again for a new call");
    } finally {
      await c.close();
      await server.close();
    }
  },
  { skip: SHM_ONLY },
);

/** The stress against an shm server on `port` (the demo service's echo). */
const target = (port: number) => ({ port, echo: "verbus.Demo/Echo", label: "shm" });

test(
  "no wake-up is lost: 32 sessions, random pauses across the spin and sleep thresholds",
  async () => {
    const { server } = await startServer();
    try {
      await stress(target(server.port), 32, 30, 25);
    } finally {
      await server.close();
    }
  },
  { skip: SHM_ONLY, timeoutMs: 60_000 },
);

test(`no wake-up is lost across processes: 16 sessions to a ${otherRuntime()} server`, async () => {
  await withChild(otherRuntime(), "tests/fixtures/fabric_server.ts", {}, async (child) => {
    await stress(target(child.port), 16, 30, 25);
  });
}, { skip: SHM_ONLY, timeoutMs: 60_000 });
