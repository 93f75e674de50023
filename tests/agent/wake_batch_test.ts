/**
 * Batched wake-ups of the agent ring, the agent and a producer in this process over one ring:
 * - a burst of posts wakes a sleeping agent once (the producer rings at the end of its turn, and
 *   only the waker that clears the sleeping flag calls the kernel);
 * - answers to a producer with most of its calls still running wake it once at least half are
 *   answered (or when the delay runs out, or at once with delay 0), not once per answer;
 * - a producer that leaves mid-batch: its answers still publish, its entry is freed, the next
 *   producer of the entry starts clean;
 * - many laps of the ring under batched posts and answers: every call delivered once, none lost.
 */
import { assert, assertEquals, test } from "../harness.ts";
import {
  createAgentRing,
  type DrainBuffers,
  joinAgentRing,
} from "../../transport/agent_ring/mod.ts";
import type { AgentRingPort } from "../../transport/agent_ring/agent_ring_port.ts";
import { HEADER_WORD } from "../../transport/agent_ring/agent_ring.ts";
import { agentName } from "./util.ts";

const SIZES = { entries: 16, producers: 2, slots: 8, slotBytes: 256, spillBytes: 0 };
const out = (n = 64): DrainBuffers => ({
  desc: new Uint32Array(n),
  producer: new Uint32Array(n),
  slot: new Uint32Array(n),
  length: new Uint32Array(n),
});
/** Word of producer entry p's sleeping flag (table at 4096, 64 B per entry: owner, doorbell, sleeping). */
const producerSleeping = (p: number) => (4096 + p * 64) / 4 + 2;
const turn = () => new Promise<void>((r) => queueMicrotask(r));

async function ringPair(tag: string) {
  const name = agentName(tag);
  const host = await createAgentRing(name, SIZES);
  const port = await joinAgentRing(name) as AgentRingPort;
  return { name, host, port };
}

function post(port: AgentRingPort, k: number, byte: number): void {
  const area = port.area(k)!;
  area[0] = byte;
  assert(port.post(k, 1, k + 1), `post slot ${k}`);
}

test("a burst of 8 posts wakes the sleeping agent once, at the end of the producer's turn", async () => {
  const { host, port } = await ringPair("wake1");
  try {
    const w = port.rawWords;
    const parked = host.wait(host.doorbell(), 2000); // the agent sleeps: its flag is up
    assertEquals(Atomics.load(w, HEADER_WORD.sleeping), 1);
    for (let k = 0; k < 8; k++) post(port, k, k);
    assertEquals(port.wakesOwed, 1, "one wake-up owed for the whole burst");
    assertEquals(Atomics.load(w, HEADER_WORD.sleeping), 1, "no wake-up during the turn");
    await turn();
    assertEquals(port.wakesOwed, 0);
    assertEquals(Atomics.load(w, HEADER_WORD.sleeping), 0, "the one waker cleared the flag");
    assert(await parked, "the agent woke (not its timeout)");
    const o = out();
    assertEquals(host.drain(o, performance.now(), 1000), 8, "all 8 in one drain");
    assertEquals(Array.from(o.slot.subarray(0, 8)).sort(), [0, 1, 2, 3, 4, 5, 6, 7]);
  } finally {
    port.close();
    host.close();
  }
});

