/**
 * The client's staging area: the registered part of the client region that one-sided operations
 * use as local buffers. Its first {@link SNAPSHOT_BYTES} receive the server's control page (the
 * snapshot read); the rest is handed out in extents — a BULK request's payload is gathered here
 * before the write, a LAZY object is read into here before it is copied out.
 *
 * Ownership and threading: the bytes belong to the session's endpoint (`endpoint.local`); one
 * instance per client session, used on its JS thread. `alloc` / `free` / `regionOffset` allocate
 * nothing and never throw; `view` allocates one subarray.
 * @module
 */
import { BulkAllocator } from "../../region/bulk_allocator.ts";
import type { Area } from "../../region/layout.ts";

/** Bytes at the start of staging that receive the server's control page (all 4 KiB of it). */
export const SNAPSHOT_BYTES = 4096;

/** See the module documentation. */
export class StagingArea {
  /** Where the snapshot read of the server's control page lands (aliases the region). */
  readonly snapshotView: Uint8Array;
  readonly #local: Uint8Array;
  /** Region offset of the first allocatable byte. */
  readonly #base: number;
  readonly #extents: BulkAllocator;

  /**
   * Lays the staging area over `area` of `local` (the client region); `maxExtents` bounds the
   * extents live at once (one per slot is enough).
   */
  constructor(local: Uint8Array, area: Area, maxExtents: number) {
    this.#local = local;
    this.snapshotView = local.subarray(area.offset, area.offset + SNAPSHOT_BYTES);
    this.#base = area.offset + SNAPSHOT_BYTES;
    this.#extents = new BulkAllocator(
      Math.max(64, area.size - SNAPSHOT_BYTES),
      64,
      Math.max(1, maxExtents),
    );
  }

  /**
   * LAZY reads waiting for room (the response reader sets it): while some wait, a new BULK
   * request takes no staging (its submit is FULL and waits), so the waiting reads come first.
   */
  waiting = 0;

  /** Bytes that can be handed out at all (an extent larger than this never fits). */
  get capacity(): number {
    return this.#extents.capacity;
  }

  /**
   * Reserves `len` bytes; returns the extent's offset, or a negative number (`AREA_EXHAUSTED`)
   * when there is no room.
   */
  alloc(len: number): number {
    return this.#extents.alloc(len);
  }

  /** Returns an extent from `alloc`. */
  free(offset: number): void {
    this.#extents.free(offset);
  }

  /** The offset in the client region of byte 0 of the extent at `offset`. */
  regionOffset(offset: number): number {
    return this.#base + offset;
  }

  /** `len` bytes of the extent at `offset`, as a view of the region (allocates the view). */
  view(offset: number, len: number): Uint8Array {
    const at = this.#base + offset;
    return this.#local.subarray(at, at + len);
  }
}
