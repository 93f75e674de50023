/**
 * `rr`: brpc's round robin. Each call takes the next server in order, skipping excluded ones, so
 * every server gets an equal share. The walk starts at a random server (as brpc's does for each
 * new thread) so that many clients started together do not all begin on the first server.
 * Parameters: brpc's cluster recover policy (`min_working_instances`, `hold_seconds`), parsed
 * and exposed in `params` for the cluster client to apply (`cluster_recover.ts`).
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

/** brpc's `rr` (see the module documentation). */
export class RoundRobinBalancer implements LoadBalancer {
  readonly name: string;
  readonly params: Readonly<Record<string, number>>;
  readonly #random: RandomSource;
  /** The servers in naming-service order; owned here, refilled by setServers. */
  readonly #addresses: string[] = [];
  /** Index of the server picked last; -1 before the first pick. */
  #offset = -1;

  constructor(name: string, params: Readonly<Record<string, string>>, deps: BalancerDeps = {}) {
    onlyParams(name, params, ["min_working_instances", "hold_seconds"]);
    this.name = name;
    this.params = recoverParams(name, params);
    this.#random = deps.random ?? Math.random;
  }

  setServers(servers: readonly ServerNode[]): void {
    this.#addresses.length = 0;
    for (const s of servers) this.#addresses.push(s.address);
    if (this.#offset >= servers.length) this.#offset %= Math.max(1, servers.length);
  }

  select(request: SelectRequest): string | null {
    const a = this.#addresses;
    const n = a.length;
    if (n === 0) return null;
    if (this.#offset < 0) this.#offset = randomBelow(this.#random, n);
    for (let i = 0, at = this.#offset; i < n; i++) {
      at = at + 1 === n ? 0 : at + 1;
      if (!request.excluded.has(a[at])) {
        this.#offset = at;
        return a[at];
      }
    }
    return null;
  }

  feedback(_address: string, _latencyUs: number, _ok: boolean): void {}
}

/** The factory {@link ./registry.ts} registers as `rr`. */
export function roundRobin(name: string, params: Readonly<Record<string, string>>): LoadBalancer {
  return new RoundRobinBalancer(name, params);
}
