/**
 * Load balancers: which server of a cluster takes the next call, as brpc's `LoadBalancer` and
 * grpc-js's pickers have it. A balancer is named as in brpc, parameters after a colon
 * (`rr`, `random`, `wrr`, `wr`, `la`, `p2c`, `c_murmurhash`, `pick_first`,
 * `rr:min_working_instances=6 hold_seconds=10`). Each lives in a file of its own
 * (`lb_<name>.ts`) and registers itself in {@link BALANCERS}; this file holds the contract and
 * the name parser only.
 *
 * The cluster client owns health: it gives the balancer the servers in rotation
 * ({@link LoadBalancer.setServers}) and, per call, the ones already tried or isolated
 * (`excluded`), and reports each finished call back ({@link LoadBalancer.feedback}).
 *
 * Threading: the JS thread of its cluster client. `select` and `feedback` are on the data path:
 * no allocation per call.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { ServerNode } from "./naming.ts";

/** What {@link LoadBalancer.select} knows of a call. */
export interface SelectRequest {
  /**
   * The call's request code (brpc's `Controller::set_request_code`): the consistent-hashing
   * balancers need one, the others ignore it. An unsigned 64-bit value.
   */
  requestCode?: bigint;
  /** Addresses not to pick (tried already by this call, or isolated). */
  excluded: ReadonlySet<string>;
}

/** A balancer over the servers its cluster client gives it. */
export interface LoadBalancer {
  /** Its name as written, parameters included (`wrr`, `rr:hold_seconds=10`). */
  readonly name: string;
  /**
   * Its validated parameters by brpc's names (`{ min_working_instances: 6, hold_seconds: 10 }`,
   * `{ replicas: 100 }`), defaults filled in. Those whose behaviour belongs to the cluster client
   * (brpc's cluster recover policy) are only parsed here, for the client to apply
   * (`cluster_recover.ts`).
   */
  readonly params?: Readonly<Record<string, number>>;
  /** Replaces the servers it picks among (in naming-service order). */
  setServers(servers: readonly ServerNode[]): void;
  /**
   * The address of the server for the next call, or null when no server is eligible (none, or
   * all excluded). Throws INVALID_ARGUMENT when the balancer needs a request code and the call
   * has none.
   */
  select(request: SelectRequest): string | null;
  /** A call to `address` finished after `latencyUs` µs, `ok` or failed (la and p2c learn). */
  feedback(address: string, latencyUs: number, ok: boolean): void;
}

/** Makes a balancer from its parsed parameters. Throws INVALID_ARGUMENT naming a bad one. */
export type BalancerFactory = (
  name: string,
  params: Readonly<Record<string, string>>,
) => LoadBalancer;

/** The balancers by name. Each `lb_<name>.ts` adds itself. */
export const BALANCERS: Map<string, BalancerFactory> = new Map();

/**
 * Splits brpc's balancer syntax `NAME[:k=v k=v …]` (spaces between parameters, as in brpc's
 * `LoadBalancerWithNaming::Init`). Throws INVALID_ARGUMENT naming a malformed part.
 */
export function parseBalancerName(spec: string): { name: string; params: Record<string, string> } {
  const colon = spec.indexOf(":");
  const name = (colon < 0 ? spec : spec.slice(0, colon)).trim();
  const params: Record<string, string> = {};
  if (!/^[a-z_0-9]+$/.test(name)) {
    throw new VerbusError("INVALID_ARGUMENT", `load balancer "${spec}": no name before the ":"`);
  }
  for (const part of colon < 0 ? [] : spec.slice(colon + 1).trim().split(/\s+/).filter(Boolean)) {
    const eq = part.indexOf("=");
    if (eq <= 0 || eq === part.length - 1) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `load balancer "${spec}": parameter "${part}" is not KEY=VALUE`,
      );
    }
    params[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return { name, params };
}

/**
 * The balancer `spec` names. Throws INVALID_ARGUMENT for an unknown name (naming those that
 * exist) or a bad parameter.
 */
export function loadBalancer(spec: string): LoadBalancer {
  const { name, params } = parseBalancerName(spec);
  const factory = BALANCERS.get(name);
  if (!factory) {
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `load balancer "${name}": expected one of ${[...BALANCERS.keys()].join(", ")}`,
    );
  }
  return factory(spec, params);
}
