/**
 * `wr`: brpc's weighted random. Each call draws a unit of `sum(weights)` uniformly and takes the
 * server that holds it, so a server's share is its weight over the sum; an excluded draw is drawn
 * again (at most once per server), then the servers are walked from a random one for any that is
 * eligible. The weight is the server's tag (`1.2.3.4:80 3`). No parameters (brpc's `wr` takes
 * none).
 *
 * Threading: the JS thread of its cluster client. `select` and `feedback` allocate nothing.
 * @module
 */
import type { LoadBalancer, SelectRequest } from "./balancer.ts";
import type { ServerNode } from "./naming.ts";
import { type BalancerDeps, onlyParams, randomBelow, type RandomSource } from "./lb_params.ts";

/** brpc's `wr` (see the module documentation). */
export class WeightedRandomBalancer implements LoadBalancer {
  readonly name: string;
  readonly params: Readonly<Record<string, number>> = {};
  readonly #random: RandomSource;
  #addresses: string[] = [];
  /** Inclusive prefix sums of the weights: server i holds units [ends[i-1], ends[i]). */
  #ends: Float64Array = new Float64Array(0);

  constructor(name: string, params: Readonly<Record<string, string>>, deps: BalancerDeps = {}) {
    onlyParams(name, params, []);
    this.name = name;
    this.#random = deps.random ?? Math.random;
  }

  setServers(servers: readonly ServerNode[]): void {
    this.#addresses = servers.map((s) => s.address);
    this.#ends = new Float64Array(servers.length);
    let sum = 0;
    for (let i = 0; i < servers.length; i++) this.#ends[i] = sum += servers[i].weight;
  }

  select(request: SelectRequest): string | null {
    const a = this.#addresses;
    const n = a.length;
    if (n === 0) return null;
    const ends = this.#ends;
    const sum = ends[n - 1];
    for (let i = 0; i < n; i++) {
      const unit = randomBelow(this.#random, sum);
      // The first server whose end is past the unit (upper bound).
      let lo = 0, hi = n - 1;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (ends[mid] > unit) hi = mid;
        else lo = mid + 1;
      }
      if (!request.excluded.has(a[lo])) return a[lo];
    }
    for (let i = 0, at = randomBelow(this.#random, n); i < n; i++, at = at + 1 === n ? 0 : at + 1) {
      if (!request.excluded.has(a[at])) return a[at];
    }
    return null;
  }

  feedback(_address: string, _latencyUs: number, _ok: boolean): void {}
}

/** The factory {@link ./registry.ts} registers as `wr`. */
export function weightedRandom(
  name: string,
  params: Readonly<Record<string, string>>,
): LoadBalancer {
  return new WeightedRandomBalancer(name, params);
}
