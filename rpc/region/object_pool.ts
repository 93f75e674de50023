/**
 * The server's object pool for LAZY results: a byte range of the server's registered region cut
 * into `slabs` slabs of `slabSize` bytes. An object (in the format of `object_format.ts`: header,
 * data, trailer) occupies the smallest run of contiguous slabs that holds it, starting at its first
 * slab, whose index is the object id; the rest of its last slab stays unused.
 *
 * Lifecycle: `alloc(len)` → fill the data (`write` / `dataView`) → `publish(id)` (writes header
 * and trailer with a fresh generation, starts the TTL clock) → send the reference
 * `{id, dataOffset(id), length(id), generation(id)}` → the client one-sided-reads
 * `OBJECT_OVERHEAD_BYTES + len` bytes at `objectOffset(id)`, checks them with `verifyObject`
 * (object_format.ts), and sends RECLAIM → `reclaim(id, generation)`. Objects nobody reclaims
 * are freed by `sweep()` after `ttlMs`. Freeing an object zeroes the generation in its header and
 * trailer, so a late reader of a freed object fails `verifyObject` (object_format.ts).
 *
 * Generations come from one u32 counter per pool starting at 1, wrapping to 1 (never 0).
 *
 * Ownership and threading: the pool writes into the `bytes` it was given (a view of the region,
 * owned by the session); everything here is single-threaded, owned by one session's event loop.
 * Data-path methods (`alloc`, `write`, `publish`, `reclaim`, `release`, `sweep`, the getters)
 * allocate nothing and never throw; the constructor validates and may throw.
 * @module
 */
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import { parseOptions } from "../../util/options.ts";
import { OBJECT_HEADER_BYTES, OBJECT_OVERHEAD_BYTES } from "./object_format.ts";

/**
 * Returned by `alloc` when no run of free slabs is big enough (negative: never a valid id). Not
 * the fabric's `FULL` post status: this pool is out of slabs, nothing to retry soon.
 */
export const POOL_EXHAUSTED = -1;

/** The outcome of a RECLAIM from the peer. None of them is an error worth more than a counter. */
export type ReclaimResult = "ok" | "stale" | "repeat" | "bad-id";

/** Options of {@link ObjectPool}; unknown keys are rejected, messages name the field. */
const objectPoolOptionsSchema: z.ZodObject<{
  slabSize: z.ZodDefault<z.ZodNumber>;
  slabs: z.ZodDefault<z.ZodNumber>;
  ttlMs: z.ZodDefault<z.ZodNumber>;
  now: z.ZodOptional<z.ZodCustom<() => number, () => number>>;
}, z.core.$strict> = z.object({
  /** Bytes per slab; a multiple of 8, at least 16. */
  slabSize: z.number({ message: "slabSize must be a number" }).int().min(16).max(2 ** 30)
    .multipleOf(8, { message: "slabSize must be a multiple of 8" }).default(65536),
  /** Number of slabs. */
  slabs: z.number({ message: "slabs must be a number" }).int().min(1).max(2 ** 24).default(256),
  /** Published objects older than this (ms) are freed by `sweep()`. */
  ttlMs: z.number({ message: "ttlMs must be a number" }).min(0).default(30000),
  /** The clock in ms (default `performance.now`); tests inject their own. */
  now: z.custom<() => number>((v) => typeof v === "function", {
    message: "now must be a function returning milliseconds",
  }).optional(),
}).strict();

/** Input type of the {@link ObjectPool} options. */
export type ObjectPoolOptions = z.input<typeof objectPoolOptionsSchema>;

