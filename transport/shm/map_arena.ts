/**
 * Where the shm fabric maps its objects, so that a Deno process can hold 10,000 sessions.
 *
 * V8 counts every `ArrayBuffer` over foreign memory (`Deno.UnsafePointerView.getArrayBuffer`)
 * as external memory, in full. Once a process's external memory nears V8's global limit (about
 * 2 × the heap limit: 8.4 GB with Deno's defaults on a 24 GiB host), V8 garbage-collects without
 * pause: with one view per session, a Deno process slowed from 0.6–0.9 ms to 10–90 ms of CPU per
 * new session at about 5,700–7,000 small sessions (1.25 MiB each), its time in GC threads.
 * A `SharedArrayBuffer` is not counted (V8 does not charge shared backing stores to an isolate),
 * so past a budget of foreign views (`MapArena.foreignBudget`) objects are mapped
 * (`MAP_FIXED`) over page ranges of large SharedArrayBuffers ("chunks", 1 GiB by default),
 * kept for the life of the thread, and an object's bytes are a subarray of its chunk.
 * JSC (Bun) has no such accounting: its budget is unlimited and it keeps one view per object.
 *
 * ```
 *  chunk: one SharedArrayBuffer (anonymous zero pages until something is mapped over them)
 *  ├ pad ┼─ object A (MAP_SHARED|MAP_FIXED) ─┼─ object B ─┼─ free ─┼─ bump → … ┤
 *   (to the first page boundary)
 * ```
 * Placement is O(1): a freed range goes to the free list of its size (a server's sessions share
 * a size), else the newest chunk's bump pointer, else a new chunk (an object larger than a chunk
 * gets a chunk of its own size). A released range is mapped back to anonymous zero pages (a
 * stale view of it reads zeros, never another session's bytes, until the range is placed again).
 * Chunks are never returned: they cost address space, not memory. Copies into and out of
 * SharedArrayBuffer views of 32 KiB or more are slower on V8 (it copies shared memory with
 * relaxed atomics), which is why views stay per object below the budget.
 * Setup path only; one JS thread (each thread has its own arena, as its own buffers).
 * @module
 */
import { getHeapStatistics } from "node:v8";
import { NativeError } from "../../errors.ts";
import { ffi } from "../../ffi/ffi.ts";
import { errno, loadLibc } from "../../ffi/libc.ts";
import type { Library } from "../../ffi/loader.ts";
import {
  type LIBC_SYMBOLS,
  MAP_ANONYMOUS,
  MAP_FAILED_ADDR,
  MAP_FIXED,
  MAP_PRIVATE,
  MAP_SHARED,
  PROT_READ,
  PROT_WRITE,
} from "../../ffi/symbols/libc.ts";
import type { FfiBackend, NonNullPtr, Ptr } from "../../ffi/types.ts";

const PAGE = 4096;
/** Bytes per chunk unless an object needs more. */
export const DEFAULT_CHUNK_BYTES = 1 << 30;

interface Chunk {
  /** Page-aligned address of the chunk's first usable byte. */
  readonly address: bigint;
  readonly size: number;
  /** The chunk's usable bytes (a view of its SharedArrayBuffer; keeps it alive). */
  readonly bytes: Uint8Array;
  /** Next never-used offset. */
  bump: number;
}

/** A page range of a chunk. */
interface Range {
  readonly chunk: Chunk;
  readonly offset: number;
  readonly span: number;
}

/** One mapped object: its bytes, its address, and how to unmap it (safe twice). */
export interface Mapped {
  readonly bytes: Uint8Array;
  readonly address: bigint;
  /** True when it lies in an arena chunk (a SharedArrayBuffer), false for its own view. */
  readonly inArena: boolean;
  readonly release: () => void;
}

/** Counters for tests and the scale bench. */
export interface ArenaStats {
  /** Chunks reserved (each is one SharedArrayBuffer). */
  chunks: number;
  /** Objects placed in chunks now. */
  placed: number;
  /** Bytes of objects mapped with their own (engine-counted) view now. */
  foreignBytes: number;
}

/** The arena of one JS thread (see the module doc). */
export class MapArena {
  readonly #chunks: Chunk[] = [];
  /** Free ranges by span. */
  readonly #free = new Map<number, Range[]>();
  /** The range of each placed object, by address. */
  readonly #placed = new Map<bigint, Range>();
  #foreignBytes = 0;

  /**
   * @param foreignBudget bytes of per-object views this thread may hold before objects go to
   *   chunks (Infinity: never; 0: always); see {@link foreignBudget}
   * @param chunkBytes bytes per chunk (a multiple of the page size)
   */
  constructor(
    private readonly libc: Library<typeof LIBC_SYMBOLS>,
    private readonly f: FfiBackend,
    foreignBudget: number,
    readonly chunkBytes = DEFAULT_CHUNK_BYTES,
  ) {
    if (!Number.isSafeInteger(chunkBytes) || chunkBytes <= 0 || chunkBytes % PAGE !== 0) {
      throw new RangeError(
        `map arena: chunkBytes ${chunkBytes} is not a positive multiple of ${PAGE}`,
      );
    }
    this.foreignBudget = foreignBudget;
  }

