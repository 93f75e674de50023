/**
 * Which producers of the agent ring the agent owes a wake-up, and when to pay it
 * (`agent_ring_host.ts`): every answer is recorded once per producer; a flush wakes each recorded
 * producer once, however many of its calls were answered — and, given a delay, defers a producer
 * that still has most of its calls running here until at least as many are answered as still run
 * or its first unwoken answer is that old. A producer keeping many calls in flight is then woken
 * once per half of them instead of once per batch of answers (each wake-up of a sleeping
 * process costs both sides a futex round trip and the kernel's scheduling of it).
 *
 * Threading: the agent's JS thread; agent-private memory only (nothing here is shared).
 * @module
 */

/** See the module documentation. */
export class ProducerWakes {
  /** Producers answered since they were last woken, once each. */
  readonly #list: Uint32Array;
  readonly #listed: Uint8Array;
  #count = 0;
  /** Per producer: answers since its last wake-up, and when the first of them came. */
  readonly #unwoken: Uint32Array;
  readonly #since: Float64Array;

  constructor(producers: number) {
    this.#list = new Uint32Array(producers);
    this.#listed = new Uint8Array(producers);
    this.#unwoken = new Uint32Array(producers);
    this.#since = new Float64Array(producers);
  }

  /** Records an answer published to producer `p`. */
  answered(p: number): void {
    if (this.#unwoken[p]++ === 0) this.#since[p] = performance.now();
    if (this.#listed[p] === 0) {
      this.#listed[p] = 1;
      this.#list[this.#count++] = p;
    }
  }

  /**
   * Calls `wake(p)` for each producer owed a wake-up — with `maxDelayMs` > 0, only those whose
   * calls still running (`running[p]`) are no more than their unwoken answers, or whose first
   * unwoken answer is `maxDelayMs` old; the others stay owed. Returns how many it woke.
   */
  flush(maxDelayMs: number, running: Uint32Array, wake: (p: number) => void): number {
    const n = this.#count, now = maxDelayMs > 0 ? performance.now() : 0;
    let kept = 0, woke = 0;
    for (let i = 0; i < n; i++) {
      const p = this.#list[i];
      if (
        maxDelayMs > 0 && running[p] > this.#unwoken[p] && now - this.#since[p] < maxDelayMs
      ) {
        this.#list[kept++] = p; // not yet: a later flush
        continue;
      }
      this.#listed[p] = 0;
      this.#unwoken[p] = 0;
      wake(p);
      woke++;
    }
    this.#count = kept;
    return woke;
  }

  /** Producers owed a wake-up that a flush deferred. */
  get deferred(): number {
    return this.#count;
  }
}
