/**
 * The client-managed allocator of the server's BULK area: each session's bulk area in
 * the server's region is written only by that session's client, so the client decides where each
 * BULK payload goes and sends the server only offsets. Requests complete out of order, so frees
 * come in any order.
 *
 * Design: two sorted extent lists in typed arrays preallocated for `maxAllocs` live allocations —
 * the free list (offset-sorted, coalesced: no two free extents touch) and the allocated list
 * (offset-sorted, for `free(offset)` to find the length and to detect double frees). First fit;
 * sizes are rounded up to `align`, offsets are multiples of `align`. `alloc` is O(free extents),
 * `free` O(log n) search + O(n) `copyWithin` shift; with n ≤ `maxAllocs` (default 4096) this is a
 * few microseconds at worst. Invariant: free extents ≤ live allocations + 1.
 *
 * Ownership and threading: the allocator only does arithmetic; the bytes are the server's. One
 * instance per session, owned by that session's event loop. `alloc` / `free` allocate nothing and
 * never throw; the constructor validates and may throw.
 * @module
 */
import { z } from "zod";
import { parseOptions } from "../../util/options.ts";
/**
 * Returned by `alloc` when the area has no room (negative: never a valid offset). Not the
 * fabric's `FULL` post status: it means no extent is free until an allocation is freed.
 */
export const AREA_EXHAUSTED = -1;

/** The {@link BulkAllocator} parameters; messages name the field. */
const bulkAllocatorOptionsSchema = z.object({
  /** Bytes in the bulk area (the usable capacity is this rounded down to `align`). */
  size: z.number({ message: "size must be a number" }).int().min(1).max(2 ** 52),
  /** Alignment of every offset and granularity of every size: a power of two. */
  align: z.number({ message: "align must be a number" }).int().min(1).max(2 ** 30)
    .refine((v) => (v & (v - 1)) === 0, { message: "align must be a power of two" }),
  /** Most allocations live at once; one more gets AREA_EXHAUSTED. */
  maxAllocs: z.number({ message: "maxAllocs must be a number" }).int().min(1).max(2 ** 22),
}).strict().refine((o) => o.size >= o.align, {
  message: "size must be at least align",
  path: ["size"],
});

/** One extent of the bulk area. */
export interface BulkExtent {
  offset: number;
  length: number;
}