/** Counters and occupancy of a pool (a fresh plain object per call: for stats / telemetry). */
export interface ObjectPoolStats {
  /** Successful `alloc` calls. */
  allocs: number;
  /** Objects freed by a valid RECLAIM. */
  reclaims: number;
  /** Objects freed by `sweep()` because their TTL passed. */
  ttlReclaims: number;
  /** RECLAIMs of an object id that once held an object whose generation no longer matches. */
  staleRefs: number;
  /** RECLAIMs repeating one that already freed that very object. */
  repeatRefs: number;
  /** RECLAIMs with an id out of range or where no object ever started (this session). */
  badRefs: number;
  /** Slabs held by live objects. */
  usedSlabs: number;
  /** Slabs in the pool. */
  capacitySlabs: number;
  /** `usedSlabs / capacitySlabs`, 0..1. */
  usage: number;
}

/** See the module documentation. One pool per session, owned by its event loop. */
export class ObjectPool {
  /** Bytes per slab. */
  readonly slabSize: number;
  /** Number of slabs. */
  readonly slabs: number;
  /** TTL of published, unreclaimed objects, in ms. */
  readonly ttlMs: number;
  /** Largest `len` one object can have (all slabs, minus header and trailer). */
  readonly maxObjectBytes: number;

  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #now: () => number;
  /** Slabs in the object starting here; 0 = no live object starts here. */
  readonly #run: Uint32Array;
  /** Data length of the object starting here. */
  readonly #len: Uint32Array;
  /** Generation of the live object starting here; 0 = allocated but not published. */
  readonly #gen: Uint32Array;
  /** When the object starting here was published (ms, from `now`). */
  readonly #stamp: Float64Array;
  /** History: generation of the last object published with its first slab here (0 = none). */
  readonly #headGen: Uint32Array;
  /** History: generation of the last object here freed by a valid RECLAIM (0 = none). */
  readonly #peerFreed: Uint32Array;
  #nextGen = 1;
  #used = 0;
  #allocs = 0;
  #reclaims = 0;
  #ttlReclaims = 0;
  #staleRefs = 0;
  #repeatRefs = 0;
  #badRefs = 0;

