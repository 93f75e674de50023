/**
 * Prepared per-session resources, so that a new verbs session does not pay QP creation and MR
 * registration on its critical path (brpc keeps `rdma_prepared_qp_cnt` prepared QPs).
 *
 * Per hub (device) and per shape, the pool keeps `target` bundles ready: a PD, the region and
 * bounce MRs, and an RC QP in RESET on the hub's CQ. `take()` hands one over (or opens one when
 * none is ready) and tops the pool up later, off the session's path (a timer task). A finished
 * session's bundle comes back through `give()`: its QP is destroyed and a new one made on the
 * same PD and MRs (`EndpointResources.renew`: buffers zeroed, no re-registration) — the MR cache.
 *
 * Why QPs are prepared and not pre-connected: rdma_cm connects an RC QP to one peer address,
 * learned only from the connect request, and an RC QP cannot be re-targeted without going
 * through RESET; so the pool prepares everything up to RESET and the connection itself (one
 * rdma_cm exchange, INIT → RTR → RTS) stays on the session's path. A used QP is never reused
 * (through RESET) either: completions of its old life may still sit in the shared CQ under the
 * same QP number.
 *
 * Ready bundles are members of the hub (a token and their share of the CQ each). One JS thread.
 * @module
 */
import type { VerbsHub } from "./hub.ts";
import { EndpointResources, type EndpointShape } from "./verbs_resources.ts";

/** Counters (tests, stats). */
export interface PoolCounters {
  /** Bundles handed out ready. */
  hits: number;
  /** Bundles opened on a session's path (none was ready). */
  misses: number;
  /** Bundles opened off the path (refills). */
  prepared: number;
  /** Bundles given back and renewed (MRs kept). */
  renewed: number;
}

/** The prepared bundles of one hub. See the module doc. */
export class ResourcePool {
  static readonly #pools = new WeakMap<VerbsHub, ResourcePool>();
  /** Bundles kept ready per shape (process-wide; the last provider's setting wins). */
  target = 2;
  readonly counters: PoolCounters = { hits: 0, misses: 0, prepared: 0, renewed: 0 };
  readonly #ready = new Map<string, EndpointResources[]>();
  readonly #returned = new Map<string, EndpointResources[]>();
  readonly #shapes = new Map<string, EndpointShape>();
  readonly #scheduled = new Set<string>();

  private constructor(readonly hub: VerbsHub) {}

  /** The pool of `hub` (created on first use). */
  static of(hub: VerbsHub): ResourcePool {
    let p = ResourcePool.#pools.get(hub);
    if (!p) ResourcePool.#pools.set(hub, p = new ResourcePool(hub));
    return p;
  }

  /** Bundles ready for `shape` now (tests). */
  readyFor(shape: EndpointShape): number {
    return this.#ready.get(keyOf(shape))?.length ?? 0;
  }

  /** A bundle of `shape`: a ready one, else opened now. Throws what opening throws. */
  take(shape: EndpointShape): EndpointResources {
    const key = keyOf(shape);
    const ready = this.#ready.get(key)?.pop();
    let res: EndpointResources;
    if (ready) {
      this.counters.hits++;
      res = ready;
    } else {
      this.counters.misses++;
      res = EndpointResources.open(this.hub, shape);
    }
    this.#schedule(key, shape);
    return res;
  }

  /** A finished (or never used) bundle comes back: renewed later, or released when not needed. */
  give(res: EndpointResources): void {
    if (this.target === 0) return res.close();
    const key = keyOf(res.shape);
    listOf(this.#returned, key).push(res);
    this.#schedule(key, res.shape);
  }

  #schedule(key: string, shape: EndpointShape): void {
    if (this.#scheduled.has(key)) return;
    this.#scheduled.add(key);
    this.#shapes.set(key, shape);
    setTimeout(() => {
      this.#scheduled.delete(key);
      this.#fill(key);
    }, 0);
  }

  /**
   * Renews what came back first (up to 2 × target ready: the MR cache), opens new bundles only
   * below `target`, and releases the rest (a lower target trims the pool).
   */
  #fill(key: string): void {
    const ready = listOf(this.#ready, key), back = listOf(this.#returned, key);
    const shape = this.#shapes.get(key)!, max = 2 * this.target;
    try {
      while (ready.length < max && back.length > 0) {
        ready.push(EndpointResources.renew(back.pop()!));
        this.counters.renewed++;
      }
      while (ready.length < this.target) {
        ready.push(EndpointResources.open(this.hub, shape));
        this.counters.prepared++;
      }
    } catch { /* out of resources (CQ budget, memory): sessions open their own, or fall back */ }
    const extra = [...back.splice(0), ...ready.splice(max)];
    for (const r of extra) {
      try {
        r.close();
      } catch { /* released as far as it goes */ }
    }
  }
}

function keyOf(s: EndpointShape): string {
  return `${s.regionSize}/${s.bounceSize}/${s.logBytes}/${s.sqDepth}/${s.rqDepth}/${s.signaledBudget}/${s.maxSge}/${s.maxInline}/${s.events}`;
}

function listOf<T>(m: Map<string, T[]>, key: string): T[] {
  let l = m.get(key);
  if (!l) m.set(key, l = []);
  return l;
}
