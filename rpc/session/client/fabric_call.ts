/**
 * One call on a fabric session, client side: what it settles with ({@link FabricResult}), the
 * hooks through which the session tells its owner what became of calls ({@link CallHooks}), and
 * the one allocation a call makes — its promise ({@link newCallPromise}). Everything else a call
 * needs lives in its slot's preallocated record (`client_slots.ts`).
 *
 * Ownership and threading: created by the session on its JS thread; the result's byte arrays are
 * fresh copies the caller owns.
 * @module
 */
import type { ClientCallOptions, ClientCallResult } from "../../client/client_options.ts";
import type { CallPath } from "../../client/selector.ts";

/** The outcome of a fabric call (the public result shape). The byte arrays are copies: the caller owns them. */
export type FabricResult = ClientCallResult;

/**
 * What the session reports to its owner (the {@link Client}), per call, without a closure per
 * call. Set once with `ClientSession.hooks`; every method runs on the session's thread.
 */
export interface CallHooks {
  /** Label of the fabric, put into every result's `fabric`. */
  readonly fabricLabel: string;
  /** A call completed on `path`; `startedAt` is its `performance.now()` at submit, or 0 (not sampled). */
  completed(path: CallPath, startedAt: number): void;
  /** A call failed with a fabric error (counted against the session's error budget). */
  fabricError(): void;
  /**
   * Redo the call over TCP: the server never took it (the session ended before it did, and its
   * notice lists the call as untaken), so it never ran. Never for a call the server took.
   * Returns the promise of the TCP call; the fabric call's promise follows it.
   */
  redoOverTcp(
    service: string,
    method: string,
    request: Uint8Array,
    options: ClientCallOptions,
  ): Promise<ClientCallResult>;
}

/** Hooks that count nothing and redo no call over TCP (a session without an owner). */
export const NO_HOOKS: CallHooks = {
  fabricLabel: "fabric",
  completed() {},
  fabricError() {},
  redoOverTcp: () => Promise.reject(new Error("no TCP channel to redo the call on")),
};

/**
 * Where a call's answer goes instead of a promise (`ClientSession.submitTo`): one object for many
 * calls (the agent's table of its producers' slots), each call named by its `tag`. Called on the
 * session's thread, from `progress()` (or from a TCP redo's settlement); nothing per call is
 * allocated for it.
 */
export interface AnswerSink {
  /**
   * Call `tag` was answered: the response is `src[off, off + len)` and its attachment the `att`
   * bytes after it — the session's own memory, valid only during this call (copy what is kept).
   */
  answer(tag: number, src: Uint8Array, off: number, len: number, att: number, path: CallPath): void;
  /** Call `tag` was answered by a result (a call redone over TCP: the session never took it). */
  result(tag: number, r: ClientCallResult): void;
  /** Call `tag` failed (what its promise would have rejected with). */
  fail(tag: number, error: unknown): void;
}

/** Where a call's promise keeps its settle functions (a slot's record). */
export interface CallSettlers {
  resolve: ((r: ClientCallResult | Promise<ClientCallResult>) => void) | null;
  reject: ((e: unknown) => void) | null;
}

/** The record {@link executor} fills: set only while `newCallPromise` runs `new Promise`. */
let filling: CallSettlers | null = null;

function executor(
  resolve: (r: ClientCallResult | Promise<ClientCallResult>) => void,
  reject: (e: unknown) => void,
): void {
  filling!.resolve = resolve;
  filling!.reject = reject;
}

/**
 * A call's promise (the one allocation per call beyond its result), through one shared executor
 * (no closure per call), its settle functions stored in `into` (the call's slot record).
 */
export function newCallPromise(into: CallSettlers): Promise<ClientCallResult> {
  filling = into;
  const promise = new Promise<ClientCallResult>(executor);
  filling = null;
  return promise;
}

/** Counters of a client session (`ClientSession.stats`; updated in place, copy to snapshot). */
export interface ClientSessionStats {
  /** Calls posted. */
  submitted: number;
  /** Of those, calls posted without a promise, their answers handed to a sink (`submitTo`). */
  sunk: number;
  /** Doorbells rung for requests (a batch of calls submitted together rings one). */
  doorbells: number;
  /** BULK requests written straight from the caller's bytes, not gathered in staging (shm). */
  bulkDirect: number;
  /** Calls answered (every answer the session settled a call with). */
  completed: number;
  /** progress() rounds that completed at least one call (completed ÷ this = answers per batch). */
  completionBatches: number;
  /** LAZY objects read one-sided. */
  lazyReads: number;
  /** LAZY reads that had to wait for staging room (posted later, in order; never redone over TCP). */
  lazyWaits: number;
  /** RECLAIM batches posted. */
  reclaimsSent: number;
  /** LAZY reads that found the object changed (stale generation). */
  staleObjects: number;
}
