/**
 * The send ring of brpc's RDMA mode (`transport/brpc_rdma/send_ring.ts`) against a model: random
 * reservations, commits, posts and completions; a reservation must never overlap bytes that are
 * queued or whose send has not completed, completions free in posting order, an empty ring takes
 * any reservation that fits it, and a completion freeing more sends than are in flight is refused.
 */
import { SendRing, sendRingBytes } from "../../transport/brpc_rdma/send_ring.ts";
import { assert, assertEquals, test } from "../harness.ts";

/** A small deterministic generator (xorshift32). */
function rng(seed: number): (n: number) => number {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

test("send ring: reservations never overlap queued or in-flight bytes; completions free in posting order", () => {
  for (const seed of [1, 7, 42, 1234, 99991]) {
    const size = 1000, maxInFlight = 8;
    const ring = new SendRing(new Uint8Array(size), maxInFlight);
    const rand = rng(seed);
    // Live ranges in allocation (= posting) order; `posted` ones are in flight.
    const live: { start: number; end: number; posted: boolean }[] = [];
    let inFlight = 0, reserved = 0, refusedEmpty = 0;
    for (let step = 0; step < 20_000; step++) {
      const op = rand(3);
      if (op === 0) {
        const n = 1 + rand(300);
        const off = ring.reserve(n);
        if (off < 0) {
          if (live.length === 0) refusedEmpty++;
          continue;
        }
        for (const r of live) {
          assert(
            off + n <= r.start || off >= r.end,
            `seed ${seed} step ${step}: [${off}, ${off + n}) overlaps live [${r.start}, ${r.end})`,
          );
        }
        const k = rand(n + 1);
        ring.commit(k);
        if (k > 0) live.push({ start: off, end: off + k, posted: false });
        reserved++;
      } else if (op === 1) {
        const next = live.find((r) => !r.posted);
        if (next === undefined || inFlight === maxInFlight) continue;
        next.posted = true;
        ring.posted(next.end);
        inFlight++;
      } else if (inFlight > 0) {
        const n = 1 + rand(inFlight);
        assert(ring.completed(n));
        live.splice(0, n); // the oldest live ranges are the posted ones
        inFlight -= n;
      }
      assertEquals(ring.inFlight, inFlight);
      const inUse = live.reduce((s, r) => s + r.end - r.start, 0);
      assert(ring.used >= inUse, `seed ${seed}: ring says ${ring.used} used, model ${inUse}`);
    }
    assertEquals(refusedEmpty, 0, "an empty ring takes any reservation that fits");
    assert(reserved > 3000, `seed ${seed}: only ${reserved} reservations`);
    assertEquals(ring.completed(inFlight + 1), false);
  }
});

test("send ring: its size holds a window of sends in flight: a piece to copy always finds room while the window is open", () => {
  assertEquals(sendRingBytes(125, 8160), 125 * 8160 + 64 * 1024 + 2 * 8160);
  const slots = 13, block = 4096, rand = rng(5);
  const ring = new SendRing(new Uint8Array(sendRingBytes(slots, block)), slots);
  for (let step = 0; step < 50_000; step++) {
    if (ring.inFlight < slots && rand(3) !== 0) {
      // The window is open and nothing is queued in the ring: a piece must find room.
      const k = 1 + rand(block);
      const off = ring.reserve(k);
      assert(off >= 0, `step ${step}: no room for ${k} B with ${ring.inFlight} sends in flight`);
      ring.commit(k);
      ring.posted(off + k);
    } else if (ring.inFlight > 0) assert(ring.completed(1 + rand(ring.inFlight)));
    // Now and then a frame reserved by the output and left in place (the largest reservation).
    const n = 1 + rand(64 * 1024), pieces = Math.ceil(n / block);
    if (rand(50) === 0 && slots - ring.inFlight >= pieces) {
      const off = ring.reserve(n);
      if (off >= 0) {
        ring.commit(n);
        for (let p = 1; p <= pieces; p++) ring.posted(off + Math.min(n, p * block)); // piecewise
      }
    }
  }
});