test("answers wake a producer with most calls running once half are answered, or after the delay", async () => {
  const { host, port } = await ringPair("wake2");
  try {
    const w = port.rawWords;
    for (let k = 0; k < 8; k++) post(port, k, k);
    const o = out();
    assertEquals(host.drain(o, performance.now(), 1000), 8);
    const answer = (i: number) => {
      const area = host.responseArea(o.producer[i], o.slot[i])!;
      area[0] = 100 + i;
      host.respond(o.producer[i], o.slot[i], 1);
    };
    const parked = port.wait(port.doorbell(), 5000);
    assertEquals(Atomics.load(w, producerSleeping(0)), 1, "the producer sleeps");
    answer(0);
    assertEquals(host.flushWakes(1000), 0, "1 of 8 answered: the wake-up waits");
    assertEquals(host.wakesDeferred, 1);
    assertEquals(Atomics.load(w, producerSleeping(0)), 1);
    assertEquals(port.ready(o.slot[0]), 1, "a polling producer sees the answer at once");
    for (let i = 1; i < 4; i++) answer(i);
    assertEquals(host.flushWakes(1000), 1, "4 answered, 4 running: one wake-up");
    assertEquals(host.wakesDeferred, 0);
    assert(await parked, "the producer woke (not its timeout)");
    // The delay: one answer, a flush before it runs out (deferred), one after (woken).
    const parked2 = port.wait(port.doorbell(), 5000);
    answer(4);
    assertEquals(host.flushWakes(20), 0);
    await new Promise((r) => setTimeout(r, 30));
    assertEquals(host.flushWakes(20), 1, "the delay ran out");
    assert(await parked2);
    // Delay 0 (what the agent does before it sleeps): at once.
    const parked3 = port.wait(port.doorbell(), 5000);
    answer(5);
    assertEquals(host.flushWakes(0), 1);
    assert(await parked3);
    for (let i = 6; i < 8; i++) answer(i);
    assertEquals(host.flushWakes(1000), 1, "nothing left running: woken at once");
    for (let k = 0; k < 8; k++) {
      assertEquals(port.ready(k), 1);
      assertEquals(port.response(k, 1)[0], 100 + Array.from(o.slot.subarray(0, 8)).indexOf(k));
      port.release(k);
    }
  } finally {
    port.close();
    host.close();
  }
});

test("a producer that leaves mid-batch: its answers publish, its entry is freed and reused clean", async () => {
  const { name, host, port } = await ringPair("wake3");
  let next: AgentRingPort | undefined;
  try {
    for (let k = 0; k < 6; k++) post(port, k, k);
    const o = out();
    assertEquals(host.drain(o, performance.now(), 1000), 6);
    host.respond(o.producer[0], o.slot[0], 1);
    assertEquals(host.flushWakes(1000), 0, "deferred: 5 still running");
    port.close(); // leaves with 5 calls running and one wake-up deferred
    host.sweep();
    assertEquals(host.counters().attached, 0);
    for (let i = 1; i < 6; i++) host.respond(o.producer[i], o.slot[i], 1);
    host.flushWakes(0);
    assertEquals(host.wakesDeferred, 0);
    host.sweep(); // nothing of it runs any more: the entry is free
    next = await joinAgentRing(name) as AgentRingPort;
    for (let k = 0; k < 8; k++) post(next, k, 50 + k);
    const o2 = out();
    assertEquals(host.drain(o2, performance.now(), 1000), 8, "the new producer's 8 calls, all");
    assertEquals(host.counters().rejected, 0);
  } finally {
    next?.close();
    port.close();
    host.close();
  }
});

test("many laps of a 16-entry ring under batched posts and answers: each call once, none lost", async () => {
  const { host, port } = await ringPair("wake4");
  try {
    const o = out(), seen: number[] = [];
    let byte = 0;
    for (let lap = 0; lap < 60; lap++) {
      const n = 3 + (lap % 6); // batches of 3 … 8: ring positions wrap at odd places
      for (let k = 0; k < n; k++) post(port, k, byte++ & 0xff);
      await turn();
      const got = host.drain(o, performance.now(), 1000);
      assertEquals(got, n, `lap ${lap}`);
      for (let i = 0; i < got; i++) {
        const req = host.request(o.producer[i], o.slot[i], o.length[i])[0];
        host.responseArea(o.producer[i], o.slot[i])![0] = req;
        host.respond(o.producer[i], o.slot[i], 1);
      }
      host.flushWakes(0.2);
      for (let k = 0; k < n; k++) {
        assertEquals(port.ready(k), 1, `lap ${lap} slot ${k}`);
        seen.push(port.response(k, 1)[0]);
        port.release(k);
      }
      host.flushWakes(0);
    }
    assertEquals(seen, Array.from({ length: byte }, (_, i) => i & 0xff));
    const c = host.counters();
    assertEquals([c.delivered, c.garbage, c.rejected, c.reclaimed], [byte, 0, 0, 0]);
  } finally {
    port.close();
    host.close();
  }
});
