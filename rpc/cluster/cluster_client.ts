/**
 * The cluster client: `connect("etcd://…/demo", { lb: "rr" })` (or `list://`, `file://`,
 * `dns://`, `consul://`) — the same {@link RpcClient} as one server, over every server a naming
 * service names. Per call, the balancer picks a server in rotation (`cluster_members.ts`: broken
 * servers are probed, the circuit breaker isolates failing ones); the call goes through that
 * server's shared direct client (`server_pool.ts`: one TCP connection and one fabric session per
 * server per process, so a same-host server rides shm and a remote one verbs/URMA or TCP, each
 * on its own, and a fabric failure on one server moves only that server's calls to its TCP path).
 *
 * Retries follow brpc: up to `maxRetry` more servers when the call cannot have been applied
 * (the connection could not be made; the server refused it unrun: ELOGOFF, ELIMIT, EOVERCROWDED)
 * and, for calls marked `idempotent`, when the connection broke with the call in flight; never
 * on a deadline, never on the server's own answer. `backupRequestMs` sends a copy of a slow
 * idempotent call to a server not tried yet; the first answer wins. Each result names its
 * `server` and its `attempts`.
 *
 * A call that finds no server to take it fails with UNAVAILABLE (Connect's `Unavailable`): none
 * named, none in rotation, or — with brpc's recover policy (`rr:min_working_instances=N
 * hold_seconds=S`, `cluster_recover.ts`) — rejected while the cluster recovers from having none.
 *
 * Threading: the JS thread that created it.
 * @module
 */
import { TimeoutError, VerbusError } from "../../errors.ts";
import { parseOptions } from "../../util/options.ts";
import { ELIMIT, ELOGOFF, EOVERCROWDED, RpcError } from "../errors.ts";
import { CircuitBreaker } from "./breaker.ts";
import type { ClientCallResult, ClientOptions } from "../client/client_options.ts";
import type { Client } from "../client/direct_client.ts";
import { ClientBase } from "../client/rpc_client.ts";
import { type LoadBalancer, loadBalancer, type SelectRequest } from "./balancer.ts";
import { ClusterMembers, type MemberBreaker } from "./cluster_members.ts";
import {
  type ClusterCallOptions,
  type ClusterCallResult,
  type ClusterOptions,
  clusterOptionsSchema,
  type ClusterSettings,
  type ClusterStats,
} from "./cluster_options.ts";
import { type NamingService, namingService, type ServerNode } from "./naming.ts";
import "./registry.ts";
import { ServerPool } from "./server_pool.ts";
import { ClusterRecoverPolicy } from "./cluster_recover.ts";

export type { ClusterCallOptions, ClusterCallResult, ClusterOptions, ClusterStats };

/** How an attempt's failure bears on another attempt elsewhere. */
type Verdict = "retry" | "retry-if-idempotent" | "final";

/** Whether a failed attempt may be made again on another server (see the module doc). */
export function retryVerdict(e: unknown): Verdict {
  if (e instanceof RpcError) {
    // Refused before it ran: the server is stopping, or over its limits.
    return e.errorCode === ELOGOFF || e.errorCode === ELIMIT || e.errorCode === EOVERCROWDED
      ? "retry"
      : "final";
  }
  if (!(e instanceof VerbusError)) return "final";
  if (e.code === "CONNECT_FAILED") return "retry"; // nothing was sent
  if (e.code === "CONNECTION_CLOSED" || e.code === "FABRIC" || e.code === "CLOSED") {
    return "retry-if-idempotent"; // in flight: the server may have applied it
  }
  return "final"; // TIMEOUT (a deadline), bad arguments, …
}

/** A failure that says the server's connection is gone (it leaves the rotation). */
function breaksConnection(e: unknown): boolean {
  return e instanceof VerbusError && !(e instanceof RpcError) &&
    (e.code === "CONNECT_FAILED" || e.code === "CONNECTION_CLOSED");
}

/**
 * One cluster call as its attempts read it (one record per call, shared by the attempt and its
 * backup): what to call, the caller's options, the deadline on the `performance.now()` scale,
 * and the balancer's request, whose `excluded` set holds the servers tried so far.
 */
interface ClusterCall {
  readonly service: string;
  readonly method: string;
  readonly request: Uint8Array;
  readonly options: ClusterCallOptions;
  readonly deadline: number;
  readonly select: SelectRequest;
}

/** See the module documentation. Create with `connect(NAMING_URL, options)`. */
export class ClusterClient extends ClientBase<ClusterCallResult> {
  readonly #naming: NamingService;
  readonly #members: ClusterMembers;
  readonly #balancer: LoadBalancer;
  readonly #o: ClusterSettings;
  readonly #recover: ClusterRecoverPolicy | null;
  readonly #stopWatch: () => void;
  readonly #answered: Record<string, number> = {};
  #retries = 0;
  #backups = 0;
  #rejected = 0;
  #namingErrors = 0;
  #closed = false;
  #lastFabric = "tcp";

