/**
 * The front door: `connect(address)` gives the client kind the address names, each an
 * {@link RpcClient} — `HOST:PORT` (or `{host, port}`): a direct client of that server
 * (`direct_client.ts`); `agent:NAME`: the same-host agent NAME (`rpc/agent/agent_client.ts`); a
 * naming-service URL (`list://`, `file://`, `dns://`, `etcd://`, `consul://`): a cluster client
 * over the servers it names (`cluster/cluster_client.ts`). The kinds never import one another:
 * this file is the one place that knows them all.
 *
 * Threading: a client belongs to the JS thread that created it.
 * @module
 */
import type { AgentClient, AgentClientOptions } from "../agent/agent_client.ts";
import type { ClusterClient, ClusterOptions } from "../cluster/cluster_client.ts";
import { Client, connectDirect } from "./direct_client.ts";
import type { ClientOptions } from "./client_options.ts";

export { Client, connectDirect };
export { connectOptionsSchema, faultsSchema } from "./direct_client.ts";
export type {
  BatchCall,
  ClientCallOptions,
  ClientCallResult,
  ClientOptions,
  ClientStats,
} from "./direct_client.ts";
export { ClientBase, type RpcClient } from "./rpc_client.ts";
export { ENOSERVICE, RpcError } from "../errors.ts";

/**
 * Connects to what `address` names. `HOST:PORT` (or `{host, port}`): a verbus (or brpc) server —
 * TCP first, then the fabric handshake (unless `fabric: "tcp"`); a refused or failed handshake
 * leaves the client on TCP, with the reason in `client.handshake`. `agent:NAME`: joins the
 * same-host agent NAME (`verbus agent`) — the same call API, every call forwarded over the
 * agent's one connection. A naming-service URL (`SCHEME://…`): the servers it names, each call
 * balanced (`lb`), retried and reported with its `server` and `attempts`. With `shared: true`, a
 * `HOST:PORT` client is the process's one client of that server, which cluster clients and
 * Connect transports naming it use too (`rpc/cluster/shared_client.ts`). Options are validated
 * (INVALID_OPTIONS names the bad field).
 */
export async function connect(
  address: `agent:${string}`,
  options?: AgentClientOptions,
): Promise<AgentClient>;
/** (See above: a naming-service URL yields a ClusterClient.) */
export async function connect(
  address: `${string}://${string}`,
  options?: ClusterOptions,
): Promise<ClusterClient>;
/** (See above; an `agent:NAME` address typed as plain `string` still yields an AgentClient.) */
export async function connect(
  address: string | { host: string; port: number },
  options?: ClientOptions,
): Promise<Client>;
export async function connect(
  address: string | { host: string; port: number },
  options: ClientOptions | AgentClientOptions | ClusterOptions = {},
): Promise<Client | AgentClient | ClusterClient> {
  const kind = addressKind(address);
  if (kind === "agent") {
    // The same-host agent (rpc/agent/): loaded only when asked for.
    const { connectAgent } = await import("../agent/agent_client.ts");
    return await connectAgent((address as string).slice(6), options as AgentClientOptions);
  }
  if (kind === "cluster") {
    // A naming service: the servers it names (rpc/cluster/), loaded only when asked for.
    const { connectCluster } = await import("../cluster/cluster_client.ts");
    return await connectCluster(address as string, options as ClusterOptions);
  }
  if ((options as ClientOptions).shared) {
    // The process's one client of that server, shared with clusters and transports.
    const { connectShared } = await import("../cluster/shared_client.ts");
    return await connectShared(address, options as ClientOptions);
  }
  return await connectDirect(address, options as ClientOptions);
}

/**
 * Which client kind {@link connect} makes for `address`: `"agent"` (`agent:NAME`), `"cluster"`
 * (a naming-service URL, `SCHEME://…`) or `"direct"` (`HOST:PORT`, `{host, port}`). Other front
 * doors (the Connect transport) ask this, so that every one dispatches the same way. Pure.
 */
export function addressKind(
  address: string | { host: string; port: number },
): "agent" | "cluster" | "direct" {
  if (typeof address !== "string") return "direct";
  if (address.startsWith("agent:")) return "agent";
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(address) ? "cluster" : "direct";
}
