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
 * Ownership and threading: one table per client session, on its JS thread. Everything here is
 * preallocated at construction; `take`, `release` and the accessors allocate nothing.
 * @module
 */
import type { BulkAllocator } from "../region/bulk_allocator.ts";
import type { InflightCall } from "./fabric_call.ts";
import type { StagingArea } from "./staging_area.ts";

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
  /** The caller's call, or null for a RECLAIM batch or a call whose caller gave up. */
  call: InflightCall | null;
  /** Offset of this request's extent in the server's BULK area, or -1. */
  bulkOffset: number;
  /** Offset of this slot's staging extent (BULK source or LAZY read target), or -1. */
  stagingOffset: number;
  /** Bytes of the LAZY read in flight into the staging extent; 0 = no read posted. */
  lazyReadBytes: number;
  /** The LAZY reference being read: object id and generation. */
  object: number;
  generation: number;
  /** Response and attachment bytes inside that object. */
  responseBytes: number;
  attachmentBytes: number;
}

/** See the module documentation. */
export class SlotTable {
  readonly #slots: ClientSlot[];
  readonly #free: Int32Array;
  #freeCount: number;
  readonly #busy: Int32Array;
  #busyCount = 0;
  readonly #bulkArea: BulkAllocator;
  readonly #staging: StagingArea;

  /**
   * `count` slots, all FREE. `release` gives a slot's extents back to `bulkArea` (offsets in the
   * server's BULK area) and `staging`.
   */
  constructor(count: number, bulkArea: BulkAllocator, staging: StagingArea) {
    this.#slots = Array.from({ length: count }, () => ({
      state: SLOT_FREE,
      seq: 0,
      call: null,
      bulkOffset: -1,
      stagingOffset: -1,
      lazyReadBytes: 0,
      object: 0,
      generation: 0,
      responseBytes: 0,
      attachmentBytes: 0,
    }));
    this.#free = new Int32Array(count);
    for (let i = 0; i < count; i++) this.#free[i] = count - 1 - i;
    this.#freeCount = count;
    this.#busy = new Int32Array(count);
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

  /** Slot `i`'s record (0 ≤ i < count; undefined past the end). */
  slot(i: number): ClientSlot {
    return this.#slots[i];
  }

  /**
   * Takes a free slot for `state` (CALL or RECLAIM) and bumps its seq; returns its index or
   * {@link NO_FREE_SLOT}. The caller sets `call` and the extents.
   */
  take(state: typeof SLOT_CALL | typeof SLOT_RECLAIM): number {
    if (this.#freeCount === 0) return NO_FREE_SLOT;
    const i = this.#free[--this.#freeCount], slot = this.#slots[i];
    slot.seq = (slot.seq + 1) >>> 0;
    slot.state = state;
    slot.call = null;
    this.#busy[this.#busyCount++] = i;
    return i;
  }

  /** Returns slot `i` to FREE with its extents (no-op when it is FREE already). */
  release(i: number): void {
    const slot = this.#slots[i];
    if (slot.state === SLOT_FREE) return;
    slot.state = SLOT_FREE;
    slot.call = null;
    slot.lazyReadBytes = 0;
    if (slot.bulkOffset >= 0) this.#bulkArea.free(slot.bulkOffset);
    if (slot.stagingOffset >= 0) this.#staging.free(slot.stagingOffset);
    slot.bulkOffset = slot.stagingOffset = -1;
    for (let k = 0; k < this.#busyCount; k++) {
      if (this.#busy[k] === i) {
        this.#busy[k] = this.#busy[--this.#busyCount];
        break;
      }
    }
    this.#free[this.#freeCount++] = i;
  }

  /** Rejects every caller still waiting with `error()`; their slots stay busy. */
  rejectAll(error: () => unknown): void {
    for (let k = this.#busyCount - 1; k >= 0; k--) {
      const slot = this.#slots[this.#busy[k]];
      slot.call?.reject(error());
      slot.call = null;
    }
  }
}
