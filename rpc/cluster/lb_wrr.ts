/**
 * `wrr`: brpc's weighted round robin, step for step, so that a verbus client and a brpc client
 * given the same weights send the same sequence from the same start. Lay the servers' weights end
 * to end on a ring of `sum(weights)` units; each call moves a cursor `stride` units on and picks
 * the server under it. The stride is a prime from brpc's table near the average weight and
 * coprime with the sum, so every unit is visited once per `sum` calls: each server gets exactly
 * its weight's share of every full turn, and its picks are spread over the turn. An excluded
 * server is skipped by recomputing the stride over the remaining weight, from the same cursor.
 * Exclusion is meant for one call's retries: walked with the same servers excluded on every
 * call, the cursor may keep landing on the same few of the rest, as brpc's does (a server out for
 * long leaves the list through setServers instead).
 * The weight is the server's tag (`1.2.3.4:80 3`). No parameters (brpc's `wrr` takes none).
 *
 * Threading: the JS thread of its cluster client. `select` and `feedback` allocate nothing.
 * @module
 */
import type { LoadBalancer, SelectRequest } from "./balancer.ts";
import type { ServerNode } from "./naming.ts";
import { type BalancerDeps, onlyParams, randomBelow, type RandomSource } from "./lb_params.ts";

/**
 * brpc's stride table (`prime_stride` in weighted_round_robin_load_balancer.cpp): primes growing by
 * about half each; the same table gives the same stride for the same weights.
 */
const PRIME_STRIDE = [
  2,
  3,
  5,
  11,
  17,
  29,
  47,
  71,
  107,
  137,
  163,
  251,
  307,
  379,
  569,
  683,
  857,
  1289,
  1543,
  1949,
  2617,
  2927,
  3407,
  4391,
  6599,
  9901,
  14867,
  22303,
  33457,
  50207,
  75323,
  112997,
  169501,
  254257,
  381389,
  572087,
  849083,
  1273637,
  1910471,
  2865727,
  4298629,
  6447943,
  9671923,
  14507903,
  21761863,
  32642861,
  48964297,
  73446469,
  110169743,
  165254623,
  247881989,
  371822987,
  557734537,
  836601847,
  1254902827,
  1882354259,
  2823531397,
  4235297173,
  6352945771,
  9529418671,
];

function gcd(a: number, b: number): number {
  while (b !== 0) {
    const r = a % b;
    a = b;
    b = r;
  }
  return a;
}

/** The stride for `count` servers of total weight `sum`, as brpc chooses it. */
export function wrrStride(sum: number, count: number): number {
  if (sum === 1) return 1;
  // brpc keeps the average in a uint32: truncated.
  const average = Math.floor(sum / count);
  let i = 0;
  while (i < PRIME_STRIDE.length && PRIME_STRIDE[i] < average) i++;
  while (i < PRIME_STRIDE.length && gcd(sum, PRIME_STRIDE[i]) !== 1) i++;
  // Past the table (a total weight near 2^33 made of its primes' products): stride 1 still
  // visits every unit, only less spread.
  const p = i < PRIME_STRIDE.length ? PRIME_STRIDE[i] : 1;
  return p > sum ? p % sum : p;
}

/** brpc's `wrr` (see the module documentation). */
export class WeightedRoundRobinBalancer implements LoadBalancer {
  readonly name: string;
  readonly params: Readonly<Record<string, number>> = {};
  readonly #random: RandomSource;
  #addresses: string[] = [];
  #weights: Float64Array = new Float64Array(0);
  /** Servers skipped in the current select (1); all 0 between calls. */
  #filter: Uint8Array = new Uint8Array(0);
  #sum = 0;
  #stride = 0;
  /** The cursor: the server it is in (or just past, when `#remain` is 0). */
  #position = 0;
  /** Units of server `#position` still ahead of the cursor; 0: none. */
  #remain = 0;
  // The trial state of one select: committed only when its pick is eligible.
  #tPosition = 0;
  #tRemain = 0;
  #tStride = 0;

  constructor(name: string, params: Readonly<Record<string, string>>, deps: BalancerDeps = {}) {
    onlyParams(name, params, []);
    this.name = name;
    this.#random = deps.random ?? Math.random;
  }

  setServers(servers: readonly ServerNode[]): void {
    const n = servers.length;
    const before = this.#addresses.length;
    const remainAt = this.#remain > 0 ? this.#addresses[this.#position] : undefined;
    this.#addresses = servers.map((s) => s.address);
    this.#weights = Float64Array.from(servers, (s) => s.weight);
    this.#filter = new Uint8Array(n);
    let sum = 0;
    for (const s of servers) sum += s.weight;
    if (n === 0) {
      this.#sum = 0;
      this.#remain = 0;
      return;
    }
    if (sum !== this.#sum || n !== before || this.#stride === 0) {
      // A fresh walk starts at a random server, as a new brpc thread does.
      if (this.#stride === 0) this.#position = randomBelow(this.#random, n);
      this.#stride = wrrStride(sum, n);
    }
    this.#sum = sum;
    this.#position %= n;
    // The cursor's server changed under it: start at the boundary of the new one.
    if (remainAt !== this.#addresses[this.#position]) this.#remain = 0;
  }

  select(request: SelectRequest): string | null {
    const n = this.#addresses.length;
    if (n === 0) return null;
    this.#tPosition = this.#position;
    this.#tRemain = this.#remain;
    this.#tStride = this.#stride;
    let weight = this.#sum;
    let found = -1;
    for (let left = n; left > 0;) {
      const at = this.#next();
      if (!request.excluded.has(this.#addresses[at])) {
        this.#position = this.#tPosition;
        this.#remain = this.#tRemain;
        found = at;
        break;
      }
      if (--left === 0) break;
      // Skip it: a new stride over what is left, walked again from the committed cursor.
      this.#filter[at] = 1;
      weight -= this.#weights[at];
      this.#tStride = wrrStride(weight, left);
      this.#tPosition = this.#position;
      this.#tRemain = this.#remain;
    }
    this.#filter.fill(0);
    return found < 0 ? null : this.#addresses[found];
  }

  /** Moves the trial cursor one stride over unfiltered servers; the index it lands in. */
  #next(): number {
    const n = this.#addresses.length;
    let stride = this.#tStride;
    let chosen = -1;
    if (this.#tRemain > 0) {
      if (this.#filter[this.#tPosition] === 0) {
        chosen = this.#tPosition;
        if (this.#tRemain > stride) {
          this.#tRemain -= stride;
          return chosen;
        }
        stride -= this.#tRemain;
      }
      this.#tRemain = 0;
      this.#tPosition = (this.#tPosition + 1) % n;
    }
    while (stride > 0) {
      const at = this.#tPosition;
      chosen = at;
      if (this.#filter[at] === 0) {
        const w = this.#weights[at];
        if (w > stride) {
          this.#tRemain = w - stride;
          return at;
        }
        stride -= w;
      }
      this.#tPosition = (at + 1) % n;
    }
    // The stride ended exactly at a server's last unit: that server, cursor past it.
    return chosen;
  }

  feedback(_address: string, _latencyUs: number, _ok: boolean): void {}
}

/** The factory {@link ./registry.ts} registers as `wrr`. */
export function weightedRoundRobin(
  name: string,
  params: Readonly<Record<string, string>>,
): LoadBalancer {
  return new WeightedRoundRobinBalancer(name, params);
}
