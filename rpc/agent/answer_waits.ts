/**
 * How an agent client waits for the agent's answers when none is ready: first a nap — its thread
 * blocks in a futex wait on its doorbell that the agent's wake-up ends, at most `napUs` — and,
 * when a nap ends at its bound, a parked wait (off-thread, the event loop running). A nap costs
 * one switch into the kernel and back; a parked wait costs a hand-off to a pool thread, its
 * futex wait, and the way back through the event loop. Naps that keep missing (answers slower
 * than a nap, or what answers them waits for this very thread, e.g. a server on it) back off:
 * after the n-th miss in a row the next 1, 3, 7 … 255 waits park.
 *
 * Threading: the agent client's JS thread.
 * @module
 */
import type { AgentRingProducer } from "../../transport/agent_ring/mod.ts";

/** The most parked waits between naps after naps kept missing. */
const BACKOFF_MAX = 255;
/** A parked wait's bound (ms): the caller looks at deadlines and the agent's life between. */
const PARK_MS = 100;

/** See the module documentation. */
export class AnswerWaits {
  /** Naps taken, naps that ended at their bound, parked waits. */
  naps = 0;
  napMisses = 0;
  parks = 0;
  #missed = false;
  #skip = 0;
  #backoff = 0;
  #parked: Promise<boolean> | null = null;

  /** `napUs`: the longest nap (0: never nap, always park). */
  constructor(readonly napUs: number) {}

  /**
   * Waits for the agent to move `port`'s doorbell past `seen`: naps (returns null, having
   * blocked) or parks (returns the parked wait to await).
   */
  wait(port: AgentRingProducer, seen: number): Promise<boolean> | null {
    if (this.napUs > 0 && !this.#missed && this.#skip === 0) {
      this.naps++;
      this.#missed = !port.nap(seen, this.napUs);
      if (this.#missed) {
        this.napMisses++;
        this.#backoff = Math.min(2 * this.#backoff + 1, BACKOFF_MAX);
        this.#skip = this.#backoff;
      } else this.#backoff = 0;
      return null;
    }
    if (!this.#missed && this.#skip > 0) this.#skip--;
    this.#missed = false;
    this.parks++;
    return this.#parked ??= port.wait(seen, PARK_MS).finally(() => (this.#parked = null));
  }
}
