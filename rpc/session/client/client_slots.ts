/**
 * The client's slot table. Request slot i of the server's ring and response slot i of the
 * client's ring belong together; the client owns the slot from `take` until `release`. A slot is
 * FREE, carries a CALL, or carries a RECLAIM batch. Each `take` bumps the slot's `seq`, which the
 * request carries and the response must echo. A slot returns to FREE only after its result was
 * consumed and every completion for it was reaped; its BULK and staging extents go back then.
 *
 * Free slots are a stack (the most recently freed slot is reused first, so the slots in use stay
 * low and the server's scan stays short); busy slots are a dense list for the progress scan.
 *
 * A slot's record is also its call's record (the caller's promise's settle functions — or the
 * sink and tag of a call submitted without a promise —, path, deadline, and what a TCP redo
 * needs), so a call allocates nothing here: the table settles it
 * ({@link SlotTable.resolve} builds the result, {@link SlotTable.reject} the error path) and
 * reports to the session's {@link CallHooks}.
 *
 * Ownership and threading: one table per client session, on its JS thread. A slot's record is
 * made the first time the slot is used, then kept (the free stack reuses the most recently freed
 * slot, so a session makes as many records as it ever had calls in flight: an idle session among
 * 10,000 keeps one, not `count`); after that `take`, `release` and the accessors
 * allocate nothing.
 * @module
 */
import { VerbusError } from "../../../errors.ts";
import type { MetaBlock } from "../meta_block.ts";
import type { ClientCallOptions, ClientCallResult } from "../../client/client_options.ts";
import type { BulkAllocator } from "../../region/bulk_allocator.ts";
import type { CallPath } from "../../client/selector.ts";
import { type AnswerSink, type CallHooks, NO_HOOKS } from "./fabric_call.ts";
import type { StagingArea } from "./staging_area.ts";

const EMPTY = new Uint8Array(0);
const NO_OPTIONS: ClientCallOptions = Object.freeze({});

/** What a slot is doing. */
export type SlotState = typeof SLOT_FREE | typeof SLOT_CALL | typeof SLOT_RECLAIM;
/** Not in use. */
export const SLOT_FREE = 0;
/** Carries a caller's request (its `call` is null once the caller gave up on it). */
export const SLOT_CALL = 1;
/** Carries a batch of RECLAIMs (no caller waits for it). */
export const SLOT_RECLAIM = 2;
/** `take()` found no free slot. */
export const NO_FREE_SLOT = -1;

/** One slot's bookkeeping (named fields; the record is reused for every use of the slot). */
export interface ClientSlot {
  state: SlotState;
  /** Use count of the slot (u32, wraps): the request carries it, the response echoes it. */
  seq: number;
  /** A caller waits for this slot's answer (false for a RECLAIM batch, or once the caller gave up). */
  pending: boolean;
  /** The caller's promise's settle functions (null when no caller waits). */
  resolve: ((r: ClientCallResult | Promise<ClientCallResult>) => void) | null;
  reject: ((e: unknown) => void) | null;
  /** Where the answer goes instead of a promise (`submitTo`), and the call's tag there; null: none. */
  sink: AnswerSink | null;
  tag: number;
  /** The path the call was submitted on (BULK when its request went through the BULK area). */
  path: CallPath;
  /** `performance.now()` after which the call times out (Infinity = never). */
  deadline: number;
  /** The method index (named in a timeout message). */
  method: number;
  /** `performance.now()` at submit for a call whose latency is sampled, else 0. */
  startedAt: number;
  /** What a TCP redo of the call needs (see `reject`): the caller's own arguments. */
  service: string;
  methodName: string;
  request: Uint8Array;
  options: ClientCallOptions;
  /** Offset of this request's extent in the server's BULK area, or -1. */
  bulkOffset: number;
  /** Offset of this slot's staging extent (BULK source or LAZY read target), or -1. */
  stagingOffset: number;
  /** Bytes of the LAZY read in flight into the staging extent; 0 = no read posted. */
  lazyReadBytes: number;
  /** The LAZY reference being read: object id and generation. */
  object: number;
  generation: number;
  /** Offset of the referenced object in the server's region (what the read reads). */
  objectOffset: number;
  /** `performance.now()` when the LAZY read began waiting for staging room; 0 = it never waited. */
  waitedSince: number;
  /** Response and attachment bytes inside that object. */
  responseBytes: number;
  attachmentBytes: number;
  /** The answer's metadata block, decoded when its descriptor was read (LAZY: until the read ends). */
  answerMeta: MetaBlock | undefined;
}

