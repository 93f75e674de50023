/**
 * First-fit allocation of byte ranges inside one side of a producer's spill area in the agent's
 * shm object (`agent_ring.ts`): the producer allocates its large request records in its request
 * half, the agent the large answers in the producer's response half. The state is private to the
 * process that allocates (never read back from shared memory), so no peer can corrupt it. Ranges
 * start on 64-byte boundaries; a freed range merges with its free neighbours.
 *
 * Threading: one JS thread (the owner's).
 * @module
 */

const GRAIN = 64;

/** See the module documentation. */
export class SpillAllocator {
  /** Bytes managed: offsets lie in [0, size). */
  readonly size: number;
  /** Free ranges as sorted, non-touching [start, end) pairs. */
  #starts: number[] = [];
  #ends: number[] = [];
  #used = 0;

  constructor(size: number) {
    this.size = size - (size % GRAIN);
    this.reset();
  }

  /** Bytes allocated now (rounded up to the grain). */
  get usedBytes(): number {
    return this.#used;
  }

  /** Allocates `bytes` (> 0): the offset, or −1 when no free range is large enough. */
  alloc(bytes: number): number {
    const n = Math.ceil(bytes / GRAIN) * GRAIN;
    if (n <= 0 || n > this.size) return -1;
    for (let i = 0; i < this.#starts.length; i++) {
      const s = this.#starts[i];
      if (this.#ends[i] - s < n) continue;
      if (this.#ends[i] - s === n) {
        this.#starts.splice(i, 1);
        this.#ends.splice(i, 1);
      } else this.#starts[i] = s + n;
      this.#used += n;
      return s;
    }
    return -1;
  }

  /** Frees the range `alloc(bytes)` returned at `offset`. */
  free(offset: number, bytes: number): void {
    const n = Math.ceil(bytes / GRAIN) * GRAIN, end = offset + n;
    let i = 0;
    while (i < this.#starts.length && this.#starts[i] < offset) i++;
    const joinsPrev = i > 0 && this.#ends[i - 1] === offset;
    const joinsNext = i < this.#starts.length && this.#starts[i] === end;
    if (joinsPrev && joinsNext) {
      this.#ends[i - 1] = this.#ends[i];
      this.#starts.splice(i, 1);
      this.#ends.splice(i, 1);
    } else if (joinsPrev) this.#ends[i - 1] = end;
    else if (joinsNext) this.#starts[i] = offset;
    else {
      this.#starts.splice(i, 0, offset);
      this.#ends.splice(i, 0, end);
    }
    this.#used -= n;
  }

  /** Frees everything (the owner of the area changed). */
  reset(): void {
    this.#starts = this.size > 0 ? [0] : [];
    this.#ends = this.size > 0 ? [this.size] : [];
    this.#used = 0;
  }
}
