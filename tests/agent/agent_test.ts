/**
 * The same-host agent end to end, every process on this runtime: a server here, `verbus agent`
 * in a child (connected to it over shm), producers in other children and in this process.
 * - every demo op through the agent, large requests and results on the agent's BULK / LAZY paths;
 * - 8 processes × 32 in flight: every put ran exactly once (the server counts), every get matched;
 * - a producer killed mid-write (and one killed with calls in flight): the others go on, its
 *   ring position and table entry are reclaimed and counted;
 * - the agent killed with calls in flight: producers get CONNECTION_CLOSED naming it, NOT_FOUND
 *   while it is down, and the same client works again once it restarts;
 * - hostile producers scribbling on the ring: the agent and the honest producers survive.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { connect } from "../../rpc/client/client.ts";
import { startAgent } from "../../rpc/agent/agent.ts";
import type { VerbusError } from "../../errors.ts";
import { DemoClient } from "../../examples/demo/client.ts";
import { verifyLargeObject } from "../../examples/demo/large_object.ts";
import { encodeKeyRequest, encodePutRequest } from "../../examples/demo/codec.ts";
import type { Child } from "../util/proc.ts";
import {
  agentName,
  producerResult,
  runVerbus,
  startAgentChild,
  startProducer,
  startTestServer,
  stopAgent,
  waitFor,
} from "./util.ts";
import { agentValue } from "./util_values.ts";
import { AgentRingPort } from "../../transport/agent_ring/agent_ring_port.ts";
import { HEADER_WORD } from "../../transport/agent_ring/agent_ring.ts";

const enc = new TextEncoder();

async function killAll(children: (Child | undefined)[]): Promise<void> {
  await Promise.all(children.map((c) => c?.kill()));
}

test(
  "every demo op through the agent: same result shape, via agent, remote paths EAGER/BULK/LAZY",
  async () => {
    const s = await startTestServer();
    const name = agentName("ops");
    const agent = await startAgentChild(name, s.server.port);
    const c = await connect(`agent:${name}`);
    try {
      const e = await c.call("verbus.Demo", "Echo", enc.encode("hi"));
      assertEquals([e.via, e.path, e.fabric, new TextDecoder().decode(e.response)], [
        "agent",
        "EAGER",
        "shm",
        "hi",
      ]);
      const d = new DemoClient((sv, m, q, o) => c.call(sv, m, q, o));
      assert((await d.ping()).rttUs >= 0);
      assertEquals(
        await d.echo(enc.encode("x"), { attachment: enc.encode("att") }),
        enc.encode("x"),
      );
      assertEquals((await d.put("small", enc.encode("v"))).replaced, false);
      assertEquals(await d.get("small"), enc.encode("v"));
      assertEquals(await d.get("missing"), undefined);
      // Large request (remote BULK) and large result (remote LAZY), within the 64 KiB slot.
      const big = agentValue("big", 40_000);
      const put = await c.call("verbus.Demo", "BigPut", encodePutRequest("big", big));
      assertEquals(put.path, "BULK", "a 40 kB request goes BULK on the agent's session");
      const got = await c.call("verbus.Demo", "KvGet", encodeKeyRequest("big"), {
        expectedResponseBytes: 40_000,
      });
      assertEquals(got.path, "LAZY", "a 40 kB result comes LAZY on the agent's session");
      assertEquals((await d.mget(["small", "big", "none"])).map((v) => v?.length), [
        1,
        40_000,
        undefined,
      ]);
      assert((await d.profile(3)) !== undefined);
      const l = await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:48k"), {
        expectedResponseBytes: 48 * 1024,
      });
      assertEquals([l.path, verifyLargeObject(48 * 1024, l.response)], ["LAZY", -1]);
      // Larger than a slot: spilled both ways, through the agent all the same.
      const spilled = await c.call("verbus.Demo", "Echo", agentValue("echo", 100_000));
      assertEquals([spilled.via, spilled.response], ["agent", agentValue("echo", 100_000)]);
      // Larger than the spill half (2 MiB by default): a clear error (no fallback) naming sizes.
      let msg = "";
      await c.call("verbus.Demo", "Echo", new Uint8Array(3 << 20)).catch((e) => (msg = e.message));
      assert(msg.includes("does not fit") && msg.includes("2097152-byte spill half"), msg);
      // Remote errors keep their shape.
      let code = "";
      await c.call("no.Such", "M", new Uint8Array(0)).catch((
        e,
      ) => (code = (e as VerbusError).code));
      assertEquals(code, "RPC_ERROR");
      // The async API.
      const h = c.submit("verbus.Demo", "Echo", enc.encode("async"));
      assertEquals(new TextDecoder().decode((await c.wait(h)).response), "async");
      assertEquals(s.server.stats().connectionsTotal, 1, "one server connection: the agent's");
    } finally {
      await c.close();
      await stopAgent(agent, name);
      await s.server.close();
    }
  },
  { timeoutMs: 120_000 },
);

test("8 processes × 32 in flight through one agent: no call lost, none run twice", async () => {
  const s = await startTestServer();
  const name = agentName("many");
  const agent = await startAgentChild(name, s.server.port);
  const producers: Child[] = [];
  const CALLS = 96;
  try {
    for (let i = 0; i < 8; i++) {
      producers.push(
        await startProducer(name, [
          "--id",
          String(i),
          "--calls",
          String(CALLS),
          "--window",
          "32",
          "--value-bytes",
          "200",
        ]),
      );
    }
    const results = await Promise.all(producers.map((p) => producerResult(p)));
    results.forEach((r, i) => {
      assertEquals([r.ok, r.badCount], [CALLS, 0], `producer ${i}: ${r.bad.join("; ")}`);
    });
    for (let i = 0; i < 8; i++) {
      for (let j = 0; j < CALLS; j++) {
        assertEquals(s.kv.puts.get(`p${i}-${j}`), 1, `key p${i}-${j} put exactly once`);
      }
    }
    assertEquals(s.kv.puts.size, 8 * CALLS, "no other puts");
    assertEquals(s.server.stats().connectionsTotal, 1, "the server saw one connection");
  } finally {
    await killAll(producers);
    await stopAgent(agent, name);
    await s.server.close();
  }
}, { timeoutMs: 300_000 });

test(
  "a producer killed mid-write (and one killed mid-flight): the others go on, both reclaimed and counted",
  async () => {
    const s = await startTestServer();
    const name = agentName("kill");
    const agent = await startAgentChild(name, s.server.port, { extra: ["--reclaim-ms", "300"] });
    let stall: Child | undefined, busy: Child | undefined;
    const c = await connect(`agent:${name}`);
    try {
      stall = await startProducer(name, ["--mode", "stall"]);
      busy = await startProducer(name, ["--mode", "busy", "--window", "32"]);
      await stall.kill("SIGKILL");
      await busy.kill("SIGKILL");
      // This process keeps calling; the dead claim blocks nothing past the reclaim timeout.
      for (let i = 0; i < 200; i++) {
        const key = `after-${i}`;
        await c.call("verbus.Demo", "KvPut", encodePutRequest(key, agentValue(key, 32)));
      }
      await waitFor(
        async () => {
          await c.call("verbus.Demo", "Ping", new Uint8Array(8));
          const r = c.stats().ring!;
          return r.reclaimed >= 1 && r.producersReclaimed >= 2;
        },
        "the dead producers' position and table entries to be reclaimed",
        60_000,
        () => JSON.stringify(c.stats().ring),
      );
      for (let i = 0; i < 200; i++) assertEquals(s.kv.puts.get(`after-${i}`), 1);
    } finally {
      await c.close();
      await killAll([stall, busy]);
      await stopAgent(agent, name);
      await s.server.close();
    }
  },
  { timeoutMs: 180_000 },
);

test("the agent killed and restarted: clear errors, then the same client works again", async () => {
  const s = await startTestServer();
  const name = agentName("restart");
  let agent: Child | undefined = await startAgentChild(name, s.server.port);
  const c = await connect(`agent:${name}`, { timeoutMs: 60_000 });
  try {
    await c.call("verbus.Demo", "Ping", new Uint8Array(8));
    const inflight = Array.from(
      { length: 8 },
      (_, i) =>
        c.call("test.Agent", "Hold", enc.encode(`h${i}`)).then(
          () => "answered",
          (e: VerbusError) => `${e.code}: ${e.message}`,
        ),
    );
    await waitFor(() => s.held() === 8, "8 calls held at the server");
    await agent.kill("SIGKILL");
    agent = undefined;
    const outcomes = await Promise.all(inflight);
    for (const o of outcomes) {
      assert(o.startsWith("CONNECTION_CLOSED") && o.includes("exited"), `in-flight call: ${o}`);
    }
    s.release();
    let down = "";
    await c.call("verbus.Demo", "Ping", new Uint8Array(8)).catch((
      e: VerbusError,
    ) => (down = `${e.code}: ${e.message}`));
    assert(down.startsWith("NOT_FOUND") && down.includes(name), `while the agent is down: ${down}`);
    agent = await startAgentChild(name, s.server.port);
    const r = await c.call("verbus.Demo", "Echo", enc.encode("back"));
    assertEquals([r.via, new TextDecoder().decode(r.response)], ["agent", "back"]);
    assertEquals(c.stats().joins, 2, "joined the restarted agent");
  } finally {
    await c.close();
    await stopAgent(agent, name);
    s.release();
    await s.server.close();
  }
}, { timeoutMs: 180_000 });

test("one 4-byte write of an idle agent's ring head: the next calls are answered", async () => {
  const s = await startTestServer();
  const name = agentName("head");
  const agent = await startAgentChild(name, s.server.port);
  const c = await connect(`agent:${name}`, { timeoutMs: 60_000 });
  try {
    await c.call("verbus.Demo", "Ping", new Uint8Array(8));
    // A same-user bystander maps the ring and moves head so that tail − head is the capacity
    // (every producer sees FULL) — before, it stayed so and every call failed after 5 s.
    const port = await AgentRingPort.open(name);
    const w = port.rawWords;
    Atomics.store(
      w,
      HEADER_WORD.head,
      (Atomics.load(w, HEADER_WORD.tail) - port.sizes.entries) | 0,
    );
    port.close();
    for (let i = 0; i < 20; i++) {
      const r = await c.call("verbus.Demo", "Echo", enc.encode(`after ${i}`));
      assertEquals(new TextDecoder().decode(r.response), `after ${i}`);
    }
  } finally {
    await c.close();
    await stopAgent(agent, name);
    await s.server.close();
  }
}, { timeoutMs: 120_000 });

test(
  "hostile producers scribbling on the ring: the agent and the honest producers survive",
  async () => {
    const s = await startTestServer();
    const name = agentName("hostile");
    const agent = await startAgentChild(name, s.server.port, { extra: ["--reclaim-ms", "200"] });
    const hostile: Child[] = [];
    const honest: Child[] = [];
    try {
      for (let i = 0; i < 2; i++) hostile.push(await startProducer(name, ["--mode", "hostile"]));
      for (let i = 0; i < 3; i++) {
        honest.push(
          await startProducer(name, ["--id", String(i), "--calls", "150", "--window", "16"]),
        );
      }
      const results = await Promise.all(honest.map((p) => producerResult(p)));
      results.forEach((r, i) =>
        assertEquals([r.ok, r.badCount], [150, 0], `honest ${i}: ${r.bad.join("; ")}`)
      );
      for (let i = 0; i < 3; i++) {
        for (let j = 0; j < 150; j++) {
          assertEquals(
            s.kv.puts.get(`p${i}-${j}`),
            1,
            `p${i}-${j} once`,
          );
        }
      }
      const c = await connect(`agent:${name}`);
      try {
        const r = c.stats();
        await c.call("verbus.Demo", "Ping", new Uint8Array(8));
        const ring = c.stats().ring!;
        assert(
          ring.garbage + ring.rejected > 0,
          `the agent saw the garbage: ${JSON.stringify(ring ?? r.ring)}`,
        );
      } finally {
        await c.close();
      }
      assertEquals(agent.output().includes("stopped"), false);
    } finally {
      await killAll([...hostile, ...honest]);
      await stopAgent(agent, name);
      await s.server.close();
    }
  },
  { timeoutMs: 300_000 },
);

test(
  "verbus agent: bad options name the option; a second agent of one name is refused; no agent is NOT_FOUND",
  async () => {
    const bad = runVerbus(["agent", "--listen", "x"]);
    assert(bad.code === 2 && bad.output.includes("connect"), `exit ${bad.code}: ${bad.output}`);
    const port = runVerbus(["agent", "--connect", "127.0.0.1:99999x"]);
    assert(
      port.code === 2 && port.output.includes("HOST:PORT"),
      `exit ${port.code}: ${port.output}`,
    );
    // The one argv convention of every command: --name=value, and flags as --flag=true|false.
    const eq = runVerbus(["agent", "--connect=127.0.0.1:99999x", "--json=false"]);
    assert(
      eq.code === 2 && eq.output.includes("--connect: expected HOST:PORT"),
      `exit ${eq.code}: ${eq.output}`,
    );
    const unknown = runVerbus(["agent", "--conect=127.0.0.1:1"]);
    assert(
      unknown.code === 2 && unknown.output.includes("unknown option --conect"),
      `exit ${unknown.code}: ${unknown.output}`,
    );
    let msg = "";
    await startAgent("127.0.0.1:1", { name: "bad name!" }).catch((
      e,
    ) => (msg = `${e.code}: ${e.message}`));
    assert(msg.startsWith("INVALID_OPTIONS") && msg.includes("name"), msg);
    await connect("agent:nobody-here").catch((e) => (msg = `${e.code}: ${e.message}`));
    assert(msg.startsWith("NOT_FOUND") && msg.includes("nobody-here"), msg);
    const s = await startTestServer();
    const name = agentName("twice");
    const agent = await startAgentChild(name, s.server.port);
    try {
      const second = runVerbus([
        "agent",
        "--connect",
        `127.0.0.1:${s.server.port}`,
        "--listen",
        name,
      ]);
      assert(
        second.code === 1 && second.output.includes(`already runs (pid ${agent.pid})`),
        `exit ${second.code}: ${second.output}`,
      );
      const c = await connect(`agent:${name}`);
      assertEquals((await c.call("verbus.Demo", "Echo", enc.encode("still"))).via, "agent");
      await c.close();
    } finally {
      await stopAgent(agent, name);
      await s.server.close();
    }
  },
  { timeoutMs: 180_000 },
);

test(
  "calls past their deadline fail with TIMEOUT and give their slots back (2 slots, 5 late calls)",
  async () => {
    const s = await startTestServer();
    const name = agentName("late");
    const agent = await startAgentChild(name, s.server.port, { extra: ["--slots", "2"] });
    const c = await connect(`agent:${name}`);
    try {
      const late = await Promise.all(
        Array.from(
          { length: 5 },
          (_, i) =>
            c.call("test.Agent", "Hold", enc.encode(`late${i}`), { timeoutMs: 300 }).then(
              () => "answered",
              (e: VerbusError) => e.code,
            ),
        ),
      );
      assertEquals(late, ["TIMEOUT", "TIMEOUT", "TIMEOUT", "TIMEOUT", "TIMEOUT"]);
      s.release();
      for (let i = 0; i < 20; i++) {
        const r = await c.call("verbus.Demo", "Echo", enc.encode(`after${i}`), {
          timeoutMs: 30_000,
        });
        assertEquals(new TextDecoder().decode(r.response), `after${i}`);
      }
    } finally {
      await c.close();
      await stopAgent(agent, name);
      s.release();
      await s.server.close();
    }
  },
  { timeoutMs: 120_000 },
);
