/**
 * brpc's cluster recover policy (`rr` and `random` with `min_working_instances=N hold_seconds=S`):
 * when a call finds no usable server at all, the cluster enters recovery. While it recovers, a
 * call goes ahead with probability `usable / min_working_instances` and is otherwise rejected
 * (brpc's EREJECT; never retried), so the first servers back are not flattened by the whole
 * load before the others return. Recovery ends once the count of usable servers, not zero, has
 * held still for more than `hold_seconds`. As in brpc, the count is taken when calls ask, and a
 * change of it restarts the hold.
 *
 * Pure state, the clock and randomness injectable. Threading: the JS thread of its cluster client.
 * @module
 */
import { randomBelow, type RandomSource } from "./lb_params.ts";

/** What {@link ClusterRecoverPolicy} may be given besides its parameters. */
export interface RecoverDeps {
  /** Randomness of the admission draw (default `Math.random`). */
  random?: RandomSource;
  /** The clock, ms (default `performance.now()`). */
  nowMs?: () => number;
}

/** See the module documentation. */
export class ClusterRecoverPolicy {
  readonly minWorkingInstances: number;
  readonly holdSeconds: number;
  readonly #random: RandomSource;
  readonly #nowMs: () => number;
  #recovering = false;
  /** The usable count last seen while recovering, and when it last changed (null: not yet). */
  #lastUsable = 0;
  #changedAt: number | null = null;

  /** `minWorkingInstances` and `holdSeconds` are positive (validated by `lb_params.ts`). */
  constructor(minWorkingInstances: number, holdSeconds: number, deps: RecoverDeps = {}) {
    this.minWorkingInstances = minWorkingInstances;
    this.holdSeconds = holdSeconds;
    this.#random = deps.random ?? Math.random;
    this.#nowMs = deps.nowMs ?? (() => performance.now());
  }

  /**
   * The policy of a balancer's parameters (`{ min_working_instances, hold_seconds }`), or null
   * when it has none (other balancers, or `rr` without them).
   */
  static of(
    params: Readonly<Record<string, number>> | undefined,
    deps: RecoverDeps = {},
  ): ClusterRecoverPolicy | null {
    const min = params?.min_working_instances, hold = params?.hold_seconds;
    return min && hold ? new ClusterRecoverPolicy(min, hold, deps) : null;
  }

  /** Whether the cluster is recovering now. */
  get recovering(): boolean {
    return this.#recovering;
  }

  /** A call found no usable server in a cluster that names some: recovery starts. */
  startRecover(): void {
    this.#recovering = true;
  }

  /**
   * Whether to reject the call about to select a server, `usable` being the servers usable now
   * (in rotation). Outside recovery: never. Ends the recovery once `usable` (not zero) has not
   * changed for more than `holdSeconds`.
   */
  reject(usable: number): boolean {
    if (!this.#recovering) return false;
    const now = this.#nowMs();
    if (
      this.#changedAt !== null && this.#lastUsable !== 0 &&
      now - this.#changedAt > this.holdSeconds * 1000
    ) {
      this.#recovering = false;
      this.#lastUsable = 0;
      this.#changedAt = null;
      return false;
    }
    if (this.#lastUsable !== usable) {
      this.#lastUsable = usable;
      this.#changedAt = now;
    }
    return randomBelow(this.#random, this.minWorkingInstances) >= usable;
  }
}
