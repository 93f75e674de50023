/**
 * Test fixture: an in-memory shared completion queue for fake QPs (`fake_qp.ts`), with the verbs
 * hub's contract — one readiness source for every QP on it: `collect` drains every QP's
 * completions into the sink it was attached to and announces the tokens of those attached with
 * `announce`; `wait` sleeps until a completion is queued or `wake()`.
 */
import type { ReadinessSource } from "../../transport/readiness.ts";
import type { FakeQp, SharedCq } from "./fake_qp.ts";

/** See the module doc. */
export class FakeSharedCq implements SharedCq, ReadinessSource {
  readonly kind = "verbs" as const;
  readonly capacity = 1024;
  readonly source: ReadinessSource = this;
  /** Collects / sleeps taken / QPs on it now. */
  readonly counters = { collects: 0, sleeps: 0 };
  readonly #qps = new Map<number, FakeQp>();
  #doorbell = 0;
  #waiter: (() => void) | null = null;

  get members(): number {
    return this.#qps.size;
  }

  join(qp: FakeQp): number {
    const token = this.#qps.size;
    this.#qps.set(token, qp);
    return token;
  }

  leave(qp: FakeQp): void {
    for (const [t, q] of this.#qps) if (q === qp) this.#qps.delete(t);
  }

  completed(): void {
    this.#doorbell++;
    const w = this.#waiter;
    this.#waiter = null;
    w?.();
  }

  collect(out: Uint32Array): number {
    this.counters.collects++;
    let n = 0;
    for (const [token, qp] of this.#qps) {
      if (qp.sink === null || qp.queued === 0) continue;
      qp.poll(qp.sink);
      if (qp.announce) out[n++] = token;
    }
    return n;
  }

  doorbell(): number {
    return this.#doorbell;
  }

  wait(seen: number, timeoutMs: number): Promise<boolean> {
    if (this.#doorbell !== seen) return Promise.resolve(true);
    this.counters.sleeps++;
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.#waiter = null;
        resolve(false);
      }, timeoutMs);
      this.#waiter = () => {
        clearTimeout(t);
        resolve(true);
      };
    });
  }

  wake(): void {
    this.completed();
  }
}
