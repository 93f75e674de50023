/**
 * The MPSC ring (transport/agent_ring/mpsc_ring.ts) in one process, producer and consumer over the same
 * words: FULL is returned, descriptors are delivered once and in claim order, a position claimed
 * and never published is reclaimed after the timeout (counted) and a late publish to it is LOST,
 * and garbage — wrong lap tags, descriptors out of range, a wild tail — is counted and survived.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { MpscRing, RING_FULL } from "../../transport/agent_ring/mpsc_ring.ts";

const N = 8;
function ring(): { a: MpscRing; b: MpscRing; words: Int32Array } {
  const words = new Int32Array(new SharedArrayBuffer((64 + N) * 4));
  const layout = { tail: 0, head: 16, entries: 64, capacity: N };
  const consumer = new MpscRing(words, layout);
  consumer.resetAsConsumer();
  return { a: new MpscRing(words, layout), b: consumer, words };
}
const out = new Uint32Array(64);
const drained = (r: MpscRing, now = 0, reclaimMs = 1000) =>
  Array.from(out.subarray(0, r.drain(out, 1000, now, reclaimMs)));

test("ring: claim, publish, drain in order; FULL at capacity is returned, not thrown", () => {
  const { a, b } = ring();
  for (let i = 0; i < N; i++) assert(a.publish(a.claim(), 10 + i), `publish ${i}`);
  assertEquals(a.claim(), RING_FULL);
  assertEquals(drained(b), [10, 11, 12, 13, 14, 15, 16, 17]);
  assertEquals(drained(b), [], "each descriptor once");
  // Many laps: positions wrap, lap tags change, nothing is delivered twice.
  const seen: number[] = [];
  for (let lap = 0; lap < 40; lap++) {
    for (let i = 0; i < 5; i++) assert(a.publish(a.claim(), 1 + ((lap * 5 + i) % 900)));
    seen.push(...drained(b));
  }
  assertEquals(seen, Array.from({ length: 200 }, (_, i) => 1 + (i % 900)));
  assertEquals(b.counters.delivered, 208);
});

test("ring: a producer that claims and dies is reclaimed after the timeout; its late publish is LOST", () => {
  const { a, b } = ring();
  const dead = a.claim();
  const live = a.claim();
  assert(a.publish(live, 7));
  assertEquals(drained(b, 0), [7], "published entries behind a stuck head are delivered");
  assertEquals(drained(b, 500), []);
  assertEquals(b.counters.reclaimed, 0, "not before the timeout");
  assertEquals(b.pending(), 2, "head waits on the dead claim");
  drained(b, 1500); // past the timeout: reclaimed
  assertEquals(b.counters.reclaimed, 1);
  drained(b, 1500);
  assertEquals(b.pending(), 0, "head moved on");
  assertEquals(a.publish(dead, 9), false, "a publish after the reclaim is LOST");
  // The ring is whole again: N more fit.
  for (let i = 0; i < N; i++) assert(a.publish(a.claim(), 20 + i));
  assertEquals(drained(b, 2000), [20, 21, 22, 23, 24, 25, 26, 27]);
});

test("ring: garbage entries, descriptors out of range and a wild tail are counted and survived", () => {
  const { a, b, words } = ring();
  assert(a.publish(a.claim(), 5000), "desc above maxDesc");
  const p = a.claim();
  words[64 + (p & (N - 1))] = 0x7abc0003; // wrong lap tag
  assert(a.publish(a.claim(), 3));
  assertEquals(drained(b), [3]);
  assertEquals(b.counters.garbage, 2);
  Atomics.store(words, 0, 123456789); // tail far ahead of head
  drained(b, 0);
  assert(b.counters.garbage >= 3, "the wild tail counted");
  drained(b, 5000); // the positions it named are reclaimed
  drained(b, 5000);
  assertEquals(b.pending(), 0, `tail repaired and passed (pending ${b.pending()})`);
  assert(a.publish(a.claim(), 4));
  assertEquals(drained(b, 6000), [4], "and the ring works again");
});

test("ring: capacity must be a power of two within the mapping", () => {
  const words = new Int32Array(64);
  let msg = "";
  try {
    new MpscRing(words, { tail: 0, head: 1, entries: 8, capacity: 12 });
  } catch (e) {
    msg = (e as Error).message;
  }
  assert(msg.includes("power of two"), msg);
});

test("ring: a head word someone else wrote (idle ring) costs one drain: FULL until then, posts after", () => {
  for (const scribble of [-N, 7 * N + 3, 0x7fffffff]) {
    const { a, b, words } = ring();
    for (let i = 0; i < 3; i++) assert(a.publish(a.claim(), 1 + i));
    assertEquals(drained(b), [1, 2, 3]);
    const garbage = b.counters.garbage;
    // A 4-byte write while the ring is idle: tail − head is N (looks full) or impossible.
    Atomics.store(words, 16, (Atomics.load(words, 0) + scribble) | 0);
    assertEquals(a.claim(), RING_FULL, `head moved by ${scribble}: the producer does not claim`);
    assertEquals(drained(b), [], "the drain finds nothing to deliver");
    assertEquals(b.counters.garbage, garbage + 1, "and counts the rewritten head");
    assertEquals(Atomics.load(words, 16), Atomics.load(words, 0), "head is the consumer's again");
    assert(a.publish(a.claim(), 9), "the producer posts again");
    assertEquals(drained(b), [9]);
  }
});
