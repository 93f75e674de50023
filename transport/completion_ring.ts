/**
 * A preallocated FIFO of completion records (wr_id, status) for fabrics that synthesize or
 * re-queue completions before the caller's `poll()` reaps them. Allocates nothing after
 * construction; owned by one endpoint, one JS thread.
 * @module
 */
import type { Completions } from "./fabric.ts";

/** Completion records waiting for `poll()`, in posting order. */
export class CompletionRing {
  readonly #id: Float64Array;
  readonly #status: Int32Array;
  #head = 0;
  #count = 0;

  /** @param capacity records it holds at most (allocated once, here). */
  constructor(readonly capacity: number) {
    this.#id = new Float64Array(capacity);
    this.#status = new Int32Array(capacity);
  }

  /** Records waiting. */
  get length(): number {
    return this.#count;
  }

  /** Appends one record; false (nothing stored) when full. */
  push(wrId: number, status: number): boolean {
    if (this.#count >= this.capacity) return false;
    const i = (this.#head + this.#count) % this.capacity;
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
    this.#head = (this.#head + 1) % this.capacity;
    this.#count--;
  }

  /** Moves up to `out.capacity` records into `out`, oldest first; returns how many. */
  drainInto(out: Completions): number {
    let n = 0;
    while (n < out.capacity && this.#count > 0) {
      out.wrId[n] = this.#id[this.#head];
      out.status[n] = this.#status[this.#head];
      this.#head = (this.#head + 1) % this.capacity;
      this.#count--;
      n++;
    }
    return n;
  }
}
