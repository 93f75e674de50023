/**
 * Reused byte buffers under an accounted budget: the storage of values a process keeps (the demo's
 * KV store) or copies in and out per call (the server's large fabric requests), so a steady load
 * reuses the same buffers instead of making a fresh `ArrayBuffer` per call. JavaScriptCore (Bun)
 * does not count the backing store of short-lived `ArrayBuffer`s as pressure soon enough: a Bun
 * server taking a fresh 20 KB value per call grew to several GB before it collected
 * (bench/results/soak.md); with reuse the garbage is not made at all.
 *
 * Buffers come in size classes ({@link sizeClass}: 8-byte steps up to 256 B, then four steps per
 * power of two, so at most 25 % is unused). `reservedBytes` counts every buffer the pool made and
 * has not dropped — lent out and free — and {@link BufferPool.acquire} never lets it pass the budget
 * the caller names; free buffers past `maxFreeBytes` are dropped (left to the GC) on release.
 *
 * Ownership: a buffer from `acquire` is the caller's until it gives it back with `release` (then
 * it must keep no view of it) or tells the pool to `forget` it (the caller keeps it; the pool stops
 * counting it). Threading: one JS thread per pool.
 * @module
 */

/** The capacity of the class that holds `n` bytes (n ≥ 0): see the module documentation. */
export function sizeClass(n: number): number {
  if (n <= 256) return (n + 7) & ~7;
  const e = Math.floor(Math.log2(n - 1)); // 2^e < n ≤ 2^(e+1)
  const step = 2 ** (e - 2);
  return Math.ceil(n / step) * step;
}

/** Counters of a {@link BufferPool} (live: updated in place). */
export interface BufferPoolStats {
  /** Buffers made (a fresh `ArrayBuffer` each). */
  allocations: number;
  /** Acquires served by a free buffer of the class. */
  reuses: number;
  /** Free buffers dropped to keep under a budget or `maxFreeBytes`. */
  dropped: number;
}

/** A pool of reusable byte buffers; see the module documentation. */
export class BufferPool {
  /** Free bytes kept for reuse at most; more are dropped on release. */
  readonly maxFreeBytes: number;
  /** Counters (live). */
  readonly stats: BufferPoolStats = { allocations: 0, reuses: 0, dropped: 0 };
  readonly #free = new Map<number, Uint8Array[]>();
  #reserved = 0;
  #freeBytes = 0;

  /** `maxFreeBytes`: free bytes kept for reuse (default 64 MiB). */
  constructor(maxFreeBytes = 64 * 1024 * 1024) {
    this.maxFreeBytes = maxFreeBytes;
  }

  /** Bytes of every buffer made and not dropped or forgotten (lent out plus free). */
  get reservedBytes(): number {
    return this.#reserved;
  }

  /** Bytes of the free buffers. */
  get freeBytes(): number {
    return this.#freeBytes;
  }

  /**
   * A buffer of `sizeClass(len)` bytes (its first `len` bytes are the caller's to fill; the
   * content is whatever it held), or `undefined` when `reservedBytes` would pass `budget` even
   * after dropping free buffers. Reuses a free buffer of the class when there is one.
   */
  acquire(len: number, budget: number): Uint8Array | undefined {
    const cap = sizeClass(len);
    const list = this.#free.get(cap);
    if (list !== undefined && list.length > 0) {
      const buf = list.pop()!;
      this.#freeBytes -= cap;
      if (this.#reserved <= budget || this.trim(budget)) {
        this.stats.reuses++;
        return buf;
      }
      this.#pushFree(buf); // over budget even with no other free buffer left
      return undefined;
    }
    if (this.#reserved + cap > budget && !this.trim(budget - cap)) return undefined;
    this.#reserved += cap;
    this.stats.allocations++;
    return new Uint8Array(cap);
  }

  /** Gives `buf` (from {@link acquire}) back; the caller keeps no view of it. */
  release(buf: Uint8Array): void {
    const cap = buf.length;
    if (this.#freeBytes + cap > this.maxFreeBytes) {
      this.#reserved -= cap;
      this.stats.dropped++;
      return;
    }
    this.#pushFree(buf);
  }

  #pushFree(buf: Uint8Array): void {
    let list = this.#free.get(buf.length);
    if (list === undefined) this.#free.set(buf.length, list = []);
    list.push(buf);
    this.#freeBytes += buf.length;
  }

  /** Stops counting `buf` (from {@link acquire}), which the caller keeps for good. */
  forget(buf: Uint8Array): void {
    this.#reserved -= buf.length;
  }

  /** Drops free buffers until `reservedBytes ≤ limit`; returns whether it got there. */
  trim(limit: number): boolean {
    for (const [cap, list] of this.#free) {
      while (this.#reserved > limit && list.length > 0) {
        list.pop();
        this.#reserved -= cap;
        this.#freeBytes -= cap;
        this.stats.dropped++;
      }
      if (list.length === 0) this.#free.delete(cap);
      if (this.#reserved <= limit) return true;
    }
    return this.#reserved <= limit;
  }

  /** Drops every free buffer and forgets every lent one (counters stay). */
  clear(): void {
    this.stats.dropped += [...this.#free.values()].reduce((s, l) => s + l.length, 0);
    this.#free.clear();
    this.#reserved = 0;
    this.#freeBytes = 0;
  }
}
