/**
 * `pick_first`: grpc-js's default policy. Every call goes to the first server of the list (in
 * naming-service order) that is not excluded; the others are spares. The cluster client takes a
 * broken or isolated server out of the list, so calls move to the next one and come back when it
 * returns. No parameters.
 *
 * Threading: the JS thread of its cluster client. `select` and `feedback` allocate nothing.
 * @module
 */
import type { LoadBalancer, SelectRequest } from "./balancer.ts";
import type { ServerNode } from "./naming.ts";
import { onlyParams } from "./lb_params.ts";

/** grpc-js's `pick_first` (see the module documentation). */
export class PickFirstBalancer implements LoadBalancer {
  readonly name: string;
  readonly params: Readonly<Record<string, number>> = {};
  /** The servers in naming-service order; owned here, refilled by setServers. */
  readonly #addresses: string[] = [];

  constructor(name: string, params: Readonly<Record<string, string>>) {
    onlyParams(name, params, []);
    this.name = name;
  }

  setServers(servers: readonly ServerNode[]): void {
    this.#addresses.length = 0;
    for (const s of servers) this.#addresses.push(s.address);
  }

  select(request: SelectRequest): string | null {
    const a = this.#addresses;
    for (let i = 0; i < a.length; i++) if (!request.excluded.has(a[i])) return a[i];
    return null;
  }

  feedback(_address: string, _latencyUs: number, _ok: boolean): void {}
}

/** The factory {@link ./registry.ts} registers as `pick_first`. */
export function pickFirst(name: string, params: Readonly<Record<string, string>>): LoadBalancer {
  return new PickFirstBalancer(name, params);
}
