/**
 * A producer waiting for the agent's answers naps (blocks its own thread in a futex wait the
 * agent's wake-up ends) before it parks off-thread:
 * - the ring's nap returns at once when the doorbell already moved, and after its bound when it
 *   does not, with the sleeping flag down afterwards either way;
 * - through a real agent, a client's waits are naps ended by the agent's wake-ups (not by their
 *   bound), every call answered with its own bytes, while callers keep posting between naps;
 * - `napUs: 0` never blocks the thread: every wait is parked;
 * - naps that end at their bound (the server on the client's own thread cannot answer while it
 *   naps) are followed by parked waits, and the calls complete;
 * - the back-off itself: after the n-th miss in a row 2^n − 1 waits park; a woken nap resets it.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { connectAgent } from "../../rpc/agent/agent_client.ts";
import { createAgentRing, joinAgentRing } from "../../transport/agent_ring/mod.ts";
import type { AgentRingPort } from "../../transport/agent_ring/agent_ring_port.ts";
import type { AgentRingProducer } from "../../transport/agent_ring/mod.ts";
import { AnswerWaits } from "../../rpc/agent/answer_waits.ts";
import { agentName, startAgentChild, stopAgent, withAgent } from "./util.ts";
import { withChild } from "../util/proc.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";

const SIZES = { entries: 16, producers: 2, slots: 8, slotBytes: 256, spillBytes: 0 };
/** Word of producer entry p's sleeping flag (table at 4096, 64 B per entry: owner, doorbell, sleeping). */
const producerSleeping = (p: number) => (4096 + p * 64) / 4 + 2;

test("agent ring nap: at once when the doorbell moved, false after its bound, flag down after", async () => {
  const name = agentName("nap1");
  const host = await createAgentRing(name, SIZES);
  const port = await joinAgentRing(name) as AgentRingPort;
  try {
    const seen = port.doorbell();
    assertEquals(port.nap(seen, 2000), false, "nothing answered: the nap ends at its bound");
    assertEquals(Atomics.load(port.rawWords, producerSleeping(0)), 0, "flag down after a miss");
    const area = port.area(0)!;
    area[0] = 7;
    assert(port.post(0, 1, 1));
    const o = {
      desc: new Uint32Array(4),
      producer: new Uint32Array(4),
      slot: new Uint32Array(4),
      length: new Uint32Array(4),
    };
    assertEquals(host.drain(o, performance.now(), 1000), 1);
    host.respond(0, 0, 1); // moves the producer's doorbell
    assertEquals(port.nap(seen, 100_000), true, "the doorbell had moved: no wait");
    assertEquals(Atomics.load(port.rawWords, producerSleeping(0)), 0, "flag down");
    assertEquals(port.ready(0), 1);
  } finally {
    port.close();
    host.close();
  }
});

const CALLERS = 32, EACH = 10;
const enc = new TextEncoder(), dec = new TextDecoder();

async function echoes(c: Awaited<ReturnType<typeof connectAgent>>) {
  await Promise.all(Array.from({ length: CALLERS }, async (_, i) => {
    for (let j = 0; j < EACH; j++) {
      const text = `caller ${i} call ${j}`;
      const r = await c.call("verbus.Demo", "Echo", enc.encode(text));
      assertEquals(dec.decode(r.response), text);
    }
  }));
}

test(
  "agent client naps: the agent's wake-ups end them, every call answered; napUs 0 parks instead",
  async () => {
    // The server in a process of its own: a nap blocks this thread, and what the agent forwards to
    // must not wait for it.
    await withChild(
      RUNTIME as RuntimeName,
      "cli/main.ts",
      { args: ["serve", "--port", "0"] },
      async (srv) => {
        const name = agentName("nap2");
        const agent = await startAgentChild(name, srv.port!);
        try {
          const napping = await connectAgent(name, { napUs: 100_000 });
          try {
            await echoes(napping);
            const w = napping.stats().waits;
            assert(w.naps > 0, `the client napped (${JSON.stringify(w)})`);
            assert(
              w.napMisses < w.naps,
              `naps ended by the agent's wake-ups (${JSON.stringify(w)})`,
            );
          } finally {
            await napping.close();
          }
          const parking = await connectAgent(name, { napUs: 0 });
          try {
            await echoes(parking);
            const w = parking.stats().waits;
            assertEquals(w.naps, 0, "napUs 0: the thread never blocks");
            assert(w.parks > 0, `parked waits (${JSON.stringify(w)})`);
          } finally {
            await parking.close();
          }
        } finally {
          await stopAgent(agent, name);
        }
      },
    );
  },
  { timeoutMs: 120_000 },
);

test(
  "agent client naps back off when they miss: a server on the client's own thread is answered",
  async () => {
    // The server runs on this thread: while it naps, the agent's call cannot be answered, so every
    // nap ends at its bound. The client backs off to parked waits and the calls complete.
    await withAgent("nap3", async (_s, name) => {
      const c = await connectAgent(name, { napUs: 20_000 });
      try {
        await echoes(c);
        const w = c.stats().waits;
        assert(w.napMisses >= 1, `naps missed (${JSON.stringify(w)})`);
        assert(
          w.parks >= w.napMisses,
          `each miss followed by a parked wait (${JSON.stringify(w)})`,
        );
      } finally {
        await c.close();
      }
    });
  },
  { timeoutMs: 120_000 },
);

test("agent answer waits: missed naps back off (1, 3, 7 … parked waits between naps); a woken nap resets it", () => {
  let answers = false, naps = 0;
  const port = {
    nap: () => (naps++, answers),
    wait: () => Promise.resolve(true),
  } as unknown as AgentRingProducer;
  const w = new AnswerWaits(1000);
  const napped: number[] = [];
  for (let i = 1; i <= 20; i++) {
    const before = naps;
    w.wait(port, 0);
    if (naps > before) napped.push(i);
  }
  assertEquals(napped, [1, 4, 9, 18], "a nap, then 1 + 1, 1 + 3, 1 + 7 parked waits");
  assertEquals([w.naps, w.napMisses, w.parks], [4, 4, 16]);
  answers = true; // the agent answers within a nap from now on
  const later: number[] = [];
  for (let i = 21; i <= 60; i++) {
    const before = naps;
    w.wait(port, 0);
    if (naps > before) later.push(i);
  }
  // After the miss at wait 18 (back-off 15): its parked wait and 15 more, then naps every wait.
  assertEquals(later[0], 35);
  assertEquals(later.slice(1, 4), [36, 37, 38], "a woken nap resets the back-off");
  assertEquals(new AnswerWaits(0).wait(port, 0) instanceof Promise, true, "napUs 0 parks");
});