  /**
   * Lays the pool over `bytes` (the pool area, a view of the registered region; the session keeps
   * owning it). Throws `VerbusError` `INVALID_OPTIONS` for bad options and `INVALID_ARGUMENT`
   * when `bytes` is shorter than `slabSize * slabs`. Does not touch the bytes.
   */
  constructor(bytes: Uint8Array, options: ObjectPoolOptions = {}) {
    const o = parseOptions(objectPoolOptionsSchema, options, "ObjectPool options");
    if (!(bytes instanceof Uint8Array)) {
      throw new VerbusError("INVALID_ARGUMENT", "ObjectPool: bytes must be a Uint8Array");
    }
    if (bytes.length < o.slabSize * o.slabs) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `ObjectPool: bytes has ${bytes.length} B, slabs × slabSize needs ${o.slabSize * o.slabs} B`,
        { context: { bytes: bytes.length, slabs: o.slabs, slabSize: o.slabSize } },
      );
    }
    this.slabSize = o.slabSize;
    this.slabs = o.slabs;
    this.ttlMs = o.ttlMs;
    this.maxObjectBytes = Math.min(o.slabSize * o.slabs - OBJECT_OVERHEAD_BYTES, 0xffffffff);
    this.#now = o.now ?? (() => performance.now());
    this.#bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#run = new Uint32Array(o.slabs);
    this.#len = new Uint32Array(o.slabs);
    this.#gen = new Uint32Array(o.slabs);
    this.#stamp = new Float64Array(o.slabs);
    this.#headGen = new Uint32Array(o.slabs);
    this.#peerFreed = new Uint32Array(o.slabs);
  }

  /** Whether `id` is the first slab of a live (allocated) object. */
  #live(id: number): boolean {
    return (id >>> 0) === id && id < this.slabs && this.#run[id] !== 0;
  }

  /** Slabs an object of `len` data bytes needs (`Infinity`-like large for bad lengths). */
  slabsFor(len: number): number {
    if ((len >>> 0) !== len) return this.slabs + 1;
    return Math.ceil((len + OBJECT_OVERHEAD_BYTES) / this.slabSize);
  }

  /**
   * Allocates an object of `len` data bytes (0 ≤ len ≤ `maxObjectBytes`): first fit over the
   * slabs, O(slabs). Returns its id (index of its first slab) or {@link POOL_EXHAUSTED} — also for a `len`
   * that could never fit (check `maxObjectBytes`). Not visible to anyone until `publish`.
   */
  alloc(len: number): number {
    const need = this.slabsFor(len);
    if (need > this.slabs) return POOL_EXHAUSTED;
    const run = this.#run, n = this.slabs;
    let i = 0, start = 0, free = 0;
    while (i < n) {
      const r = run[i];
      if (r !== 0) {
        i += r;
        start = i;
        free = 0;
        continue;
      }
      i++;
      if (++free === need) {
        run[start] = need;
        this.#len[start] = len;
        this.#gen[start] = 0;
        this.#used += need;
        this.#allocs++;
        return start;
      }
    }
    return POOL_EXHAUSTED;
  }

  /** Generation of the live, published object `id`; 0 if unpublished or not a live object. */
  generation(id: number): number {
    return this.#live(id) ? this.#gen[id] : 0;
  }

  /** Data length of the live object `id`, or -1. */
  length(id: number): number {
    return this.#live(id) ? this.#len[id] : -1;
  }

  /** Byte offset of the object's header within the pool area (`id * slabSize`), or -1. */
  objectOffset(id: number): number {
    return this.#live(id) ? id * this.slabSize : -1;
  }

  /** Byte offset of the object's data within the pool area, or -1. */
  dataOffset(id: number): number {
    return this.#live(id) ? id * this.slabSize + OBJECT_HEADER_BYTES : -1;
  }

  /**
   * Copies `src` into the data of object `id` at `at` (default 0). Returns the bytes copied, or
   * -1 when `id` is not a live object or `src` would run past its length. `src` stays the
   * caller's. Allocation-free.
   */
  write(id: number, src: Uint8Array, at = 0): number {
    if (!this.#live(id) || (at >>> 0) !== at || at + src.length > this.#len[id]) return -1;
    this.#bytes.set(src, id * this.slabSize + OBJECT_HEADER_BYTES + at);
    return src.length;
  }

  /**
   * The data of object `id` as a subarray of the pool's bytes, to fill in place (it aliases the
   * region: do not keep it past `publish`). Allocates one view object. Throws `VerbusError`
   * `INVALID_ARGUMENT` for an id `alloc` did not return — a local bug, never peer input.
   */
  dataView(id: number): Uint8Array {
    if (!this.#live(id)) {
      throw new VerbusError("INVALID_ARGUMENT", `ObjectPool: ${id} is not a live object id`);
    }
    const o = id * this.slabSize + OBJECT_HEADER_BYTES;
    return this.#bytes.subarray(o, o + this.#len[id]);
  }

  /**
   * Makes object `id` readable: writes header and trailer with a fresh generation and starts its
   * TTL clock. Returns the generation (≥ 1), or 0 when `id` is not a live object. Publishing
   * again gives a new generation (references to the old one become stale).
   */
  publish(id: number): number {
    if (!this.#live(id)) return 0;
    const g = this.#nextGen;
    this.#nextGen = g === 0xffffffff ? 1 : g + 1;
    const base = id * this.slabSize, len = this.#len[id];
    const v = this.#view;
    v.setUint32(base, g, true);
    v.setUint32(base + 4, len, true);
    v.setUint32(base + OBJECT_HEADER_BYTES + len, g, true);
    this.#gen[id] = g;
    this.#headGen[id] = g;
    this.#stamp[id] = this.#now();
    return g;
  }

  /** Frees the live object at `id`: clears its slabs and zeroes its header/trailer generation. */
  #free(id: number): void {
    const n = this.#run[id];
    const base = id * this.slabSize;
    if (this.#gen[id] !== 0) {
      this.#view.setUint32(base, 0, true);
      this.#view.setUint32(base + OBJECT_HEADER_BYTES + this.#len[id], 0, true);
    }
    this.#run[id] = 0;
    this.#gen[id] = 0;
    this.#len[id] = 0;
    this.#used -= n;
  }

  /**
   * Handles a RECLAIM from the peer (both values come from the wire; never throws):
   * - `"ok"`: `id` is a live published object of that generation; it is freed.
   * - `"repeat"`: that very object was already freed by an earlier RECLAIM.
   * - `"stale"`: an object once started at `id` but the generation does not match the live one
   *   (freed by the TTL sweep, reused, or never that generation).
   * - `"bad-id"`: `id` is out of range or no object ever started there this session
   *   (e.g. a middle slab).
   * Everything but `"ok"` only bumps a counter.
   */
  reclaim(id: number, generation: number): ReclaimResult {
    if ((id >>> 0) !== id || id >= this.slabs) {
      this.#badRefs++;
      return "bad-id";
    }
    if (this.#run[id] !== 0 && this.#gen[id] !== 0 && this.#gen[id] === generation) {
      this.#free(id);
      this.#peerFreed[id] = generation;
      this.#reclaims++;
      return "ok";
    }
    if (generation !== 0 && this.#peerFreed[id] === generation) {
      this.#repeatRefs++;
      return "repeat";
    }
    if (this.#headGen[id] !== 0) {
      this.#staleRefs++;
      return "stale";
    }
    this.#badRefs++;
    return "bad-id";
  }

  /**
   * Server-local free of an object that will not be (or was not) handed out, e.g. its handler
   * failed after `alloc`. Not counted as a reclaim. Returns false when `id` is not live.
   */
  release(id: number): boolean {
    if (!this.#live(id)) return false;
    this.#free(id);
    return true;
  }

  /**
   * Frees every published object strictly older than `ttlMs` (counted as TTL reclaims) and
   * returns how many. Allocated-but-unpublished objects are the server's own business (publish or
   * `release` them) and are never swept. O(slabs).
   */
  sweep(): number {
    const now = this.#now(), ttl = this.ttlMs, run = this.#run;
    let freed = 0, i = 0;
    while (i < this.slabs) {
      const r = run[i];
      if (r === 0) {
        i++;
        continue;
      }
      if (this.#gen[i] !== 0 && now - this.#stamp[i] > ttl) {
        this.#free(i);
        freed++;
      }
      i += r;
    }
    this.#ttlReclaims += freed;
    return freed;
  }

  /**
   * Session end: frees every object (their generations are zeroed in the bytes) and forgets the
   * RECLAIM history, so references from the old session are `bad-id`. Counters and the generation
   * counter carry on (generations are never reused soon after a reset).
   */
  reset(): void {
    for (let i = 0; i < this.slabs;) {
      const r = this.#run[i];
      if (r === 0) {
        i++;
        continue;
      }
      this.#free(i);
      i += r;
    }
    this.#headGen.fill(0);
    this.#peerFreed.fill(0);
  }

  /** Slabs held by live objects. */
  get usedSlabs(): number {
    return this.#used;
  }

  /** `usedSlabs / slabs`, 0..1. */
  get usage(): number {
    return this.#used / this.slabs;
  }

  /** A snapshot of the counters (allocates: for stats and telemetry, not per call). */
  stats(): ObjectPoolStats {
    return {
      allocs: this.#allocs,
      reclaims: this.#reclaims,
      ttlReclaims: this.#ttlReclaims,
      staleRefs: this.#staleRefs,
      repeatRefs: this.#repeatRefs,
      badRefs: this.#badRefs,
      usedSlabs: this.#used,
      capacitySlabs: this.slabs,
      usage: this.#used / this.slabs,
    };
  }
}
