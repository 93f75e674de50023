/**
 * The calls an agent client has in its ring slots, indexed by slot — which slots are free (and
 * who waits for one), whether a caller waits on
 * the slot (PENDING), gave up at its deadline while the agent still runs it (ABANDONED: the slot
 * is freed when the answer arrives), its deadline and its promise's settle functions. Fixed-size
 * arrays made when the client joins a ring: a call allocates its promise here and nothing else
 * (one executor serves every slot, so no closure per call).
 *
 * Threading: the agent client's JS thread.
 * @module
 */

/** A slot's state in this table. */
export const SLOT_IDLE = 0, SLOT_PENDING = 1, SLOT_ABANDONED = 2;

/** See the module documentation. */
export class SlotCalls<R> {
  readonly #state: Uint8Array;
  readonly #deadline: Float64Array;
  readonly #resolve: (((r: R) => void) | null)[];
  readonly #reject: (((e: unknown) => void) | null)[];
  #pending = 0;
  #abandoned = 0;
  /** The slot the next `new Promise(this.#executor)` belongs to. */
  #executorSlot = 0;
  readonly #executor = (resolve: (r: R) => void, reject: (e: unknown) => void): void => {
    this.#resolve[this.#executorSlot] = resolve;
    this.#reject[this.#executorSlot] = reject;
  };

  /** Free slots (a stack), and callers waiting for one. */
  readonly #free: number[];
  #freeWaiters: (() => void)[] = [];

  constructor(slots: number) {
    this.#free = Array.from({ length: slots }, (_, i) => slots - 1 - i);
    this.#state = new Uint8Array(slots);
    this.#deadline = new Float64Array(slots);
    this.#resolve = new Array(slots).fill(null);
    this.#reject = new Array(slots).fill(null);
  }

  /** Slots free now. */
  get freeSlots(): number {
    return this.#free.length;
  }

  /** Takes a free slot (−1: none). */
  takeFree(): number {
    return this.#free.length > 0 ? this.#free.pop()! : -1;
  }

  /** Gives slot k back to the free ones and wakes the first caller waiting for one. */
  giveBack(k: number): void {
    this.#free.push(k);
    this.#freeWaiters.shift()?.();
  }

  /**
   * Waits until a slot is given back, or at most `ms` (then returns; the caller looks again).
   */
  async waitForFree(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await new Promise<void>((r) => {
      this.#freeWaiters.push(r);
      timer = setTimeout(() => {
        const i = this.#freeWaiters.indexOf(r);
        if (i >= 0) this.#freeWaiters.splice(i, 1); // a later give-back wakes someone else
        r();
      }, ms);
    });
    clearTimeout(timer);
  }

  /** Slots in this table. */
  get slots(): number {
    return this.#state.length;
  }

  /** Calls whose caller waits. */
  get pending(): number {
    return this.#pending;
  }

  /** Calls given up whose answers are still due. */
  get abandoned(): number {
    return this.#abandoned;
  }

  /** Slot k's state (SLOT_IDLE, SLOT_PENDING, SLOT_ABANDONED). */
  state(k: number): number {
    return this.#state[k];
  }

  /** Slot k was posted with a caller waiting until `deadline` (ms, `performance.now()`): its promise. */
  add(k: number, deadline: number): Promise<R> {
    this.#state[k] = SLOT_PENDING;
    this.#deadline[k] = deadline;
    this.#pending++;
    this.#executorSlot = k;
    return new Promise<R>(this.#executor);
  }

  /**
   * Slot k's answer arrived: the slot is IDLE again. Returns its state before (PENDING: settle
   * the caller with {@link resolveTaken} / {@link rejectTaken}; ABANDONED: nobody waits).
   */
  take(k: number): number {
    const st = this.#state[k];
    this.#state[k] = SLOT_IDLE;
    if (st === SLOT_PENDING) this.#pending--;
    else if (st === SLOT_ABANDONED) {
      this.#abandoned--;
      this.#resolve[k] = this.#reject[k] = null;
    }
    return st;
  }

  /** Settles the caller of slot k just taken (PENDING) with its result. */
  resolveTaken(k: number, r: R): void {
    const resolve = this.#resolve[k]!;
    this.#resolve[k] = this.#reject[k] = null;
    resolve(r);
  }

  /** Fails the caller of slot k just taken (PENDING). */
  rejectTaken(k: number, e: unknown): void {
    const reject = this.#reject[k]!;
    this.#resolve[k] = this.#reject[k] = null;
    reject(e);
  }

  /** Fails every caller whose deadline passed by `now` (`error()` each); their slots become ABANDONED. */
  expire(now: number, error: () => unknown): void {
    const state = this.#state;
    for (let k = 0; k < state.length; k++) {
      if (state[k] !== SLOT_PENDING || now <= this.#deadline[k]) continue;
      state[k] = SLOT_ABANDONED;
      this.#pending--;
      this.#abandoned++;
      const reject = this.#reject[k]!;
      this.#resolve[k] = this.#reject[k] = null;
      reject(error());
    }
  }

  /** Fails every waiting caller with `e` and forgets every slot (the ring is gone). */
  failAll(e: unknown): void {
    for (let k = 0; k < this.#state.length; k++) {
      if (this.#state[k] === SLOT_PENDING) this.#reject[k]!(e);
      this.#state[k] = SLOT_IDLE;
      this.#resolve[k] = this.#reject[k] = null;
    }
    this.#pending = this.#abandoned = 0;
    for (const w of this.#freeWaiters.splice(0)) w(); // they look again and find the ring gone
  }
}
