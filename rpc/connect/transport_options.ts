/**
 * The options of `createVerbusTransport()` (`transport.ts`), one schema per kind of target as
 * `connect()` (rpc/client/client.ts) dispatches them — one server (`host`/`port` or `HOST:PORT`), the
 * same-host agent (`agent:NAME`), a naming service (`SCHEME://…`: the cluster's options) — and
 * {@link transportTarget}, which validates them at once and says what to connect to.
 *
 * Pure; any thread.
 * @module
 */
import type { Interceptor } from "@connectrpc/connect";
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import { parseOptions } from "../../util/options.ts";
import {
  type AgentClientOptions,
  agentClientOptionsSchema,
} from "../agent/agent_client_options.ts";
import { type ClusterOptions, clusterOptionsSchema } from "../cluster/cluster_options.ts";
import { addressKind } from "../client/client.ts";
import { parseAddress } from "../tcp/channel_options.ts";
import { type ClientOptions, connectOptionsSchema } from "../client/client_options.ts";

export const interceptorSchema: z.ZodCustom<Interceptor, Interceptor> = z.custom<Interceptor>(
  (v) => typeof v === "function",
  {
    message: "expected an interceptor function (next) => (req) => Promise<response>",
  },
);

const interceptorsField = z.array(interceptorSchema).default([]);

/**
 * Options of `createVerbusTransport()` to one server: where (`host` and `port`, or `target`
 * `"HOST:PORT"`), interceptors, and `connect()` options.
 */
export const verbusTransportOptionsSchema: z.ZodObject<
  (typeof connectOptionsSchema)["shape"] & {
    host: z.ZodOptional<z.ZodString>;
    port: z.ZodOptional<z.ZodNumber>;
    target: z.ZodOptional<z.ZodString>;
    interceptors: z.ZodDefault<z.ZodArray<typeof interceptorSchema>>;
  },
  z.core.$strict
> = connectOptionsSchema.extend({
  /** The server's host (name or address); with `port`, instead of `target`. */
  host: z.string().min(1).optional(),
  /** The server's baidu_std (TCP) port. */
  port: z.number().int().min(1).max(65535).optional(),
  /** What to call, as `connect()` takes it: `HOST:PORT`, `agent:NAME` or a naming-service URL. */
  target: z.string().min(1).optional(),
  /** Connect interceptors, applied to every call (the last one runs first, as in Connect). */
  interceptors: interceptorsField,
}).strict();

/** The same through a naming service: the cluster's options (rpc/cluster/cluster_options.ts). */
const clusterTransportSchema = clusterOptionsSchema.extend({
  target: z.string().min(1),
  interceptors: interceptorsField,
}).strict();

/** The same through the same-host agent: the agent client's options. */
const agentTransportSchema = agentClientOptionsSchema.extend({
  target: z.string().min(1),
  interceptors: interceptorsField,
}).strict();

/**
 * Input of `createVerbusTransport()` to one server: `{ host, port, ...ClientOptions }` or
 * `{ target: "HOST:PORT", ...ClientOptions }`, and `interceptors`.
 */
export type VerbusTransportOptions = ClientOptions & {
  /** The server's host (name or address); with `port`, instead of `target`. */
  host?: string;
  /** The server's baidu_std (TCP) port. */
  port?: number;
  /** `HOST:PORT` (`[v6]:PORT`), instead of `host` and `port`. */
  target?: string;
  /** Connect interceptors, applied to every call. */
  interceptors?: Interceptor[];
};

/**
 * Input of `createVerbusTransport()` over many servers: a naming-service `target`
 * (`list://a:1,b:2`, `file://…`, `dns://…`, `etcd://…`, `consul://…`) and the cluster client's
 * options (`lb`, `maxRetry`, `backupRequestMs`, `healthCheckMs`, `server`: each server's
 * `connect()` options, …).
 */
export type VerbusClusterTransportOptions = ClusterOptions & {
  /** The naming-service URL. */
  target: `${string}://${string}`;
  /** Connect interceptors, applied to every call. */
  interceptors?: Interceptor[];
};

/** Input of `createVerbusTransport()` through the same-host agent NAME (`verbus agent`). */
export type VerbusAgentTransportOptions = AgentClientOptions & {
  /** `agent:NAME`. */
  target: `agent:${string}`;
  /** Connect interceptors, applied to every call. */
  interceptors?: Interceptor[];
};

/** What {@link transportTarget} found: where to connect, the interceptors, `connect()`'s options. */
export interface TransportTarget {
  /** `{host, port}` for one server, else the `agent:NAME` or naming-service target. */
  address: string | { host: string; port: number };
  interceptors: Interceptor[];
  /** The options as the caller gave them, less host, port, target and interceptors. */
  clientOptions: ClientOptions | ClusterOptions | AgentClientOptions;
}

/**
 * Validates `createVerbusTransport()`'s options with the schema of the kind its target names
 * (throws INVALID_OPTIONS naming the bad field: an unknown key, a bad value, both a target and
 * host/port, neither, a one-server target that is not HOST:PORT).
 */
export function transportTarget(options: unknown): TransportTarget {
  const what = "invalid createVerbusTransport() options";
  const target = (options as { target?: unknown } | null)?.target;
  const kind = typeof target === "string" ? addressKind(target) : "direct";
  const schema = kind === "cluster"
    ? clusterTransportSchema
    : kind === "agent"
    ? agentTransportSchema
    : verbusTransportOptionsSchema;
  const o = parseOptions(schema, options, what) as { interceptors: Interceptor[] };
  const { host, port, target: _t, interceptors: _i, ...clientOptions } =
    options as VerbusTransportOptions;
  let address: string | { host: string; port: number };
  if (typeof target === "string") {
    if (host !== undefined || port !== undefined) {
      throw new VerbusError("INVALID_OPTIONS", `${what}: give target or host and port, not both`);
    }
    // One server: checked here, as host and port are, rather than at the first call.
    address = kind === "direct" ? parseTarget(target, what) : target;
  } else {
    if (host === undefined || port === undefined) {
      throw new VerbusError(
        "INVALID_OPTIONS",
        `${what}: field ${host === undefined ? "host" : "port"}: give host and port, or target`,
      );
    }
    address = { host, port };
  }
  return { address, interceptors: o.interceptors, clientOptions };
}

/** `HOST:PORT` as `{host, port}`; INVALID_OPTIONS naming the target when it is not one. */
function parseTarget(target: string, what: string): { host: string; port: number } {
  try {
    return parseAddress(target);
  } catch {
    throw new VerbusError(
      "INVALID_OPTIONS",
      `${what}: field target: ${JSON.stringify(target)} is none of HOST:PORT, agent:NAME, ` +
        "SCHEME://… (a naming service)",
    );
  }
}
