/**
 * The telemetry block of the control page: {@link TELEMETRY_SLOTS} float64 counters
 * the server updates locally and the client reads with a one-sided read of the server's control
 * page, then wraps its copy in a second {@link Telemetry} to take a snapshot.
 *
 * Layout (float64, host byte order — little-endian on every supported platform; index → byte
 * offset = index × 8 from the block start, which must be 8-byte aligned):
 *
 * ```text
 *  idx  name               meaning
 *   0   VERSION            layout version (TELEMETRY_VERSION); 0 = never initialised
 *   1   RING_USED          request-ring slots in use
 *   2   RING_CAPACITY      request-ring slots
 *   3   OBJPOOL_USED       object-pool slabs in use
 *   4   OBJPOOL_CAPACITY   object-pool slabs
 *   5   FABRIC_UP          fast fabric available (0/1)
 *   6   TCP_UP             TCP available (0/1)
 *   7   PRESSURE_FLAGS     simulated pressure: bit0 ring, bit1 object pool
 *   8   COMPLETED          calls completed
 *   9   FAILED             calls failed
 *  10   FALLBACK           calls that fell back to TCP
 *  11   ERRORS             fabric errors
 *  12   LAT_EAGER_US       server time EWMA, µs, EAGER     ┐  (receive → answer, real clock,
 *  13   LAT_LAZY_US        server time EWMA, µs, LAZY      │  1 call in LATENCY_SAMPLE_EVERY)
 *  14   LAT_BULK_US        server time EWMA, µs, BULK      │ LAT_BASE + path index
 *  15   LAT_TCP_US         server time EWMA, µs, TCP (unused) ┘
 *  16   LAT_EAGER_N        samples in that EWMA, EAGER     ┐
 *  17   LAT_LAZY_N         latency samples, LAZY           │ LAT_N_BASE + path index
 *  18   LAT_BULK_N         latency samples, BULK           │
 *  19   LAT_TCP_N          latency samples, TCP_FALLBACK   ┘
 *  20   OBJ_ALLOCS         object allocations
 *  21   OBJ_RECLAIMS       objects freed by RECLAIM
 *  22   OBJ_TTL_RECLAIMS   objects freed by the TTL sweep
 *  23   OBJ_STALE_REFS     stale (and repeated) RECLAIMs
 *  24   OBJ_BAD_REFS       RECLAIMs with a bad object id
 *  25   BULK_SG_REQUESTS   BULK scatter-gather requests
 *  26   BULK_SG_ENTRIES    BULK scatter-gather entries
 *  27   BULK_SG_BYTES      BULK scatter-gather bytes
 *  28–31                   reserved (0)
 * ```
 *
 * A remote read of the page is not atomic: a snapshot may mix values from slightly different
 * moments (each float64 is written in one store). The numbers are advisory, never trusted for
 * correctness.
 *
 * Threading: a {@link Telemetry} belongs to one session's event loop. `inc` / `set` / `ewma` /
 * `ringOccupancy` / `objectPoolUsage` allocate nothing and never throw; `snapshot` and
 * {@link formatTelemetry} allocate (stats / CLI only).
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { CallPath } from "../client/selector.ts";

/** Named indices of the telemetry block (see the module layout). */
export const TELEMETRY = Object.freeze(
  {
    VERSION: 0,
    RING_USED: 1,
    RING_CAPACITY: 2,
    OBJPOOL_USED: 3,
    OBJPOOL_CAPACITY: 4,
    FABRIC_UP: 5,
    TCP_UP: 6,
    PRESSURE_FLAGS: 7,
    COMPLETED: 8,
    FAILED: 9,
    FALLBACK: 10,
    ERRORS: 11,
    LAT_BASE: 12,
    LAT_EAGER_US: 12,
    LAT_LAZY_US: 13,
    LAT_BULK_US: 14,
    LAT_TCP_US: 15,
    LAT_N_BASE: 16,
    LAT_EAGER_N: 16,
    LAT_LAZY_N: 17,
    LAT_BULK_N: 18,
    LAT_TCP_N: 19,
    OBJ_ALLOCS: 20,
    OBJ_RECLAIMS: 21,
    OBJ_TTL_RECLAIMS: 22,
    OBJ_STALE_REFS: 23,
    OBJ_BAD_REFS: 24,
    BULK_SG_REQUESTS: 25,
    BULK_SG_ENTRIES: 26,
    BULK_SG_BYTES: 27,
  } as const,
);

/** Layout version written at `TELEMETRY.VERSION` by {@link Telemetry.reset}. */
export const TELEMETRY_VERSION = 1;
/** float64 slots in the block (including reserved ones). */
export const TELEMETRY_SLOTS = 32;
/** Bytes to reserve in the control page for the block (8-byte aligned). */
export const TELEMETRY_BYTES = TELEMETRY_SLOTS * 8;
/** `PRESSURE_FLAGS` bit: the request ring reads as full. */
export const PRESSURE_RING = 1;
/** `PRESSURE_FLAGS` bit: the object pool reads as full. */
export const PRESSURE_OBJPOOL = 2;