/** A FREE slot's record, as a slot's first use finds it. */
function newSlot(): ClientSlot {
  return {
    state: SLOT_FREE,
    seq: 0,
    pending: false,
    resolve: null,
    reject: null,
    sink: null,
    tag: 0,
    path: "EAGER",
    deadline: Infinity,
    method: 0,
    startedAt: 0,
    service: "",
    methodName: "",
    request: EMPTY,
    options: NO_OPTIONS,
    bulkOffset: -1,
    stagingOffset: -1,
    lazyReadBytes: 0,
    object: 0,
    generation: 0,
    objectOffset: 0,
    waitedSince: 0,
    responseBytes: 0,
    attachmentBytes: 0,
    answerMeta: undefined,
  };
}

/** See the module documentation. */
export class SlotTable {
  /** The records made so far (holes: slots never used). */
  readonly #slots: (ClientSlot | undefined)[];
  readonly #count: number;
  #made = 0;
  readonly #free: Int32Array;
  #freeCount: number;
  readonly #busy: Int32Array;
  /** Per slot: its position in the busy list (O(1) release). */
  readonly #busyPos: Int32Array;
  #busyCount = 0;
  /** Where settled calls are reported (the session sets it). */
  hooks: CallHooks = NO_HOOKS;
  readonly #bulkArea: BulkAllocator;
  readonly #staging: StagingArea;

  /**
   * `count` slots, all FREE. `release` gives a slot's extents back to `bulkArea` (offsets in the
   * server's BULK area) and `staging`.
   */
  constructor(count: number, bulkArea: BulkAllocator, staging: StagingArea) {
    this.#slots = new Array(count);
    this.#count = count;
    this.#free = new Int32Array(count);
    for (let i = 0; i < count; i++) this.#free[i] = count - 1 - i;
    this.#freeCount = count;
    this.#busy = new Int32Array(count);
    this.#busyPos = new Int32Array(count);
    this.#bulkArea = bulkArea;
    this.#staging = staging;
  }

  /** Free slots right now. */
  get freeCount(): number {
    return this.#freeCount;
  }

  /** Slots in use (calls and RECLAIM batches). */
  get busyCount(): number {
    return this.#busyCount;
  }

  /** The slot index at position `k` (0 ≤ k < busyCount) of the busy list. */
  busyAt(k: number): number {
    return this.#busy[k];
  }