  #budget = 0;

  /** Bytes of per-object views this thread may hold before objects go to chunks. */
  get foreignBudget(): number {
    return this.#budget;
  }

  /** Changes the budget for later mappings (tests; a process that wants every object in chunks). */
  set foreignBudget(bytes: number) {
    if (!(bytes >= 0)) throw new RangeError(`map arena: foreignBudget ${bytes} is not >= 0`);
    this.#budget = bytes;
  }

  static #shared: Promise<MapArena> | null = null;

  /**
   * This thread's arena (made on first use). Budget: on Deno a quarter of V8's heap limit (1 GiB
   * with the defaults here), far below the point where external memory drives GC; on Bun none.
   */
  static shared(): Promise<MapArena> {
    return MapArena.#shared ??= (async () => {
      const f = await ffi();
      const budget = f.runtime === "deno" ? getHeapStatistics().heap_size_limit / 4 : Infinity;
      return new MapArena(await loadLibc(), f, budget);
    })();
  }

  stats(): ArenaStats {
    return {
      chunks: this.#chunks.length,
      placed: this.#placed.size,
      foreignBytes: this.#foreignBytes,
    };
  }

  /**
   * Maps `size` bytes of `fd` (from offset 0, read/write, shared): with its own view while the
   * budget allows, else over a free range of a chunk. Throws NATIVE_CALL (mmap, with errno) when
   * the kernel refuses; nothing stays mapped or reserved then.
   */
  map(fd: number, size: number, what: string): Mapped {
    const span = Math.ceil(size / PAGE) * PAGE;
    if (this.#foreignBytes + span <= this.foreignBudget) return this.#mapOwn(fd, size, span, what);
    const range = this.#take(span);
    const address = range.chunk.address + BigInt(range.offset);
    const p = this.#mmap(address, span, MAP_SHARED | MAP_FIXED, fd);
    if (p === null || this.f.address(p) !== address) {
      const e = errno(this.libc);
      this.#putBack(range);
      throw new NativeError("mmap", e, `${what}, ${size} bytes at 0x${address.toString(16)}`);
    }
    this.#placed.set(address, range);
    return {
      bytes: range.chunk.bytes.subarray(range.offset, range.offset + size),
      address,
      inArena: true,
      release: () => this.#release(address),
    };
  }

  #mapOwn(fd: number, size: number, span: number, what: string): Mapped {
    const p = this.#mmap(null, span, MAP_SHARED, fd);
    if (p === null) throw new NativeError("mmap", errno(this.libc), `${what}, ${size} bytes`);
    this.#foreignBytes += span;
    let mapped = true;
    return {
      bytes: new Uint8Array(this.f.view(p, size)),
      address: this.f.address(p),
      inArena: false,
      release: () => {
        if (!mapped) return;
        mapped = false;
        this.libc.symbols.munmap(p, span);
        this.#foreignBytes -= span;
      },
    };
  }

  /** Maps the object's range back to anonymous zero pages and frees it. Safe twice. */
  #release(address: bigint): void {
    const r = this.#placed.get(address);
    if (r === undefined) return;
    this.#placed.delete(address);
    // If the kernel refused (only on ENOMEM), the range keeps the object's mapping: leave it out
    // of the free list rather than hand out a range in an unknown state.
    if (this.#mmap(address, r.span, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1) !== null) {
      this.#putBack(r);
    }
  }

  /** mmap read/write; null on failure (errno says why). */
  #mmap(address: bigint | null, size: number, flags: number, fd: number): NonNullPtr | null {
    const p: Ptr = this.libc.symbols.mmap(
      address === null ? null : this.f.fromAddress(address),
      size,
      PROT_READ | PROT_WRITE,
      flags,
      fd,
      0n,
    );
    if (p === null || this.f.address(p) === MAP_FAILED_ADDR) return null;
    return p as NonNullPtr;
  }

  #take(span: number): Range {
    const reused = this.#free.get(span)?.pop();
    if (reused !== undefined) return reused;
    let c = this.#chunks[this.#chunks.length - 1];
    if (c === undefined || c.size - c.bump < span) c = this.#newChunk(span);
    const offset = c.bump;
    c.bump += span;
    return { chunk: c, offset, span };
  }

  #putBack(r: Range): void {
    let list = this.#free.get(r.span);
    if (list === undefined) this.#free.set(r.span, list = []);
    list.push(r);
  }

  #newChunk(span: number): Chunk {
    const size = Math.max(this.chunkBytes, span);
    // One page more than needed: the engine's allocation need not start on a page boundary.
    const all = new Uint8Array(new SharedArrayBuffer(size + PAGE));
    const base = this.f.address(this.f.ptrOf(all));
    const pad = Number((BigInt(PAGE) - (base % BigInt(PAGE))) % BigInt(PAGE));
    const c: Chunk = {
      address: base + BigInt(pad),
      size,
      bytes: all.subarray(pad, pad + size),
      bump: 0,
    };
    this.#chunks.push(c);
    return c;
  }
}