/**
 * One call in this many has its time measured with the real clock (`performance.now()`, twice)
 * for the latency EWMAs: the server's receive → answer time on the control page, the client's
 * submit → result time of fabric calls (`Client.stats()`). The first call is always one of them.
 * Reading the clock for every call (an op call on Deno) was a visible share of a small call.
 */
export const LATENCY_SAMPLE_EVERY = 16;

/** Path index for {@link Telemetry.ewma}: EAGER 0, LAZY 1, BULK 2, TCP_FALLBACK 3. */
export const TELEMETRY_PATH: Readonly<Record<CallPath, number>> = Object.freeze({
  EAGER: 0,
  LAZY: 1,
  BULK: 2,
  TCP_FALLBACK: 3,
});

/** A plain copy of the block (what `verbus call --stats` shows and `--json` prints). */
export interface TelemetrySnapshot {
  version: number;
  ringUsed: number;
  ringCapacity: number;
  /** 0..1; 1 while ring pressure is simulated. Shaped for `SelectInput.snapshot`. */
  ringOccupancy: number;
  objectPoolUsed: number;
  objectPoolCapacity: number;
  /** 0..1; 1 while object-pool pressure is simulated. Shaped for `SelectInput.snapshot`. */
  objectPoolUsage: number;
  fabricUp: boolean;
  tcpUp: boolean;
  pressure: { ring: boolean; objectPool: boolean };
  completed: number;
  failed: number;
  fallback: number;
  errors: number;
  /** Latency EWMA in µs per path (0 until the first sample). */
  latencyUs: Record<CallPath, number>;
  /** Latency samples per path. */
  latencySamples: Record<CallPath, number>;
  objAllocs: number;
  objReclaims: number;
  objTtlReclaims: number;
  objStaleRefs: number;
  objBadRefs: number;
  bulkSgRequests: number;
  bulkSgEntries: number;
  bulkSgBytes: number;
}

/**
 * The float64 view of the block at `byteOffset` in `buffer` (e.g. the control page), checked for
 * alignment and room. Setup only; throws `VerbusError` `INVALID_ARGUMENT`.
 */
export function telemetryView(buffer: ArrayBufferLike, byteOffset: number): Float64Array {
  if ((byteOffset >>> 0) !== byteOffset || byteOffset % 8 !== 0) {
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `telemetry byteOffset ${byteOffset} must be a non-negative multiple of 8`,
    );
  }
  if (byteOffset + TELEMETRY_BYTES > buffer.byteLength) {
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `telemetry block at ${byteOffset} needs ${TELEMETRY_BYTES} B, buffer has ${buffer.byteLength} B`,
    );
  }
  return new Float64Array(buffer, byteOffset, TELEMETRY_SLOTS);
}

function ratio(used: number, cap: number): number {
  if (!(cap > 0) || !(used > 0)) return 0;
  return used >= cap ? 1 : used / cap;
}

/** Reads and writes the telemetry block through a float64 view the session owns. */
export class Telemetry {
  readonly #counters: Float64Array;

