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

/**
 * A client's calls per path, its fallbacks and each path's latency EWMA (the counting half of
 * {@link ClientStats}). Threading: the client's JS thread.
 */
export class PathCounters {
  /** Calls completed per path. */
  readonly calls: Record<CallPath, number> = { EAGER: 0, LAZY: 0, BULK: 0, TCP_FALLBACK: 0 };
  /** Calls sent over TCP in place of the fabric (the selector's or a failed post's fallback). */
  fallbacks = 0;
  readonly #latencyUs: Record<CallPath, number> = { EAGER: 0, LAZY: 0, BULK: 0, TCP_FALLBACK: 0 };
  /** Calls measured into each path's EWMA. */
  readonly #latencyN: Record<CallPath, number> = { EAGER: 0, LAZY: 0, BULK: 0, TCP_FALLBACK: 0 };

  /** A call on `path` completed; `startedAt` (`performance.now()`, 0: not measured) its start. */
  completed(path: CallPath, startedAt: number): void {
    this.calls[path]++;
    if (startedAt > 0) this.fold(path, (performance.now() - startedAt) * 1000);
  }

  /** Folds a latency of `us` microseconds into `path`'s EWMA. */
  fold(path: CallPath, us: number): void {
    this.#latencyUs[path] = this.#latencyN[path]++ === 0
      ? us
      : this.#latencyUs[path] * 0.9 + us * 0.1;
  }

  /** Copies of the counts and the EWMAs (rounded to 0.1 µs), for {@link ClientStats}. */
  snapshot(): Pick<ClientStats, "calls" | "fallbacks" | "latencyUs" | "latencySamples"> {
    return {
      calls: { ...this.calls },
      fallbacks: this.fallbacks,
      latencyUs: Object.fromEntries(
        PATHS.map((p) => [p, Math.round(this.#latencyUs[p] * 10) / 10]),
      ) as Record<CallPath, number>,
      latencySamples: { ...this.#latencyN },
    };
  }
}

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
