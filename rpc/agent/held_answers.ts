/**
 * Answers the agent holds until their producer's spill area has room: an answer larger than a
 * slot goes into the producer's response half (`transport/agent_ring/agent_ring_host.ts`), and with
 * many large answers in flight the half can be full of answers the producer has not consumed yet.
 * Such an answer is not failed: it waits here, per producer in the order the remote answers came,
 * and is written as soon as the producer consumes (releases) earlier ones. Only an answer larger
 * than the whole half is failed (by the agent, before it gets here).
 *
 * Bounded: a producer has at most `slots` calls running, so at most `slots` answers wait for it,
 * each no larger than a spill half — memory the agent already held as the remote call's result.
 * A producer that dies or leaves while answers wait for it loses them ({@link HeldAnswers.drop}):
 * nothing stays held for it and its table entry can be reclaimed.
 *
 * Threading: the agent's JS thread.
 * @module
 */
/** One held answer: slot k of its producer and the remote result to write there. */
export interface HeldAnswer<R> {
  k: number;
  r: R;
}

/** Per producer, the answers (remote results `R`) waiting for room in its response half, oldest first. */
export class HeldAnswers<R> {
  readonly #queues = new Map<number, HeldAnswer<R>[]>();
  #count = 0;

  /** Answers held now (all producers). */
  get size(): number {
    return this.#count;
  }

  /** True when answers wait for producer p (a later large answer of p queues behind them). */
  has(p: number): boolean {
    return this.#queues.has(p);
  }

  /** The producers answers wait for. */
  producers(): number[] {
    return [...this.#queues.keys()];
  }

  /** Holds the answer of slot k of producer p behind p's earlier held answers. */
  push(p: number, k: number, r: R): void {
    const q = this.#queues.get(p);
    if (q) q.push({ k, r });
    else this.#queues.set(p, [{ k, r }]);
    this.#count++;
  }

  /**
   * Writes held answers in order: per producer, `place(p, k, r)` for its oldest until one finds
   * no room (returns false; it stays first). Returns how many were placed.
   */
  place(place: (p: number, k: number, r: R) => boolean): number {
    let placed = 0;
    for (const [p, q] of this.#queues) {
      while (q.length > 0 && place(p, q[0].k, q[0].r)) {
        q.shift();
        placed++;
      }
      if (q.length === 0) this.#queues.delete(p);
    }
    this.#count -= placed;
    return placed;
  }

  /** Removes and returns producer p's held answers (it died or left; or the agent closes). */
  drop(p: number): HeldAnswer<R>[] {
    const q = this.#queues.get(p) ?? [];
    this.#queues.delete(p);
    this.#count -= q.length;
    return q;
  }
}