  /**
   * Slot `i`'s record (0 ≤ i < count; undefined past the end). A slot never used gets its FREE
   * record now (what a response naming it is checked against).
   */
  slot(i: number): ClientSlot {
    const s = this.#slots[i];
    if (s !== undefined || !(i >= 0 && i < this.#count)) return s!;
    this.#made++;
    return (this.#slots[i] = newSlot());
  }

  /** Slot records made so far (at most the most calls the session ever had in flight, or `count`). */
  get recordsMade(): number {
    return this.#made;
  }

  /**
   * Takes a free slot for `state` (CALL or RECLAIM) and bumps its seq; returns its index or
   * {@link NO_FREE_SLOT}. The caller sets the call fields and the extents.
   */
  take(state: typeof SLOT_CALL | typeof SLOT_RECLAIM): number {
    if (this.#freeCount === 0) return NO_FREE_SLOT;
    const i = this.#free[--this.#freeCount], slot = this.slot(i);
    slot.seq = (slot.seq + 1) >>> 0;
    slot.state = state;
    slot.pending = false;
    this.#busyPos[i] = this.#busyCount;
    this.#busy[this.#busyCount++] = i;
    return i;
  }

  /** Returns slot `i` to FREE with its extents (no-op when it is FREE already). */
  release(i: number): void {
    const slot = this.slot(i);
    if (slot.state === SLOT_FREE) return;
    slot.state = SLOT_FREE;
    this.#forget(slot);
    slot.lazyReadBytes = 0;
    if (slot.bulkOffset >= 0) this.#bulkArea.free(slot.bulkOffset);
    if (slot.stagingOffset >= 0) this.#staging.free(slot.stagingOffset);
    slot.bulkOffset = slot.stagingOffset = -1;
    const k = this.#busyPos[i], last = this.#busy[--this.#busyCount];
    this.#busy[k] = last;
    this.#busyPos[last] = k;
    this.#free[this.#freeCount++] = i;
  }

  /** Drops slot `slot`'s caller (its promise is settled elsewhere, or was). */
  #forget(slot: ClientSlot): void {
    slot.pending = false;
    slot.resolve = slot.reject = null;
    slot.sink = null;
    slot.request = EMPTY;
    slot.options = NO_OPTIONS;
    slot.answerMeta = undefined;
  }

  /**
   * Settles slot `i`'s call with its answer (the public result shape) and reports it to the
   * hooks; a slot whose caller gave up settles nothing. Call before `release`.
   */
  resolve(i: number, response: Uint8Array, attachment: Uint8Array, path: CallPath): void {
    const slot = this.slot(i);
    if (!slot.pending) return;
    const resolve = slot.resolve, hooks = this.hooks, meta = slot.answerMeta;
    const startedAt = slot.startedAt, sink = slot.sink, tag = slot.tag;
    this.#forget(slot);
    hooks.completed(path, startedAt);
    const r: ClientCallResult = { response, attachment, path, fabric: hooks.fabricLabel };
    if (meta !== undefined) { // the answer's headers and trailers (its metadata block)
      if (meta.userFields !== undefined) r.userFields = meta.userFields;
      if (meta.trailers !== undefined) r.trailers = meta.trailers;
    }
    if (sink === null) resolve!(r);
    else sink.result(tag, r);
  }

  /**
   * Hands slot `i`'s answer — `src[off, off + len)` and the `att` bytes after it — to the call's
   * sink without a copy (the sink copies it where it goes) and reports it to the hooks. False
   * when the call has no sink (the caller copies the answer out and {@link resolve}s instead).
   * Call before `release`.
   */
  toSink(
    i: number,
    src: Uint8Array,
    off: number,
    len: number,
    att: number,
    path: CallPath,
  ): boolean {
    const slot = this.slot(i), sink = slot.sink;
    if (sink === null) return false;
    if (!slot.pending) return true;
    const tag = slot.tag, startedAt = slot.startedAt;
    this.#forget(slot);
    this.hooks.completed(path, startedAt);
    sink.answer(tag, src, off, len, att, path);
    return true;
  }

  /**
   * Settles slot `i`'s call with `error`: FULL redoes the call over TCP through the hooks, and is
   * only for a call the server never took (the session ended before it did:
   * `client_session_end.ts`); a call the server took may have run, so every answer, error or
   * failure after that rejects (at most once). FABRIC is counted as a fabric error. Call before
   * `release`.
   */
  reject(i: number, error: unknown): void {
    const slot = this.slot(i);
    if (!slot.pending) return;
    const resolve = slot.resolve, reject = slot.reject, hooks = this.hooks;
    const { service, methodName, request, options, sink, tag } = slot;
    this.#forget(slot);
    if (error instanceof VerbusError && error.code === "FULL") {
      const redo = hooks.redoOverTcp(service, methodName, request, options);
      if (sink === null) resolve!(redo);
      else redo.then((r) => sink.result(tag, r), (e) => sink.fail(tag, e));
      return;
    }
    if (error instanceof VerbusError && error.code === "FABRIC") hooks.fabricError();
    if (sink === null) reject!(error);
    else sink.fail(tag, error);
  }

  /** The caller of slot `i` gave up (timeout): rejects it with `error`; the slot stays busy. */
  abandon(i: number, error: unknown): void {
    const slot = this.slot(i);
    if (!slot.pending) return;
    const reject = slot.reject, sink = slot.sink, tag = slot.tag;
    this.#forget(slot);
    if (sink === null) reject!(error);
    else sink.fail(tag, error);
  }

  /** Rejects every caller still waiting with `error()`; their slots stay busy. */
  rejectAll(error: () => unknown): void {
    for (let k = this.#busyCount - 1; k >= 0; k--) {
      const i = this.#busy[k];
      if (this.slot(i).pending) this.reject(i, error());
    }
  }
}
