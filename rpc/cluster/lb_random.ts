/**
 * `random`: brpc's randomized balancer. Each call takes a uniformly random server; when that one
 * is excluded it walks on from there to the next eligible one, so one call looks at each server
 * at most once. Parameters: brpc's cluster recover policy (`min_working_instances`,
 * `hold_seconds`), parsed and exposed in `params` for the cluster client to apply
 * (`cluster_recover.ts`).
 *
 * Threading: the JS thread of its cluster client. `select` and `feedback` allocate nothing.
 * @module
 */
import type { LoadBalancer, SelectRequest } from "./balancer.ts";
import type { ServerNode } from "./naming.ts";
import {
  type BalancerDeps,
  onlyParams,
  randomBelow,
  type RandomSource,
  recoverParams,
} from "./lb_params.ts";

/** brpc's `random` (see the module documentation). */
export class RandomBalancer implements LoadBalancer {
  readonly name: string;
  readonly params: Readonly<Record<string, number>>;
  readonly #random: RandomSource;
  /** The servers in naming-service order; owned here, refilled by setServers. */
  readonly #addresses: string[] = [];

  constructor(name: string, params: Readonly<Record<string, string>>, deps: BalancerDeps = {}) {
    onlyParams(name, params, ["min_working_instances", "hold_seconds"]);
    this.name = name;
    this.params = recoverParams(name, params);
    this.#random = deps.random ?? Math.random;
  }

  setServers(servers: readonly ServerNode[]): void {
    this.#addresses.length = 0;
    for (const s of servers) this.#addresses.push(s.address);
  }

  select(request: SelectRequest): string | null {
    const a = this.#addresses;
    const n = a.length;
    if (n === 0) return null;
    for (let i = 0, at = randomBelow(this.#random, n); i < n; i++, at = at + 1 === n ? 0 : at + 1) {
      if (!request.excluded.has(a[at])) return a[at];
    }
    return null;
  }

  feedback(_address: string, _latencyUs: number, _ok: boolean): void {}
}

/** The factory {@link ./registry.ts} registers as `random`. */
export function randomized(name: string, params: Readonly<Record<string, string>>): LoadBalancer {
  return new RandomBalancer(name, params);
}
