/**
 * The servers of one cluster client and their health: the naming service's list, each server's
 * hold on its shared client (`server_pool.ts`), and which are in rotation. A server whose
 * connection failed is broken: it leaves the rotation and is probed (a connection attempt) every
 * `healthCheckMs` until one succeeds, as brpc's health check does. A server the circuit breaker
 * trips is isolated for the breaker's time, then comes back. The balancer always holds exactly
 * the servers in rotation.
 *
 * Threading: the JS thread of its cluster client. Timers never keep a process alive.
 * @module
 */
import type { Client } from "../client/direct_client.ts";
import type { ClientOptions } from "../client/client_options.ts";
import type { LoadBalancer } from "./balancer.ts";
import type { ServerNode } from "./naming.ts";
import type { ServerLease, ServerPool } from "./server_pool.ts";
import { unrefTimeout } from "../../util/unref_timer.ts";

/** What a member needs of a circuit breaker (`breaker.ts`). */
export interface MemberBreaker {
  /** Notes a finished call; false: isolate the server now. */
  onCallEnd(ok: boolean, latencyUs: number): boolean;
  /** How long the next isolation lasts, ms. */
  isolationMs(): number;
}

/** One server of the cluster. */
export interface Member {
  readonly node: ServerNode;
  readonly lease: ServerLease;
  /** A connection to it failed; probed until one succeeds. */
  broken: boolean;
  /** Out of rotation until then (performance.now() ms; 0: not isolated). */
  isolatedUntil: number;
  readonly breaker: MemberBreaker | null;
  timer: ReturnType<typeof setTimeout> | null;
}

/** The members of one cluster client (see the module documentation). */
export class ClusterMembers {
  readonly #members = new Map<string, Member>();
  readonly #rotation: ServerNode[] = [];
  #closed = false;
  brokenCount = 0;
  isolatedCount = 0;

  constructor(
    private readonly pool: ServerPool,
    private readonly balancer: LoadBalancer,
    private readonly serverOptions: ClientOptions,
    private readonly healthCheckMs: number,
    private readonly newBreaker: (() => MemberBreaker) | null,
    private readonly log: (line: string) => void,
  ) {}

  /** Servers the naming service names now. */
  get size(): number {
    return this.#members.size;
  }

  /** Servers in rotation now. */
  get inRotation(): number {
    return this.#rotation.length;
  }

  /** The member of `address` (undefined once the naming service dropped it). */
  get(address: string): Member | undefined {
    return this.#members.get(address);
  }

  /** Takes the naming service's new list: holds new servers, releases departed ones. */
  update(servers: readonly ServerNode[]): void {
    if (this.#closed) return;
    const next = new Map(servers.map((s) => [s.address, s]));
    for (const [address, m] of this.#members) {
      const now = next.get(address);
      if (now && now.tag === m.node.tag) continue;
      this.#remove(m); // gone, or its tag (weight) changed: held anew below
    }
    for (const node of next.values()) {
      if (this.#members.has(node.address)) continue;
      this.#members.set(node.address, {
        node,
        lease: this.pool.acquire(node.address, this.serverOptions),
        broken: false,
        isolatedUntil: 0,
        breaker: this.newBreaker?.() ?? null,
        timer: null,
      });
    }
    this.#rebalance();
  }

  #remove(m: Member): void {
    if (m.timer) clearTimeout(m.timer);
    m.timer = null;
    m.lease.release();
    this.#members.delete(m.node.address);
  }

  /** The balancer gets exactly the servers in rotation, in naming-service order. */
  #rebalance(): void {
    this.#rotation.length = 0;
    for (const m of this.#members.values()) {
      if (!m.broken && m.isolatedUntil === 0) this.#rotation.push(m.node);
    }
    this.balancer.setServers(this.#rotation);
  }

  /** A connection to `m` failed: out of rotation, probed every `healthCheckMs`. */
  markBroken(m: Member, client: Client | null, why: string): void {
    if (client) m.lease.reset(client);
    if (m.broken || this.#closed || this.#members.get(m.node.address) !== m) return;
    if (m.timer) clearTimeout(m.timer); // an isolation ends: the probe decides now
    m.isolatedUntil = 0;
    m.broken = true;
    this.brokenCount++;
    this.log(
      `server ${m.node.address} is broken (${why}); probing it every ${this.healthCheckMs} ms`,
    );
    this.#rebalance();
    this.#probe(m);
  }

  #probe(m: Member): void {
    m.timer = unrefTimeout(async () => {
      m.timer = null;
      if (this.#closed || this.#members.get(m.node.address) !== m) return;
      try {
        await m.lease.client();
      } catch {
        if (!this.#closed && this.#members.get(m.node.address) === m) this.#probe(m);
        return;
      }
      if (this.#closed || this.#members.get(m.node.address) !== m) return;
      m.broken = false;
      this.log(`server ${m.node.address} is back in rotation`);
      this.#rebalance();
    }, this.healthCheckMs);
  }

  /** Notes a finished call on `m`; the breaker may isolate it. */
  callEnded(m: Member, ok: boolean, latencyUs: number): void {
    this.balancer.feedback(m.node.address, latencyUs, ok);
    if (!m.breaker || m.breaker.onCallEnd(ok, latencyUs) || m.isolatedUntil !== 0) return;
    if (this.#closed || this.#members.get(m.node.address) !== m || m.broken) return;
    const ms = m.breaker.isolationMs();
    m.isolatedUntil = performance.now() + ms;
    this.isolatedCount++;
    this.log(`server ${m.node.address} is isolated for ${ms} ms (too many failed calls)`);
    this.#rebalance();
    m.timer = unrefTimeout(() => {
      m.timer = null;
      m.isolatedUntil = 0;
      if (!this.#closed && this.#members.get(m.node.address) === m) this.#rebalance();
    }, ms);
  }

  /** Releases every server (their shared clients close with their last user). Safe twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const m of [...this.#members.values()]) this.#remove(m);
    this.#rotation.length = 0;
  }
}
