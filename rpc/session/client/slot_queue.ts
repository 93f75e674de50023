/**
 * A FIFO of slot indices with a fixed capacity (one entry per slot is enough: a slot is in it at
 * most once). The response reader keeps its LAZY reads that wait for staging room here, so they
 * are posted in the order their answers arrived.
 *
 * Ownership and threading: one queue per client session, on its JS thread; `push`, `peek` and
 * `shift` allocate nothing.
 * @module
 */

/** See the module documentation. */
export class SlotQueue {
  readonly #ring: Int32Array;
  #head = 0;
  #length = 0;

  /** An empty queue for up to `capacity` slot indices. */
  constructor(capacity: number) {
    this.#ring = new Int32Array(Math.max(1, capacity));
  }

  /** Entries queued. */
  get length(): number {
    return this.#length;
  }

  /** Appends slot `i`; false (nothing queued) when the queue is full. */
  push(i: number): boolean {
    const cap = this.#ring.length;
    if (this.#length === cap) return false;
    this.#ring[(this.#head + this.#length++) % cap] = i;
    return true;
  }

  /** The oldest entry (-1 when empty). */
  peek(): number {
    return this.#length === 0 ? -1 : this.#ring[this.#head];
  }

  /** Removes and returns the oldest entry (-1 when empty). */
  shift(): number {
    if (this.#length === 0) return -1;
    const i = this.#ring[this.#head];
    this.#head = (this.#head + 1) % this.#ring.length;
    this.#length--;
    return i;
  }
}
