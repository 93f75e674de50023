/**
 * The faults port: the one door through which tests and demos break a fabric on purpose. Data
 * path and handshake code never call it; an endpoint exposes it as `endpoint.faults`, and a
 * fabric that cannot inject a kind says so in `supported` (inject then throws INVALID_ARGUMENT).
 * One JS thread (the endpoint's).
 * @module
 */

/**
 * What can be broken:
 * - `bad-remote-key`: later one-sided operations carry a wrong remote key / token, so the peer's
 *   NIC (or the simulator) rejects them with a remote access error;
 * - `out-of-bounds`: later one-sided operations target addresses past the peer's region;
 * - `fail`: the endpoint fails at once, as if the fabric had reported an error;
 * - `fail-next-write`: the next one-sided write (`write` / `writeSg`) is refused with FAILED
 *   without being posted, as a local post failure of one operation (the endpoint stays up).
 */
export type FaultKind = "bad-remote-key" | "out-of-bounds" | "fail" | "fail-next-write";

/** Fault injection of one endpoint. */
export interface FabricFaults {
  /** The kinds this fabric can inject. */
  readonly supported: readonly FaultKind[];
  /** Injects `kind` (throws INVALID_ARGUMENT when not supported). `reason` labels `fail`. */
  inject(kind: FaultKind, reason?: string): void;
}