/** Index of the first entry of `a[0..n)` (sorted) that is ≥ `x`. */
function lowerBound(a: Float64Array, n: number, x: number): number {
  let lo = 0, hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** See the module documentation. */
export class BulkAllocator {
  /** Usable bytes: `size` rounded down to `align`. */
  readonly capacity: number;
  /** Alignment of offsets and granularity of sizes. */
  readonly align: number;
  /** Most live allocations. */
  readonly maxAllocs: number;

  readonly #freeOff: Float64Array;
  readonly #freeLen: Float64Array;
  #nFree = 0;
  readonly #allocOff: Float64Array;
  readonly #allocLen: Float64Array;
  #nAlloc = 0;
  #used = 0;
  #badFrees = 0;

  /**
   * An allocator for a bulk area of `size` bytes. Throws `VerbusError` `INVALID_OPTIONS` naming
   * the bad parameter (size, align, maxAllocs).
   */
  constructor(size: number, align = 64, maxAllocs = 4096) {
    const o = parseOptions(bulkAllocatorOptionsSchema, { size, align, maxAllocs }, "BulkAllocator");
    this.align = o.align;
    this.capacity = Math.floor(o.size / o.align) * o.align;
    this.maxAllocs = o.maxAllocs;
    this.#freeOff = new Float64Array(o.maxAllocs + 1);
    this.#freeLen = new Float64Array(o.maxAllocs + 1);
    this.#allocOff = new Float64Array(o.maxAllocs);
    this.#allocLen = new Float64Array(o.maxAllocs);
    this.reset();
  }

  /** Bytes held by live allocations (rounded sizes). */
  get used(): number {
    return this.#used;
  }

  /** Live allocations. */
  get allocations(): number {
    return this.#nAlloc;
  }

  /** Free extents (1 when nothing is allocated). */
  get freeExtents(): number {
    return this.#nFree;
  }

  /** `free()` calls that were refused (double free or unknown offset). */
  get badFrees(): number {
    return this.#badFrees;
  }

  /** The biggest `len` that `alloc` could satisfy right now (O(free extents)). */
  get largestFree(): number {
    let m = 0;
    for (let i = 0; i < this.#nFree; i++) if (this.#freeLen[i] > m) m = this.#freeLen[i];
    return m;
  }

  /**
   * Allocates `len` bytes (rounded up to `align`) and returns the offset within the bulk area, or
   * {@link AREA_EXHAUSTED} when no free extent is big enough, `maxAllocs` allocations are live, or `len`
   * is not a number ≥ 1. First fit.
   */
  alloc(len: number): number {
    if (!(len >= 1 && len <= this.capacity) || this.#nAlloc === this.maxAllocs) {
      return AREA_EXHAUSTED;
    }
    const a = this.align;
    const need = Math.ceil(len / a) * a;
    const fo = this.#freeOff, fl = this.#freeLen;
    for (let i = 0; i < this.#nFree; i++) {
      if (fl[i] < need) continue;
      const off = fo[i];
      if (fl[i] === need) {
        fo.copyWithin(i, i + 1, this.#nFree);
        fl.copyWithin(i, i + 1, this.#nFree);
        this.#nFree--;
      } else {
        fo[i] = off + need;
        fl[i] -= need;
      }
      const ao = this.#allocOff, al = this.#allocLen, n = this.#nAlloc;
      const p = lowerBound(ao, n, off);
      ao.copyWithin(p + 1, p, n);
      al.copyWithin(p + 1, p, n);
      ao[p] = off;
      al[p] = need;
      this.#nAlloc = n + 1;
      this.#used += need;
      return off;
    }
    return AREA_EXHAUSTED;
  }

  /**
   * Frees the allocation starting at `offset`, in any order; coalesces with free neighbours.
   * Returns false — and changes nothing but the `badFrees` counter — when `offset` is not the
   * start of a live allocation (a double free or a bug). Never throws.
   */
  free(offset: number): boolean {
    const ao = this.#allocOff, al = this.#allocLen, na = this.#nAlloc;
    const k = lowerBound(ao, na, offset);
    if (k === na || ao[k] !== offset) {
      this.#badFrees++;
      return false;
    }
    const len = al[k];
    ao.copyWithin(k, k + 1, na);
    al.copyWithin(k, k + 1, na);
    this.#nAlloc = na - 1;
    this.#used -= len;

    const fo = this.#freeOff, fl = this.#freeLen, nf = this.#nFree;
    const p = lowerBound(fo, nf, offset); // first free extent after `offset`
    const joinPrev = p > 0 && fo[p - 1] + fl[p - 1] === offset;
    const joinNext = p < nf && offset + len === fo[p];
    if (joinPrev && joinNext) {
      fl[p - 1] += len + fl[p];
      fo.copyWithin(p, p + 1, nf);
      fl.copyWithin(p, p + 1, nf);
      this.#nFree = nf - 1;
    } else if (joinPrev) {
      fl[p - 1] += len;
    } else if (joinNext) {
      fo[p] = offset;
      fl[p] += len;
    } else {
      fo.copyWithin(p + 1, p, nf);
      fl.copyWithin(p + 1, p, nf);
      fo[p] = offset;
      fl[p] = len;
      this.#nFree = nf + 1;
    }
    return true;
  }

  /** Length (rounded) of the live allocation at `offset`, or -1. */
  sizeOf(offset: number): number {
    const k = lowerBound(this.#allocOff, this.#nAlloc, offset);
    return k < this.#nAlloc && this.#allocOff[k] === offset ? this.#allocLen[k] : -1;
  }

  /** Forgets every allocation: the whole capacity is one free extent again (session end). */
  reset(): void {
    this.#nAlloc = 0;
    this.#used = 0;
    this.#nFree = 1;
    this.#freeOff[0] = 0;
    this.#freeLen[0] = this.capacity;
  }

  /** The free extents in offset order (allocates: tests and debugging). */
  freeList(): BulkExtent[] {
    const out: BulkExtent[] = [];
    for (let i = 0; i < this.#nFree; i++) {
      out.push({ offset: this.#freeOff[i], length: this.#freeLen[i] });
    }
    return out;
  }

  /** The live allocations in offset order (allocates: tests and debugging). */
  allocatedList(): BulkExtent[] {
    const out: BulkExtent[] = [];
    for (let i = 0; i < this.#nAlloc; i++) {
      out.push({ offset: this.#allocOff[i], length: this.#allocLen[i] });
    }
    return out;
  }
}
