/**
 * Readiness: how a fabric tells the process's progress engine WHICH endpoints have inbound work,
 * so the engine polls only those and parks one wait for the whole process, whatever the number
 * of sessions (FaRM/HERD poll a ring per peer — O(peers); eRPC and later designs announce work
 * so that finding it costs O(active)).
 *
 * A fabric that has a source gives each endpoint a token in it (`FabricEndpoint.readiness`);
 * a peer's `kick()` announces the token on the source of the peer's process. A fabric without a
 * source leaves `readiness` undefined: the engine then polls that endpoint every turn and parks
 * its `waitInbound` while idle.
 *
 * Threading: one JS thread (the engine's); `wait` blocks off-thread.
 * @module
 */
import type { AnyFabricKind } from "./fabric_kinds.ts";

/** The announcements of one fabric in one process. */
export interface ReadinessSource {
  /** The fabric. */
  readonly kind: AnyFabricKind;
  /** Most tokens this source can hand out (size `collect`'s buffer to it). */
  readonly capacity: number;
  /**
   * Moves the tokens announced since the last call into `out` (from index 0) and clears them;
   * returns how many. `out.length` must be at least {@link capacity}. Data path: allocates
   * nothing. An announcement that races with collect is seen now or by the next call, never lost.
   */
  collect(out: Uint32Array): number;
  /** The source's doorbell (pass it to `wait`). */
  doorbell(): number;
  /**
   * Sleeps off the JS thread until a peer announces (the doorbell moves past `seen`) or
   * `timeoutMs` passes; resolves true when woken. Peers see that it sleeps and wake it.
   */
  wait(seen: number, timeoutMs: number): Promise<boolean>;
  /** Wakes this process's `wait` (local work arrived). */
  wake(): void;
  /**
   * Blocks THIS thread for at most `timeoutUs` µs until a peer announces (the doorbell moves past
   * `seen`); true when it moved or the nap was woken, false when it timed out. A short nap between
   * batches instead of a busy-poll: peers see the napper and wake it (one futex wake, and only the
   * first announcer pays it). Optional: a source without it is busy-polled. The owner's JS thread;
   * the thread's event loop does not run meanwhile (keep `timeoutUs` short).
   */
  nap?(seen: number, timeoutUs: number): boolean;
}

/** An endpoint's place in its process's readiness source. */
export interface ReadinessToken {
  readonly source: ReadinessSource;
  /** What peers announce for this endpoint. */
  readonly token: number;
}
