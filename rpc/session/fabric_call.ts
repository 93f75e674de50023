/**
 * One call on a fabric session, client side: what `ClientSession.submit` hands back
 * ({@link PendingCall}), what it settles with ({@link FabricResult}), and the record the session
 * keeps per call in flight ({@link InflightCall}).
 *
 * Ownership and threading: created by the session on its JS thread, one per submitted call; the
 * result's byte arrays are fresh copies the caller owns.
 * @module
 */
import type { CallPath } from "../selector.ts";

/** The outcome of a fabric call. The byte arrays are copies: the caller owns them. */
export interface FabricResult {
  response: Uint8Array;
  attachment: Uint8Array;
  /** The path the call really took (EAGER, LAZY or BULK). */
  path: CallPath;
}

/** A call in flight on the fabric, as its caller sees it. */
export interface PendingCall {
  /** Settles once the answer was consumed (or the call failed, timed out, or the session ended). */
  readonly promise: Promise<FabricResult>;
}

/** The session's record of a call in flight (one per submitted call; the slot points at it). */
export interface InflightCall extends PendingCall {
  resolve(result: FabricResult): void;
  reject(error: unknown): void;
  /** The path the call was submitted on (BULK when its request went through the BULK area). */
  readonly path: CallPath;
  /** `performance.now()` after which the call times out (Infinity = never). */
  readonly deadline: number;
  /** The method index (named in a timeout message). */
  readonly method: number;
}

/** Creates the record of a new call (allocates its promise: one per call). */
export function newInflightCall(path: CallPath, deadline: number, method: number): InflightCall {
  let resolve!: (r: FabricResult) => void, reject!: (e: unknown) => void;
  const promise = new Promise<FabricResult>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject, path, deadline, method };
}

/** Counters of a client session (`ClientSession.stats`; updated in place, copy to snapshot). */
export interface ClientSessionStats {
  /** Calls posted. */
  submitted: number;
  /** Doorbells rung for requests (a batch of calls submitted together rings one). */
  doorbells: number;
  /** Reserved; not counted (kept for the stats shape). */
  completed: number;
  /** LAZY objects read one-sided. */
  lazyReads: number;
  /** RECLAIM batches posted. */
  reclaimsSent: number;
  /** LAZY reads that found the object changed (stale generation). */
  staleObjects: number;
}
