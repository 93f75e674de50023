/**
 * A FIFO of completion records (wr_id, status) for fabrics that synthesize or re-queue
 * completions before the caller's `poll()` reaps them. Its storage starts at
 * {@link FIRST_STORAGE} records and doubles when full, up to `capacity` (at most 6 allocations
 * in its life for the shm endpoint's 4,096; then none): a session that never has many
 * completions waiting does not pay for 48 KiB of zeroed arrays (Deno: ~0.1-0.3 ms and GC
 * pressure per session, bench/scale). Owned by one endpoint, one JS thread.
 * @module
 */
import type { Completions } from "./fabric.ts";

/** Records the storage holds at first. */
export const FIRST_STORAGE = 64;

/** Completion records waiting for `poll()`, in posting order. */
export class CompletionRing {
  #id: Float64Array;
  #status: Int32Array;
  #head = 0;
  #count = 0;

  /** @param capacity records it holds at most */
  constructor(readonly capacity: number) {
    const n = Math.min(capacity, FIRST_STORAGE);
    this.#id = new Float64Array(n);
    this.#status = new Int32Array(n);
  }

  /** Records the storage holds now (grows to `capacity`). */
  get storage(): number {
    return this.#id.length;
  }

  /** Doubles the storage (up to `capacity`), oldest record first. */
  #grow(): void {
    const old = this.#id.length, n = Math.min(this.capacity, old * 2);
    const id = new Float64Array(n), status = new Int32Array(n);
    for (let i = 0; i < this.#count; i++) {
      const j = (this.#head + i) % old;
      id[i] = this.#id[j];
      status[i] = this.#status[j];
    }
    this.#id = id;
    this.#status = status;
    this.#head = 0;
  }

  /** Records waiting. */
  get length(): number {
    return this.#count;
  }

  /** Appends one record; false (nothing stored) when full. */
  push(wrId: number, status: number): boolean {
    if (this.#count >= this.capacity) return false;
    if (this.#count === this.#id.length) this.#grow();
    const i = (this.#head + this.#count) % this.#id.length;
    this.#id[i] = wrId;
    this.#status[i] = status;
    this.#count++;
    return true;
  }

  /** wr_id of the oldest record (check `length` first). */
  peekWrId(): number {
    return this.#id[this.#head];
  }

  /** Status of the oldest record (check `length` first). */
  peekStatus(): number {
    return this.#status[this.#head];
  }

  /** Drops the oldest record. */
  shift(): void {
    if (this.#count === 0) return;
    this.#head = (this.#head + 1) % this.#id.length;
    this.#count--;
  }

  /** Moves up to `out.capacity` records into `out`, oldest first; returns how many. */
  drainInto(out: Completions): number {
    let n = 0;
    while (n < out.capacity && this.#count > 0) {
      out.wrId[n] = this.#id[this.#head];
      out.status[n] = this.#status[this.#head];
      this.#head = (this.#head + 1) % this.#id.length;
      this.#count--;
      n++;
    }
    return n;
  }
}
