/**
 * A client's local counters (`Client.stats()`) and their human-readable form.
 * @module
 */
import {
  formatTelemetry,
  LATENCY_SAMPLE_EVERY,
  type TelemetrySnapshot,
} from "../region/telemetry.ts";
import type { CallPath } from "./selector.ts";
import type { ClientSession } from "../session/client/client_session.ts";
import type { FabricOutcome } from "../session/handshake/client_handshake.ts";

/** Local counters of a client (`stats()`). */
export interface ClientStats {
  fabric: string;
  handshake: FabricOutcome["summary"];
  calls: Record<CallPath, number>;
  fallbacks: number;
  errors: number;
  /**
   * Latency EWMA per path, µs, submit → result, over the calls measured: 1 fabric call in
   * {@link LATENCY_SAMPLE_EVERY} (the first included), every TCP call. 0 before the first.
   */
  latencyUs: Record<CallPath, number>;
  /** How many calls each path's EWMA has measured (`n`). */
  latencySamples: Record<CallPath, number>;
  session: ClientSession["stats"] | null;
  server: TelemetrySnapshot | null;
}

/** The paths, in the order stats show them. */
export const PATHS: CallPath[] = ["EAGER", "LAZY", "BULK", "TCP_FALLBACK"];

/** Human-readable stats of a client. */
export function formatClientStats(st: ClientStats): string {
  const lines = [
    `fabric       ${st.fabric} (${st.handshake.state}${
      st.handshake.reason ? `: ${st.handshake.reason}` : ""
    })`,
    `calls        ${PATHS.map((p) => `${p} ${st.calls[p]}`).join(", ")}`,
    `fallbacks    ${st.fallbacks}    errors ${st.errors}`,
    `latency      EWMA, submit→result, of 1 fabric call in ${LATENCY_SAMPLE_EVERY} and every TCP call: ${
      PATHS.map((p) =>
        st.latencySamples[p] ? `${p} ${st.latencyUs[p]} µs (n=${st.latencySamples[p]})` : `${p} –`
      ).join(", ")
    }`,
  ];
  if (st.server) lines.push(formatTelemetry(st.server, "server control page (snapshot)"));
  return lines.join("\n");
}
