/**
 * The object side of a server session's control page: the telemetry it starts with, and the
 * RECLAIM batches a client sends (a list of `(object id, generation)` u32 LE pairs), each counted
 * by outcome. Threading: the server's JS thread; allocates one DataView per batch.
 * @module
 */
import { CONTROL, type RegionLayout } from "../../region/layout.ts";
import type { ObjectPool } from "../../region/object_pool.ts";
import {
  PRESSURE_OBJPOOL,
  PRESSURE_RING,
  TELEMETRY,
  Telemetry,
  telemetryView,
} from "../../region/telemetry.ts";

/**
 * The telemetry of the server region `local` laid out as `server`, reset and stamped with its
 * capacities (and simulated `pressure` flags, fault injection).
 */
export function sessionTelemetry(
  local: Uint8Array,
  server: RegionLayout,
  pressure: "ring" | "objpool" | undefined,
): Telemetry {
  const t = new Telemetry(
    telemetryView(local.buffer, local.byteOffset + server.control.offset + CONTROL.telemetry),
  );
  t.reset();
  t.set(TELEMETRY.RING_CAPACITY, server.config.slots);
  t.set(TELEMETRY.OBJPOOL_CAPACITY, server.config.objectSlabs);
  t.set(TELEMETRY.FABRIC_UP, 1);
  t.set(TELEMETRY.TCP_UP, 1);
  if (pressure) {
    t.set(TELEMETRY.PRESSURE_FLAGS, pressure === "ring" ? PRESSURE_RING : PRESSURE_OBJPOOL);
  }
  return t;
}

/**
 * Frees the objects a RECLAIM `payload` names (stale, repeated or bad references are harmless and
 * only counted). Returns null, or why the payload is malformed (nothing was freed then).
 */
export function applyReclaims(
  pool: ObjectPool,
  telemetry: Telemetry,
  payload: Uint8Array,
): string | null {
  if (payload.length % 8 !== 0) {
    return `RECLAIM payload of ${payload.length} bytes is not a list of 8-byte references`;
  }
  const dv = new DataView(payload.buffer, payload.byteOffset, payload.length);
  for (let o = 0; o < payload.length; o += 8) {
    const res = pool.reclaim(dv.getUint32(o, true), dv.getUint32(o + 4, true));
    if (res === "ok") telemetry.inc(TELEMETRY.OBJ_RECLAIMS);
    else if (res === "bad-id") telemetry.inc(TELEMETRY.OBJ_BAD_REFS);
    else telemetry.inc(TELEMETRY.OBJ_STALE_REFS);
  }
  telemetry.set(TELEMETRY.OBJPOOL_USED, pool.usedSlabs);
  return null;
}