  /** @internal use `connect(NAMING_URL, options)`. */
  constructor(
    naming: NamingService,
    balancer: LoadBalancer,
    members: ClusterMembers,
    o: ClusterSettings,
    first: readonly ServerNode[],
  ) {
    super();
    this.#naming = naming;
    this.#balancer = balancer;
    this.#members = members;
    this.#o = o;
    this.#recover = ClusterRecoverPolicy.of(balancer.params);
    members.update(first);
    this.#stopWatch = naming.watch({
      onServers: (servers) => members.update(servers),
      onError: () => void this.#namingErrors++,
    });
  }

  /** The naming service's URL. */
  get url(): string {
    return this.#naming.url;
  }

  /** The fabric of the last answer ("tcp" before the first). */
  get fabric(): string {
    return this.#lastFabric;
  }

  /** Makes one call on a server the balancer picks; see the module doc for retries. */
  async call(
    service: string,
    method: string,
    request: Uint8Array,
    options: ClusterCallOptions = {},
  ): Promise<ClusterCallResult> {
    if (this.#closed) throw new VerbusError("CLOSED", `cluster client of ${this.url} is closed`);
    const deadline = performance.now() + (options.timeoutMs ?? this.#o.timeoutMs);
    const select: SelectRequest = {
      excluded: new Set<string>(),
      ...(options.requestCode !== undefined ? { requestCode: BigInt(options.requestCode) } : {}),
    };
    const tried = select.excluded as Set<string>;
    const call: ClusterCall = { service, method, request, options, deadline, select };
    let lastError: unknown;
    while (tried.size <= this.#o.maxRetry) {
      if (this.#recover?.reject(this.#members.inRotation)) throw this.#rejection();
      const address = this.#balancer.select(select);
      if (address === null) {
        // None usable at all (not merely all tried): brpc's recover policy starts recovering.
        if (this.#members.inRotation === 0 && this.#members.size > 0) this.#recover?.startRecover();
        break;
      }
      tried.add(address);
      if (tried.size > 1) this.#retries++;
      try {
        const r = await this.#attemptWithBackup(address, call);
        this.#answered[r.server] = (this.#answered[r.server] ?? 0) + 1;
        this.#lastFabric = r.fabric;
        return r;
      } catch (e) {
        lastError = e;
        const v = retryVerdict(e);
        if (v === "final" || (v === "retry-if-idempotent" && !options.idempotent)) throw e;
        if (performance.now() >= deadline) break;
      }
    }
    if (lastError !== undefined) throw lastError;
    throw new VerbusError(
      "UNAVAILABLE",
      `no server of ${this.url} to call: ${this.#members.size} named, ${this.#members.inRotation} ` +
        `in rotation${tried.size ? `, ${tried.size} tried` : ""}`,
    );
  }

  /** A call the recover policy turned away (brpc's EREJECT; not retried). */
  #rejection(): VerbusError {
    this.#rejected++;
    const r = this.#recover!;
    return new VerbusError(
      "UNAVAILABLE",
      `call rejected: ${this.url} is recovering from having no server (${this.#members.inRotation} ` +
        `usable of min_working_instances=${r.minWorkingInstances}; it takes every call once that ` +
        `count holds for ${r.holdSeconds} s)`,
      { context: { rejected: true } },
    );
  }

  /**
   * The attempt on `address`, and — when it is idempotent, backups are on and it is slow — a
   * copy on another server; the first answer wins, a failure waits for the other.
   */
  #attemptWithBackup(address: string, call: ClusterCall): Promise<ClusterCallResult> {
    const { options, deadline, select } = call;
    const tried = select.excluded as Set<string>;
    const first = this.#attempt(address, call);
    const after = this.#o.backupRequestMs;
    if (after === undefined || !options.idempotent || tried.size > this.#o.maxRetry) return first;
    return new Promise<ClusterCallResult>((resolve, reject) => {
      let pending = 1, failure: unknown;
      const settle = (p: Promise<ClusterCallResult>) => {
        p.then((r) => {
          clearTimeout(timer);
          resolve(r);
        }, (e) => {
          failure ??= e;
          if (--pending === 0) {
            clearTimeout(timer);
            reject(failure);
          }
        });
      };
      const timer = setTimeout(() => {
        if (performance.now() >= deadline) return;
        const backup = this.#balancer.select(select); // the same code; the tried ones excluded
        if (backup === null) return;
        tried.add(backup);
        this.#backups++;
        this.#retries++;
        pending++;
        settle(this.#attempt(backup, call));
      }, after);
      settle(first);
    });
  }

  /** One attempt of `call` on `address` through its shared client. */
  async #attempt(address: string, call: ClusterCall): Promise<ClusterCallResult> {
    const { service, method, request, options, deadline } = call;
    const m = this.#members.get(address);
    const left = Math.ceil(deadline - performance.now());
    if (!m || left <= 0) {
      this.#balancer.feedback(address, 0, false); // select counted it in flight (p2c)
      if (!m) throw new VerbusError("CONNECT_FAILED", `server ${address} left ${this.url}`);
      throw new TimeoutError(`call ${service}.${method} to ${this.url}: deadline passed`);
    }
    let client: Client | null = null;
    const t0 = performance.now();
    try {
      client = await m.lease.client();
      // Connecting (a first call, a slow handshake) took part of the deadline.
      const remaining = Math.ceil(deadline - performance.now());
      if (remaining <= 0) {
        throw new TimeoutError(
          `call ${service}.${method} to ${address}: deadline passed while connecting`,
        );
      }
      const { requestCode: _code, idempotent: _idem, ...direct } = options;
      const r: ClientCallResult = await client.call(service, method, request, {
        ...direct,
        timeoutMs: remaining,
      });
      this.#members.callEnded(m, true, (performance.now() - t0) * 1000);
      return { ...r, server: address, attempts: call.select.excluded.size };
    } catch (e) {
      // As brpc's breaker: every failure counts, the server's own error answers too, except
      // ELIMIT (it shed the call unrun, at its concurrency limit).
      const shed = e instanceof RpcError && e.errorCode === ELIMIT;
      this.#members.callEnded(m, shed, (performance.now() - t0) * 1000);
      if (breaksConnection(e)) this.#members.markBroken(m, client, (e as Error).message);
      throw e;
    }
  }

  /** Cluster calls make progress on their own (each server's client drives its session). */
  progress(): number {
    return 0;
  }

  /** Counters of the cluster (see {@link ClusterStats}). */
  stats(): ClusterStats {
    return {
      servers: this.#members.size,
      inRotation: this.#members.inRotation,
      answered: { ...this.#answered },
      retries: this.#retries,
      backups: this.#backups,
      rejected: this.#rejected,
      broken: this.#members.brokenCount,
      isolated: this.#members.isolatedCount,
      namingErrors: this.#namingErrors,
    };
  }

  /** The counters for a person to read. */
  formatStats(): string {
    const s = this.stats();
    return [
      `cluster      ${this.url} (${this.#balancer.name}): ${s.servers} servers, ${s.inRotation} in rotation`,
      `answered     ${Object.entries(s.answered).map(([a, n]) => `${a} ${n}`).join(", ") || "-"}`,
      `retries      ${s.retries} (backups ${s.backups})  rejected ${s.rejected}  broken ${s.broken}  isolated ${s.isolated}  naming errors ${s.namingErrors}`,
    ].join("\n");
  }

  /** Stops following the naming service and releases every server. Safe twice. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#stopWatch();
    this.#naming.close();
    this.#members.close();
    return Promise.resolve();
  }
}

/**
 * Connects to the cluster a naming-service URL names: waits for its first list (an empty one is
 * left to the calls, UNAVAILABLE while it stays empty: servers may come), then returns the client.
 * Throws INVALID_OPTIONS / INVALID_ARGUMENT naming a bad option, balancer or URL, and the naming
 * service's error when its first question fails.
 */
export async function connectCluster(
  url: string,
  options: ClusterOptions = {},
  newBreaker: () => MemberBreaker = () => new CircuitBreaker(),
): Promise<ClusterClient> {
  const o = parseOptions(
    clusterOptionsSchema,
    options,
    `connect("${url}") options`,
  ) as ClusterSettings;
  const balancer = loadBalancer(o.lb);
  const log = o.log ?? ((line: string) => console.error(`verbus cluster ${url}: ${line}`));
  const naming = namingService(url, { ...o.naming, log });
  const pool = ServerPool.forThread();
  if (o.maxFabricSessions !== undefined) pool.maxFabricSessions = o.maxFabricSessions;
  let first: ServerNode[];
  try {
    first = await withTimeout(naming.resolve(), o.resolveTimeoutMs, url);
  } catch (e) {
    naming.close();
    throw e;
  }
  const members = new ClusterMembers(
    pool,
    balancer,
    o.server as ClientOptions,
    o.healthCheckMs,
    o.circuitBreaker ? newBreaker : null,
    log,
  );
  return new ClusterClient(naming, balancer, members, o, first);
}

function withTimeout<T>(p: Promise<T>, ms: number, url: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new TimeoutError(`naming service ${url}: no list after ${ms} ms`)),
        ms,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}
