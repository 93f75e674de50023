/**
 * Telemetry block: layout, counters, EWMA, occupancy, pressure flags, and a snapshot taken from a
 * byte copy of the server's control page (what a one-sided read gives the client).
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import {
  formatTelemetry,
  PRESSURE_OBJPOOL,
  PRESSURE_RING,
  TELEMETRY,
  Telemetry,
  TELEMETRY_BYTES,
  TELEMETRY_PATH,
  TELEMETRY_SLOTS,
  TELEMETRY_VERSION,
  telemetryView,
} from "../../rpc/region/telemetry.ts";
import { DEFAULT_SELECTOR_CONFIG, selectPath } from "../../rpc/client/selector.ts";

function fresh(): Telemetry {
  const t = new Telemetry(new Float64Array(TELEMETRY_SLOTS));
  t.reset();
  return t;
}

test("layout: distinct indices inside the block, bytes = slots × 8", () => {
  assertEquals(TELEMETRY_BYTES, TELEMETRY_SLOTS * 8);
  const named = Object.entries(TELEMETRY).filter(([k]) => !k.endsWith("_BASE"));
  const idx = named.map(([, v]) => v);
  assertEquals(new Set(idx).size, idx.length, "no two names share a slot");
  for (const i of idx) assert(i >= 0 && i < TELEMETRY_SLOTS);
  assertEquals(TELEMETRY.LAT_BASE + TELEMETRY_PATH.TCP_FALLBACK, TELEMETRY.LAT_TCP_US);
  assertEquals(TELEMETRY.LAT_N_BASE + TELEMETRY_PATH.LAZY, TELEMETRY.LAT_LAZY_N);
});

test("counters: inc, inc by n, set, get; reset zeroes and writes the version", () => {
  const t = fresh();
  t.inc(TELEMETRY.COMPLETED);
  t.inc(TELEMETRY.COMPLETED);
  t.inc(TELEMETRY.BULK_SG_BYTES, 65536);
  t.set(TELEMETRY.RING_CAPACITY, 1024);
  assertEquals(t.get(TELEMETRY.COMPLETED), 2);
  assertEquals(t.get(TELEMETRY.BULK_SG_BYTES), 65536);
  const s = t.snapshot();
  assertEquals([s.completed, s.bulkSgBytes, s.ringCapacity, s.version], [
    2,
    65536,
    1024,
    TELEMETRY_VERSION,
  ]);
  t.reset();
  assertEquals(t.get(TELEMETRY.COMPLETED), 0);
  assertEquals(t.get(TELEMETRY.VERSION), TELEMETRY_VERSION);
});

test("EWMA: the first sample sets the average, later ones converge to a new level", () => {
  const t = fresh();
  const P = TELEMETRY_PATH.EAGER;
  assertEquals(t.ewma(P, 10), 10);
  assertEquals(t.ewma(P, 20), 11, "10 + 0.1 × (20 − 10)");
  for (let i = 0; i < 100; i++) t.ewma(P, 50);
  const v = t.get(TELEMETRY.LAT_EAGER_US);
  assert(Math.abs(v - 50) < 0.01, `converged to 50, got ${v}`);
  assertEquals(t.get(TELEMETRY.LAT_EAGER_N), 102);
  assertEquals(t.ewma(TELEMETRY_PATH.BULK, 7, 1), 7);
  assertEquals(t.ewma(TELEMETRY_PATH.BULK, 9, 1), 9, "alpha 1 follows the last sample");
  assertEquals(t.get(TELEMETRY.LAT_LAZY_US), 0, "other paths untouched");
  // Bad inputs write nothing.
  for (
    const [p, s, a] of [[4, 1, 0.1], [-1, 1, 0.1], [0.5, 1, 0.1], [0, -1, 0.1], [0, NaN, 0.1], [
      0,
      1,
      0,
    ], [0, 1, 2]]
  ) {
    assertEquals(t.ewma(p, s, a), -1, `ewma(${p}, ${s}, ${a})`);
  }
  assertEquals(t.get(TELEMETRY.LAT_EAGER_N), 102);
  assertEquals(t.get(TELEMETRY.LAT_TCP_N), 0);
});

test("occupancy and usage: used / capacity, clamped to 0..1, 0 without capacity", () => {
  const t = fresh();
  assertEquals(t.ringOccupancy(), 0, "no capacity yet");
  t.set(TELEMETRY.RING_CAPACITY, 1024);
  t.set(TELEMETRY.RING_USED, 256);
  assertEquals(t.ringOccupancy(), 0.25);
  t.set(TELEMETRY.RING_USED, 2000);
  assertEquals(t.ringOccupancy(), 1);
  t.set(TELEMETRY.OBJPOOL_CAPACITY, 256);
  t.set(TELEMETRY.OBJPOOL_USED, 64);
  assertEquals(t.objectPoolUsage(), 0.25);
  t.set(TELEMETRY.OBJPOOL_USED, -3);
  assertEquals(t.objectPoolUsage(), 0);
});

test("simulated pressure flags force the readings to 1.0 and the selector to TCP", () => {
  const t = fresh();
  t.set(TELEMETRY.RING_CAPACITY, 1024);
  t.set(TELEMETRY.OBJPOOL_CAPACITY, 256);
  t.set(TELEMETRY.RING_USED, 1);
  t.set(TELEMETRY.PRESSURE_FLAGS, PRESSURE_RING);
  assertEquals([t.ringOccupancy(), t.objectPoolUsage()], [1, 0]);
  t.set(TELEMETRY.PRESSURE_FLAGS, PRESSURE_OBJPOOL);
  assertEquals([t.ringOccupancy(), t.objectPoolUsage()], [1 / 1024, 1]);
  t.set(TELEMETRY.PRESSURE_FLAGS, PRESSURE_RING | PRESSURE_OBJPOOL);
  const s = t.snapshot();
  assertEquals([s.ringOccupancy, s.objectPoolUsage, s.pressure.ring, s.pressure.objectPool], [
    1,
    1,
    true,
    true,
  ]);
  const sel = selectPath(
    { fabricUp: true, errorCount: 0, requestBytes: 10, requestFitsSlot: true, snapshot: s },
    DEFAULT_SELECTOR_CONFIG,
  );
  assertEquals(sel.path, "TCP_FALLBACK");
  t.set(TELEMETRY.PRESSURE_FLAGS, 0);
  assertEquals([t.ringOccupancy(), t.objectPoolUsage()], [1 / 1024, 0]);
});

test("snapshot round trip through a byte copy of the control page (the client's one-sided read)", () => {
  const PAGE = 4096, OFF = 512;
  const serverPage = new Uint8Array(PAGE);
  const server = new Telemetry(telemetryView(serverPage.buffer, OFF));
  server.reset();
  server.set(TELEMETRY.RING_CAPACITY, 1024);
  server.set(TELEMETRY.RING_USED, 930);
  server.set(TELEMETRY.OBJPOOL_CAPACITY, 256);
  server.set(TELEMETRY.OBJPOOL_USED, 17);
  server.set(TELEMETRY.FABRIC_UP, 1);
  server.set(TELEMETRY.TCP_UP, 1);
  server.inc(TELEMETRY.COMPLETED, 1000);
  server.inc(TELEMETRY.FAILED, 3);
  server.inc(TELEMETRY.FALLBACK, 5);
  server.inc(TELEMETRY.ERRORS, 2);
  server.ewma(TELEMETRY_PATH.EAGER, 12.5);
  server.ewma(TELEMETRY_PATH.LAZY, 40);
  server.ewma(TELEMETRY_PATH.TCP_FALLBACK, 80);
  server.inc(TELEMETRY.OBJ_ALLOCS, 9);
  server.inc(TELEMETRY.OBJ_RECLAIMS, 7);
  server.inc(TELEMETRY.OBJ_TTL_RECLAIMS, 1);
  server.inc(TELEMETRY.OBJ_STALE_REFS, 1);
  server.inc(TELEMETRY.OBJ_BAD_REFS, 4);
  server.inc(TELEMETRY.BULK_SG_REQUESTS, 2);
  server.inc(TELEMETRY.BULK_SG_ENTRIES, 6);
  server.inc(TELEMETRY.BULK_SG_BYTES, 49152);
  // Nothing outside the block was touched.
  assertEquals(serverPage.subarray(0, OFF), new Uint8Array(OFF));
  assertEquals(
    serverPage.subarray(OFF + TELEMETRY_BYTES),
    new Uint8Array(PAGE - OFF - TELEMETRY_BYTES),
  );

  // The client reads the page into its own buffer (a different ArrayBuffer).
  const clientCopy = new Uint8Array(PAGE);
  clientCopy.set(serverPage);
  const client = new Telemetry(telemetryView(clientCopy.buffer, OFF));
  const s = client.snapshot();
  assertEquals(s, server.snapshot());
  assertEquals(s.ringOccupancy, 930 / 1024);
  assertEquals([s.completed, s.failed, s.fallback, s.errors], [1000, 3, 5, 2]);
  assertEquals(s.latencyUs, { EAGER: 12.5, LAZY: 40, BULK: 0, TCP_FALLBACK: 80 });
  assertEquals(s.latencySamples, { EAGER: 1, LAZY: 1, BULK: 0, TCP_FALLBACK: 1 });
  assertEquals([s.objAllocs, s.objReclaims, s.objTtlReclaims, s.objStaleRefs, s.objBadRefs], [
    9,
    7,
    1,
    1,
    4,
  ]);
  assertEquals([s.bulkSgRequests, s.bulkSgEntries, s.bulkSgBytes], [2, 6, 49152]);
  assertEquals([s.fabricUp, s.tcpUp, s.version], [true, true, TELEMETRY_VERSION]);
  // The copy is a snapshot: later server updates do not show until the next read.
  server.inc(TELEMETRY.COMPLETED);
  assertEquals(client.snapshot().completed, 1000);
  assertEquals(
    selectPath({
      fabricUp: true,
      errorCount: 0,
      requestBytes: 1,
      requestFitsSlot: true,
      snapshot: s,
    }, DEFAULT_SELECTOR_CONFIG).reason,
    "server ring 90.82% full (> 90%)",
  );
});

test("formatTelemetry is readable and shows every group", () => {
  const t = fresh();
  t.set(TELEMETRY.RING_CAPACITY, 1024);
  t.set(TELEMETRY.RING_USED, 12);
  t.set(TELEMETRY.FABRIC_UP, 1);
  t.set(TELEMETRY.PRESSURE_FLAGS, PRESSURE_OBJPOOL);
  t.ewma(TELEMETRY_PATH.BULK, 123.456);
  t.inc(TELEMETRY.BULK_SG_BYTES, 4096);
  const text = formatTelemetry(t.snapshot());
  const lines = text.split("\n");
  assertEquals(lines.length, 8);
  assert(lines[0].includes("layout v1"), lines[0]);
  assert(text.includes("fabric        up    tcp down"), text);
  assert(text.includes("12 / 1024 slots (1.2 %)"), text);
  assert(text.includes("(100.0 %)  [simulated pressure]"), text);
  assert(text.includes("BULK 123.5 µs (n=1)"), text);
  assert(text.includes("EAGER –"), text);
  assert(text.includes("bytes 4096"), text);
  assert(
    formatTelemetry(new Telemetry(new Float64Array(TELEMETRY_SLOTS)).snapshot(), "x").startsWith(
      "x (uninitialised block)",
    ),
  );
});

test("views are checked: length, alignment, room in the buffer", () => {
  assertThrows(() => new Telemetry(new Float64Array(TELEMETRY_SLOTS - 1)), VerbusError, "at least");
  assertThrows(() => telemetryView(new ArrayBuffer(4096), 4), VerbusError, "multiple of 8");
  assertThrows(() => telemetryView(new ArrayBuffer(4096), 4096 - 8), VerbusError, "needs");
  assertEquals(
    telemetryView(new ArrayBuffer(4096), 4096 - TELEMETRY_BYTES).length,
    TELEMETRY_SLOTS,
  );
});
