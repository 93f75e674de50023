/**
 * The fabric interface: the small contract every fast fabric (shared memory, RDMA verbs, URMA)
 * implements so that `rpc/` never knows which one carries a session (eRPC's model: a short
 * transport interface of batch-friendly calls; setup and data path in separate files).
 *
 * A connected {@link FabricEndpoint} owns a local registered region (`local`) that the peer may
 * write into and read from, and can reach the peer's region by offset (`remoteSize` bounds it).
 * Data-path calls post work and return a status number — {@link OK}, {@link FULL} (no room now:
 * poll and retry) or {@link FAILED} (the fabric is unusable for this session) — never throw, and
 * allocate nothing. Completions of signaled work are reaped with `poll()` into a caller-owned
 * {@link Completions} buffer, in posting order. Small writes (`write`/`writeSg`/`writeU32`) to
 * the same peer are applied in posting order, so a writer publishes a record by writing its body
 * and then, separately, its state word. A fabric with a write log (verbs: transport/write_log.ts)
 * may apply a large write before earlier small ones of the same flush; nothing may rely on a large
 * write being visible before a small one posted after it — publish with a small write.
 *
 * Threading: an endpoint belongs to the JS thread that created it; `waitInbound` is the only
 * call that blocks, and it does so off-thread (nonblocking FFI on Deno, a Worker on Bun).
 * @module
 */

import type { ReadinessToken } from "./readiness.ts";
import type { AnyFabricKind } from "./fabric_kinds.ts";

/** Posted. */
export const OK = 0;
/** No room to post now (send queue full): reap completions and retry. */
export const FULL = -1;
/** The fabric failed for this session: move the call to TCP. */
export const FAILED = -2;

/** Completion records, reused across polls. Owned by the caller of `poll()`. */
export class Completions {
  /** wr_id of each completion (caller-chosen numbers < 2^53). */
  readonly wrId: Float64Array;
  /** 0 = success; otherwise a fabric status (see `FabricEndpoint.statusText`). */
  readonly status: Int32Array;

  constructor(readonly capacity: number) {
    this.wrId = new Float64Array(capacity);
    this.status = new Int32Array(capacity);
  }
}

/** Flags of a post: report its completion through poll(). */
export const SIGNALED = 1;

/**
 * The wr_ids callers may use: [0, {@link MAX_CALLER_WR_ID}]. Everything above is reserved for
 * the fabrics' own work requests, listed here and nowhere else.
 */
export const MAX_CALLER_WR_ID = 2 ** 53 - 17;
/** Reserved wr_ids (never reported to a caller's `poll()`). */
export const RESERVED_WR_ID = {
  /** Internal signaled work (credit returns, bounce-ring releases). */
  internal: 2 ** 53 - 3,
  /** A handshake proof. */
  proof: 2 ** 53 - 2,
} as const;

/** A connected fabric endpoint of one session. */
export interface FabricEndpoint {
  /** Which fabric this is (a registered kind, or a fabric given beside them). */
  readonly kind: AnyFabricKind;
  /** True when the fabric is a simulation (say so wherever results are reported). */
  readonly simulated: boolean;
  /** My registered region: the peer writes into / reads from it. Owned by the endpoint. */
  readonly local: Uint8Array;
  /** Size of the peer's region; every remote offset is checked against it. */
  readonly remoteSize: number;
  /** True once the fabric failed for this session (every post then returns FAILED). */
  readonly failed: boolean;
  /** Why it failed (a completion status name, a peer violation…), or null. */
  readonly failureReason?: string | null;
  /**
   * Where the peer announces work for this endpoint (transport/readiness.ts). Undefined for a
   * fabric without a readiness source: the engine polls such an endpoint every turn.
   */
  readonly readiness?: ReadinessToken;

  /**
   * True when {@link write} copies straight from any memory into the peer's (shm: a memcpy into its
   * mapping): a BULK request is then written from the caller's bytes in one copy, not gathered in
   * staging first. Optional; absent = false (BULK goes through staging and {@link writeSg}).
   */
  readonly writesFromAnyMemory?: boolean;
  /** One-sided write of `src` (any bytes; copied or inlined as the fabric needs) to the peer at `remoteOff`. */
  write(wrId: number, remoteOff: number, src: Uint8Array, flags: number): number;
  /**
   * One-sided scatter-gather write: the `count` views in `sg` (each a view of `local`) are
   * gathered, in order, into the peer's region starting at `remoteOff`.
   */
  writeSg(
    wrId: number,
    remoteOff: number,
    sg: readonly Uint8Array[],
    count: number,
    flags: number,
  ): number;
  /** One-sided write of one u32 (little-endian), ordered after every earlier write: publication. */
  writeU32(wrId: number, remoteOff: number, value: number, flags: number): number;
  /** One-sided read of `dst.length` bytes from the peer at `remoteOff` into `dst` (a view of `local`). */
  read(wrId: number, dst: Uint8Array, remoteOff: number, flags: number): number;
  /** Rings the doorbell for everything posted since the last flush (one for a batch). */
  flush(): void;
  /** Reaps up to `out.capacity` completions into `out`; returns the count. */
  poll(out: Completions): number;
  /** Human text of a completion status. */
  statusText(status: number): string;

  /** My doorbell word's current value (pass it to waitInbound). */
  doorbell(): number;
  /** Tells the peer new work was published (wakes it if it sleeps). */
  kick(): void;
  /**
   * Sleeps until the peer kicks (or `timeoutMs`), unless my doorbell already moved past
   * `seen`. The only blocking call; runs off the JS thread. Resolves true when kicked.
   */
  waitInbound(seen: number, timeoutMs: number): Promise<boolean>;
  /**
   * True when the peer is asleep in its idle wait (a kick must wake it before it can answer):
   * the spin policy does not busy-poll for a sleeper. Optional; absent = unknown (never asleep).
   */
  peerSleeping?(): boolean;

  /** Fails the endpoint (a detected peer violation, or the session closing it). */
  fail(reason: string): void;
  /** The faults port (tests and demos only; see transport/faults.ts). */
  readonly faults: FabricFaults;
  /** Releases the region and every native resource. Safe twice. */
  close(): void;
}

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

/** Fault injection of one endpoint (transport/faults.ts: the port, and a wrapper for any fabric). */
export interface FabricFaults {
  /** The kinds this fabric can inject. */
  readonly supported: readonly FaultKind[];
  /** Injects `kind` (throws INVALID_ARGUMENT when not supported). `reason` labels `fail`. */
  inject(kind: FaultKind, reason?: string): void;
}
