/**
 * The RDMA send engine (transport/rdma_send_ring.ts) against a fake fabric: signal every N,
 * signal on bounce use and when asked; a signaled completion retires every request up to it
 * (credits and bounce bytes come back); caller completions in posting order; FULL when there
 * is no credit, no bounce space or no room for a caller completion; both retirement styles
 * (by sequence, as verbs; oldest-first, as URMA).
 */
import { Completions } from "../../transport/fabric.ts";
import {
  type RdmaSendPort,
  RdmaSendRing,
  type RdmaSendRingShape,
  RING_FULL,
} from "../../transport/rdma_send_ring.ts";
import { assert, assertEquals, test } from "../harness.ts";

/** A fabric whose NIC completes every posted signaled request when reaped (unless stalled). */
class FakeFabric implements RdmaSendPort {
  usable = true;
  stalled = false;
  posts = 0;
  /** Signaled sequences encoded, posted or not. */
  readonly signaled: number[] = [];
  #postedUpTo = 0;
  ring!: RdmaSendRing;
  byOldest = false;

  encode(wrId: number, report: boolean, signal = false): boolean {
    const seq = this.ring.nextSeq;
    const s = this.ring.record(wrId, report, signal);
    if (s) this.signaled.push(seq);
    return s;
  }

  postBatch(): void {
    this.posts++;
    this.#postedUpTo = this.ring.nextSeq;
  }

  reapCompletions(): number {
    if (this.stalled) return 0;
    let n = 0;
    while (this.signaled.length > 0 && this.signaled[0] < this.#postedUpTo) {
      const seq = this.signaled.shift()!;
      if (this.byOldest) this.ring.retireOldest(0);
      else this.ring.retireThrough(seq, 0);
      n++;
    }
    return n;
  }
}

function make(shape: Partial<RdmaSendRingShape> = {}): { ring: RdmaSendRing; fabric: FakeFabric } {
  const fabric = new FakeFabric();
  fabric.ring = new RdmaSendRing(fabric, {
    depth: 16,
    bounceBytes: 1024,
    bounceAlign: 16,
    signalEvery: 4,
    signalBounceBytes: 256,
    callerCompletions: 8,
    fullWaitMs: 1,
    ...shape,
  });
  return { ring: fabric.ring, fabric };
}

test("rdma send ring: every signalEvery-th request is signaled, and one whose caller asks", () => {
  const { ring, fabric } = make();
  const flags: boolean[] = [];
  for (let i = 0; i < 8; i++) {
    assertEquals(ring.reserve(0, false), 0, `room ${i}`);
    flags.push(fabric.encode(100 + i, false));
  }
  assertEquals(flags, [false, false, false, true, false, false, false, true], "every 4th");
  assertEquals(ring.reserve(0, true), 0, "room for a reported one");
  assert(fabric.encode(7, true), "a reported request is signaled");
  assert(ring.reserve(0, false) === 0 && fabric.encode(8, false, true), "signal when asked");
  assertEquals(ring.counters.signaled, 4, "signaled count");
});

test("rdma send ring: a signaled completion retires every request up to it; caller completions in order", () => {
  for (const byOldest of [false, true]) {
    const { ring, fabric } = make();
    fabric.byOldest = byOldest;
    for (let i = 0; i < 6; i++) {
      ring.reserve(0, i % 2 === 1);
      fabric.encode(10 + i, i % 2 === 1);
    }
    assert(ring.outstanding, "outstanding before the post");
    assertEquals(ring.unposted, 6, "unposted");
    ring.post();
    assertEquals([ring.unposted, fabric.posts], [0, 1], "one doorbell for the batch");
    assert(ring.awaitingSignal, "a signaled request is in flight");
    ring.reap();
    assert(!ring.outstanding && ring.completed(5), `all retired (byOldest ${byOldest})`);
    const out = new Completions(8);
    assertEquals(ring.drainInto(out), 3, "three caller completions");
    assertEquals(Array.from(out.wrId.subarray(0, 3)), [11, 13, 15], "in posting order");
    assertEquals(Array.from(out.status.subarray(0, 3)), [0, 0, 0], "statuses");
  }
});