  /**
   * Wraps `view` (≥ {@link TELEMETRY_SLOTS} float64s: the server's control page at the block
   * offset, or the client's copy of it). Does not write anything: the server calls `reset()` once
   * when it lays out the page. Throws `VerbusError` `INVALID_ARGUMENT` for a short view.
   */
  constructor(view: Float64Array) {
    if (!(view instanceof Float64Array) || view.length < TELEMETRY_SLOTS) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `Telemetry needs a Float64Array of at least ${TELEMETRY_SLOTS} slots`,
      );
    }
    this.#counters = view;
  }

  /** Server, at setup: zeroes the block and writes the layout version. */
  reset(): void {
    this.#counters.fill(0, 0, TELEMETRY_SLOTS);
    this.#counters[TELEMETRY.VERSION] = TELEMETRY_VERSION;
  }

  /** Adds `by` to slot `idx` (a {@link TELEMETRY} index). */
  inc(idx: number, by = 1): void {
    this.#counters[idx] += by;
  }

  /** Sets slot `idx` to `v`. */
  set(idx: number, v: number): void {
    this.#counters[idx] = v;
  }

  /** Slot `idx`. */
  get(idx: number): number {
    return this.#counters[idx];
  }

  /**
   * Folds a latency sample (µs) into the EWMA of path `pathIdx` ({@link TELEMETRY_PATH}, 0..3):
   * the first sample sets the average, later ones move it by `alpha` (0 < alpha ≤ 1) of the
   * difference. Returns the new average, or -1 (nothing written) for a bad path index, sample or
   * alpha.
   */
  ewma(pathIdx: number, sampleUs: number, alpha = 0.1): number {
    if ((pathIdx >>> 0) !== pathIdx || pathIdx > 3) return -1;
    if (!(sampleUs >= 0 && sampleUs < Infinity) || !(alpha > 0 && alpha <= 1)) return -1;
    const v = this.#counters,
      li = TELEMETRY.LAT_BASE + pathIdx,
      ni = TELEMETRY.LAT_N_BASE + pathIdx;
    const avg = v[ni] === 0 ? sampleUs : v[li] + alpha * (sampleUs - v[li]);
    v[li] = avg;
    v[ni] += 1;
    return avg;
  }

  /** Request-ring occupancy 0..1 (used / capacity; 1.0 while ring pressure is simulated). */
  ringOccupancy(): number {
    const v = this.#counters;
    if ((v[TELEMETRY.PRESSURE_FLAGS] & PRESSURE_RING) !== 0) return 1;
    return ratio(v[TELEMETRY.RING_USED], v[TELEMETRY.RING_CAPACITY]);
  }

  /** Object-pool usage 0..1 (used / capacity slabs; 1.0 while pool pressure is simulated). */
  objectPoolUsage(): number {
    const v = this.#counters;
    if ((v[TELEMETRY.PRESSURE_FLAGS] & PRESSURE_OBJPOOL) !== 0) return 1;
    return ratio(v[TELEMETRY.OBJPOOL_USED], v[TELEMETRY.OBJPOOL_CAPACITY]);
  }

  /** A plain copy of the block (allocates: stats / CLI, not per call). */
  snapshot(): TelemetrySnapshot {
    const v = this.#counters, T = TELEMETRY, flags = v[T.PRESSURE_FLAGS];
    const perPath = (base: number): Record<CallPath, number> => ({
      EAGER: v[base],
      LAZY: v[base + 1],
      BULK: v[base + 2],
      TCP_FALLBACK: v[base + 3],
    });
    return {
      version: v[T.VERSION],
      ringUsed: v[T.RING_USED],
      ringCapacity: v[T.RING_CAPACITY],
      ringOccupancy: this.ringOccupancy(),
      objectPoolUsed: v[T.OBJPOOL_USED],
      objectPoolCapacity: v[T.OBJPOOL_CAPACITY],
      objectPoolUsage: this.objectPoolUsage(),
      fabricUp: v[T.FABRIC_UP] !== 0,
      tcpUp: v[T.TCP_UP] !== 0,
      pressure: {
        ring: (flags & PRESSURE_RING) !== 0,
        objectPool: (flags & PRESSURE_OBJPOOL) !== 0,
      },
      completed: v[T.COMPLETED],
      failed: v[T.FAILED],
      fallback: v[T.FALLBACK],
      errors: v[T.ERRORS],
      latencyUs: perPath(T.LAT_BASE),
      latencySamples: perPath(T.LAT_N_BASE),
      objAllocs: v[T.OBJ_ALLOCS],
      objReclaims: v[T.OBJ_RECLAIMS],
      objTtlReclaims: v[T.OBJ_TTL_RECLAIMS],
      objStaleRefs: v[T.OBJ_STALE_REFS],
      objBadRefs: v[T.OBJ_BAD_REFS],
      bulkSgRequests: v[T.BULK_SG_REQUESTS],
      bulkSgEntries: v[T.BULK_SG_ENTRIES],
      bulkSgBytes: v[T.BULK_SG_BYTES],
    };
  }
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)} %`;
}

/**
 * `snapshot` as a few aligned lines for a person (`verbus call --stats`). `title` names whose
 * telemetry it is. Allocates.
 */
export function formatTelemetry(s: TelemetrySnapshot, title = "server telemetry"): string {
  const up = (b: boolean) => (b ? "up" : "down");
  const sim = (b: boolean) => (b ? "  [simulated pressure]" : "");
  const lat = (p: CallPath) =>
    s.latencySamples[p] > 0
      ? `${p} ${s.latencyUs[p].toFixed(1)} µs (n=${s.latencySamples[p]})`
      : `${p} –`;
  const lines = [
    `${title}${s.version === 0 ? " (uninitialised block)" : ` (layout v${s.version})`}`,
    `  fabric        ${up(s.fabricUp)}    tcp ${up(s.tcpUp)}`,
    `  request ring  ${s.ringUsed} / ${s.ringCapacity} slots (${pct(s.ringOccupancy)})${
      sim(s.pressure.ring)
    }`,
    `  object pool   ${s.objectPoolUsed} / ${s.objectPoolCapacity} slabs (${
      pct(s.objectPoolUsage)
    })${sim(s.pressure.objectPool)}`,
    `  calls         completed ${s.completed}  failed ${s.failed}  fallback ${s.fallback}  errors ${s.errors}`,
    `  server time   receive→answer, EWMA of 1 call in ${LATENCY_SAMPLE_EVERY}: ${lat("EAGER")}  ${
      lat("LAZY")
    }  ${lat("BULK")}`,
    `  objects       allocs ${s.objAllocs}  reclaims ${s.objReclaims}  ttl ${s.objTtlReclaims}  stale ${s.objStaleRefs}  bad ${s.objBadRefs}`,
    `  bulk SG       requests ${s.bulkSgRequests}  entries ${s.bulkSgEntries}  bytes ${s.bulkSgBytes}`,
  ];
  return lines.join("\n");
}
