/**
 * A client's local counters (`Client.stats()`) and their human-readable form.
 * @module
 */
import { formatTelemetry, type TelemetrySnapshot } from "./region/telemetry.ts";
import type { CallPath } from "./selector.ts";
import type { ClientSession } from "./session/client_session.ts";
import type { FabricOutcome } from "./session/client_handshake.ts";

/** Local counters of a client (`stats()`). */
export interface ClientStats {
  fabric: string;
  handshake: FabricOutcome["summary"];
  calls: Record<CallPath, number>;
  fallbacks: number;
  errors: number;
  latencyUs: Record<CallPath, number>;
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
    `latency µs   ${PATHS.map((p) => `${p} ${st.latencyUs[p]}`).join(", ")}`,
  ];
  if (st.server) lines.push(formatTelemetry(st.server, "server control page (snapshot)"));
  return lines.join("\n");
}
