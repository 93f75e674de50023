/**
 * Options, call options and results of a cluster client (`cluster_client.ts`): one zod schema is
 * the source of the types, the defaults (brpc's where brpc has one) and the error messages.
 * @module
 */
import { z } from "zod";
import type {
  ClientCallOptions,
  ClientCallResult,
  ClientOptions,
} from "../client/client_options.ts";

type Opt<T extends z.ZodType> = z.ZodOptional<T>;
type Def<T extends z.ZodType> = z.ZodDefault<T>;

/** The fields of {@link clusterOptionsSchema}, written out (JSR's no-slow-types rule). */
export type ClusterOptionsShape = {
  lb: Def<z.ZodString>;
  maxRetry: Def<z.ZodNumber>;
  backupRequestMs: Opt<z.ZodNumber>;
  healthCheckMs: Def<z.ZodNumber>;
  timeoutMs: Def<z.ZodNumber>;
  resolveTimeoutMs: Def<z.ZodNumber>;
  naming: Def<
    z.ZodObject<{
      pollMs: Opt<z.ZodNumber>;
      timeoutMs: Opt<z.ZodNumber>;
      dnsServers: Opt<z.ZodArray<z.ZodString>>;
      fileWatch: Opt<z.ZodBoolean>;
      consulAgent: Opt<z.ZodString>;
      consulToken: Opt<z.ZodString>;
      consulParams: Opt<z.ZodString>;
      consulWaitS: Opt<z.ZodNumber>;
      retryMs: Opt<z.ZodNumber>;
      idleMs: Opt<z.ZodNumber>;
      maxBackoffMs: Opt<z.ZodNumber>;
    }, z.core.$strict>
  >;
  server: Def<z.ZodRecord<z.ZodString, z.ZodUnknown>>;
  maxFabricSessions: Opt<z.ZodNumber>;
  circuitBreaker: Def<z.ZodBoolean>;
  log: Opt<z.ZodCustom<(line: string) => void, (line: string) => void>>;
};

/** Options of `connect(NAMING_URL, options)`; unknown keys are rejected, messages name the field. */
export const clusterOptionsSchema: z.ZodObject<ClusterOptionsShape, z.core.$strict> = z.object({
  /** The load balancer, in brpc's syntax (`rr`, `wrr`, `c_murmurhash`, `rr:k=v …`). */
  lb: z.string().min(1).default("rr"),
  /**
   * Attempts after the first on another server when a call could not have been applied: the
   * connection could not be made, the server refused it unrun (ELOGOFF, ELIMIT, EOVERCROWDED),
   * or — for calls marked `idempotent` — the connection broke with the call in flight. Never on
   * a deadline, never on the server's answer (brpc's `max_retry`, default 3).
   */
  maxRetry: z.number().int().min(0).max(16).default(3),
  /**
   * Without an answer after this many ms, send a copy to a server not tried yet; the first
   * answer wins (brpc's `backup_request_ms`; it takes one retry). Only for calls that may run
   * twice: a backup can be applied as well as the original.
   */
  backupRequestMs: z.number().int().min(1).max(600_000).optional(),
  /** How often a broken server is probed (a connection attempt), ms (brpc: 3 s). */
  healthCheckMs: z.number().int().min(10).max(600_000).default(3000),
  /** The deadline of a call whose options name none, retries included, ms. */
  timeoutMs: z.number().int().min(1).max(3_600_000).default(5000),
  /** How long `connect` waits for the naming service's first list, ms. */
  resolveTimeoutMs: z.number().int().min(1).max(600_000).default(5000),
  /**
   * Options of the naming service: those every service takes (poll interval, the timeout of one
   * question) and each scheme's own (checked by that service): `dnsServers` (dns), `fileWatch`
   * (file), `consulAgent`, `consulToken`, `consulParams`, `consulWaitS`, `retryMs` (consul),
   * `idleMs`, `maxBackoffMs` (etcd, consul). A key no service knows is refused here.
   */
  naming: z.object({
    pollMs: z.number().int().min(10).max(3_600_000).optional(),
    timeoutMs: z.number().int().min(1).max(600_000).optional(),
    dnsServers: z.array(z.string()).optional(),
    fileWatch: z.boolean().optional(),
    consulAgent: z.string().optional(),
    consulToken: z.string().optional(),
    consulParams: z.string().optional(),
    consulWaitS: z.number().optional(),
    retryMs: z.number().optional(),
    idleMs: z.number().optional(),
    maxBackoffMs: z.number().optional(),
  }).strict().default({}),
  /** `connect()` options of each server's direct client (validated when it connects). */
  server: z.record(z.string(), z.unknown()).default({}),
  /** Fabric sessions this process opens at most across every cluster (past it: TCP). */
  maxFabricSessions: z.number().int().min(0).max(1 << 20).optional(),
  /** Whether an error-rate circuit breaker isolates failing servers (brpc's defaults). */
  circuitBreaker: z.boolean().default(true),
  /**
   * Where the cluster's events go (a server broken, back, isolated). Default: stderr, as
   * `verbus cluster URL: …`.
   */
  log: z.custom<(line: string) => void>((v) => typeof v === "function", "expected a function")
    .optional(),
}).strict();

/** Cluster options as users write them. */
export type ClusterOptions = z.input<typeof clusterOptionsSchema>;
/** Cluster options after validation. */
export type ClusterSettings = z.output<typeof clusterOptionsSchema> & { server: ClientOptions };

/** Options of one call through a cluster. */
export interface ClusterCallOptions extends ClientCallOptions {
  /** The request code the consistent-hashing balancers route by (an unsigned 64-bit value). */
  requestCode?: bigint | number;
  /**
   * The call may run twice: retried when the connection broke with it in flight, and eligible
   * for a backup request. Default false.
   */
  idempotent?: boolean;
}

/** A call's answer through a cluster: which server answered and after how many attempts. */
export interface ClusterCallResult extends ClientCallResult {
  /** The `host:port` of the server that answered. */
  server: string;
  /** Servers asked (1: the first answered; a backup request counts). */
  attempts: number;
}

/** Counters of a cluster client. */
export interface ClusterStats {
  /** Servers the naming service names now. */
  servers: number;
  /** Of them, in rotation now (not broken, not isolated). */
  inRotation: number;
  /** Calls answered, by server. */
  answered: Record<string, number>;
  /** Attempts after a first one (retries and backup requests). */
  retries: number;
  /** Backup requests sent. */
  backups: number;
  /** Calls the recover policy rejected while the cluster recovered (brpc's EREJECT). */
  rejected: number;
  /** Servers marked broken (a connection failed), and isolated by the breaker, so far. */
  broken: number;
  isolated: number;
  /** Naming-service failures (the last list stayed in force). */
  namingErrors: number;
}