test("rdma send ring: bounce space is aligned, wraps, and comes back only when a later signal completes", () => {
  const { ring, fabric } = make({ signalEvery: 1000, signalBounceBytes: 100_000 });
  assertEquals(ring.maxBounce, 512, "max bounce");
  assertEquals(ring.reserve(100, false), 0, "first at 0");
  fabric.encode(1, false);
  assertEquals(ring.reserve(10, false), 112, "aligned to 16");
  fabric.encode(2, false);
  assertEquals(ring.reserve(512, false), 128, "next");
  fabric.encode(3, false);
  assertEquals(ring.reserve(400, false), RING_FULL, "no room: nothing signaled completes");
  assert(ring.reserve(0, false) === 0 && fabric.encode(4, false, true), "a signaled marker");
  assertEquals(ring.reserve(400, false), 0, "space returned: wraps to the start");
  assert(ring.counters.fullSpins >= 1, "full spins counted");
});

test("rdma send ring: signal once signalBounceBytes were used since the last signal", () => {
  const { ring, fabric } = make({ signalEvery: 1000, signalBounceBytes: 256 });
  const flags: boolean[] = [];
  for (let i = 0; i < 4; i++) {
    ring.reserve(128, false);
    flags.push(fabric.encode(i, false));
  }
  assertEquals(flags, [false, true, false, true], "every 256 bounce bytes");
});

test("rdma send ring: FULL without credits or room for a caller completion; back after reaping", () => {
  const { ring, fabric } = make({ depth: 8, signalEvery: 100, callerCompletions: 2 });
  fabric.stalled = true;
  for (let i = 0; i < 8; i++) {
    assertEquals(ring.reserve(0, false), 0, `credit ${i}`);
    fabric.encode(i, i === 7);
  }
  assertEquals(ring.reserve(0, false), RING_FULL, "no credit");
  fabric.stalled = false;
  assertEquals(ring.reserve(0, true), 0, "credits back after the reap");
  fabric.encode(8, true);
  assertEquals(
    ring.reserve(0, true),
    RING_FULL,
    "two reported completions pending: caller ring full",
  );
  assertEquals(ring.reserve(0, false), 0, "an unreported request still fits");
  fabric.encode(9, false);
  ring.drainInto(new Completions(4));
  assertEquals(ring.reserve(0, true), 0, "room again once drained");
  fabric.usable = false;
  fabric.stalled = true;
  for (let i = 0; i < 16 && ring.reserve(0, false) !== RING_FULL; i++) fabric.encode(20 + i, false);
  assertEquals(ring.reserve(0, false), RING_FULL, "an unusable fabric says FULL at once");
});

test("rdma send ring: an error completion reports the caller's status; pushCompletion synthesizes one", () => {
  const { ring, fabric } = make();
  ring.reserve(0, true);
  fabric.encode(42, true);
  ring.post();
  ring.retireThrough(0, 12);
  assert(ring.pushCompletion(43, 0), "synthesized");
  const out = new Completions(4);
  assertEquals(ring.drainInto(out), 2, "two");
  assertEquals(
    [out.wrId[0], out.status[0], out.wrId[1], out.status[1]],
    [42, 12, 43, 0],
    "records",
  );
  ring.reserve(0, true);
  fabric.encode(44, true);
  ring.post();
  assertEquals([ring.oldestWrId, ring.oldestReported], [44, true], "oldest");
  assertEquals(ring.retireOldest(5, false), 44, "reported without retiring");
  assert(ring.outstanding, "credits kept");
  assertEquals(ring.drainInto(out), 1, "one");
  assertEquals([out.wrId[0], out.status[0]], [44, 5], "error record");
});

test("rdma send ring: FULL at once when no signaled request is in flight (reaping cannot make room)", () => {
  const { ring, fabric } = make({ callerCompletions: 1, fullWaitMs: 10_000 });
  ring.reserve(0, true);
  fabric.encode(1, true);
  ring.reserve(0, false);
  fabric.encode(2, false);
  ring.post();
  ring.reap();
  assert(!ring.awaitingSignal && ring.awaitingCompletions, "an unsignaled request in flight");
  const started = performance.now();
  assertEquals(ring.reserve(0, true), RING_FULL, "caller ring full");
  assert(performance.now() - started < 1_000, "without waiting fullWaitMs");
  assertEquals(ring.drainInto(new Completions(4)), 1, "drained");
  assertEquals(ring.reserve(0, true), 0, "room again");
});
