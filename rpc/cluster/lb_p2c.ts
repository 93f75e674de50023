/**
 * `p2c`: brpc's power-of-two-choices with peak EWMA latency (its `p2c` balancer). Each call
 * samples `choices` distinct servers (default 2) and takes the one of lowest
 * `latency × (in-flight + 1) / weight`, where latency is the server's peak EWMA: a slower sample
 * replaces it at once, a faster one pulls it down with weight `1 − e^(−Δt/τ)` (τ = `tau_ms`,
 * default 10 s), and it decays by `e^(−Δt/τ)` while unobserved so that a server punished long
 * ago is tried again. A failed call counts as at least twice the current EWMA (capped at
 * `maxPunishUs`, brpc's 30 s), so a server that fails fast still loses. With `choices` ≥ the
 * number of servers every server is scored. Parameters: `choices` (2..64), `tau_ms` (> 0).
 *
 * In flight means picked and not yet reported: every server `select` returns must get exactly
 * one `feedback` (a call never made included), or its count stays up and it is picked less.
 *
 * Threading: the JS thread of its cluster client. `select` and `feedback` allocate nothing.
 * @module
 */
import type { LoadBalancer, SelectRequest } from "./balancer.ts";
import type { ServerNode } from "./naming.ts";
import {
  type BalancerDeps,
  intParam,
  monotonicUs,
  onlyParams,
  randomBelow,
  type RandomSource,
} from "./lb_params.ts";

const MAX_CHOICES = 64;
/** The latency of a server never observed (µs): in-flight counts alone decide among them. */
const MIN_LATENCY_US = 1;

/** What {@link P2cBalancer} takes besides {@link BalancerDeps}. */
export interface P2cDeps extends BalancerDeps {
  /** Cap on the latency a failed call counts as, µs (brpc's `-p2c_max_punish_ms`; 0: none). */
  maxPunishUs?: number;
}

/** brpc's `p2c` (see the module documentation). */
export class P2cBalancer implements LoadBalancer {
  readonly name: string;
  readonly params: Readonly<Record<string, number>>;
  readonly #random: RandomSource;
  readonly #nowUs: () => number;
  readonly #choices: number;
  readonly #tauUs: number;
  readonly #maxPunishUs: number;
  #addresses: string[] = [];
  /** Server index by address, for feedback. */
  #index = new Map<string, number>();
  #weights: Float64Array = new Float64Array(0);
  #ewmaUs: Float64Array = new Float64Array(0);
  #stampUs: Float64Array = new Float64Array(0);
  #inflight: Int32Array = new Int32Array(0);
  /** The servers sampled by the current select. */
  readonly #sampled = new Int32Array(MAX_CHOICES);
  #best = -1;
  #bestScore = 0;

  constructor(name: string, params: Readonly<Record<string, string>>, deps: P2cDeps = {}) {
    onlyParams(name, params, ["choices", "tau_ms"]);
    this.name = name;
    this.#choices = intParam(name, params, "choices", 2, MAX_CHOICES) ?? 2;
    const tauMs = intParam(name, params, "tau_ms", 1, 2 ** 40) ?? 10_000;
    this.#tauUs = tauMs * 1000;
    this.params = { choices: this.#choices, tau_ms: tauMs };
    this.#random = deps.random ?? Math.random;
    this.#nowUs = deps.nowUs ?? monotonicUs;
    this.#maxPunishUs = deps.maxPunishUs ?? 30_000_000;
  }

  setServers(servers: readonly ServerNode[]): void {
    const n = servers.length;
    const ewma = new Float64Array(n), stamp = new Float64Array(n), inflight = new Int32Array(n);
    const index = new Map<string, number>();
    // A server that stays keeps what was learnt of it (brpc shares its stat across updates).
    servers.forEach((s, i) => {
      index.set(s.address, i);
      const old = this.#index.get(s.address);
      if (old === undefined) return;
      ewma[i] = this.#ewmaUs[old];
      stamp[i] = this.#stampUs[old];
      inflight[i] = this.#inflight[old];
    });
    this.#addresses = servers.map((s) => s.address);
    this.#weights = Float64Array.from(servers, (s) => s.weight);
    this.#index = index;
    this.#ewmaUs = ewma;
    this.#stampUs = stamp;
    this.#inflight = inflight;
  }

  select(request: SelectRequest): string | null {
    const n = this.#addresses.length;
    if (n === 0) return null;
    const now = this.#nowUs();
    this.#best = -1;
    const choices = Math.min(this.#choices, n);
    if (choices >= n) {
      // From a random start, so that equal scores do not all go to the first server.
      for (
        let i = 0, at = randomBelow(this.#random, n);
        i < n;
        i++, at = at + 1 === n ? 0 : at + 1
      ) {
        this.#consider(at, now, request.excluded);
      }
    } else {
      let taken = 0;
      for (let attempt = 0; attempt < 4 * choices + 8 && taken < choices; attempt++) {
        const at = randomBelow(this.#random, n);
        let seen = false;
        for (let i = 0; i < taken; i++) if (this.#sampled[i] === at) seen = true;
        if (seen) continue;
        this.#sampled[taken++] = at;
        this.#consider(at, now, request.excluded);
      }
      // Every sample excluded: score them all rather than fail.
      if (this.#best < 0) { for (let i = 0; i < n; i++) this.#consider(i, now, request.excluded); }
    }
    if (this.#best < 0) return null;
    this.#inflight[this.#best]++;
    return this.#addresses[this.#best];
  }

  #consider(at: number, now: number, excluded: ReadonlySet<string>): void {
    if (excluded.has(this.#addresses[at])) return;
    const score = this.score(at, now);
    if (this.#best < 0 || score < this.#bestScore) {
      this.#best = at;
      this.#bestScore = score;
    }
  }

  /** The score of server `at` at `now` µs (lower is better); exposed for tests and stats. */
  score(at: number, now: number = this.#nowUs()): number {
    let latency = MIN_LATENCY_US;
    const ewma = this.#ewmaUs[at];
    if (ewma > 0) {
      const elapsed = now - this.#stampUs[at];
      const decayed = elapsed > 0 ? ewma * Math.exp(-elapsed / this.#tauUs) : ewma;
      latency = Math.max(decayed, MIN_LATENCY_US);
    }
    return latency * Math.max(this.#inflight[at] + 1, 1) / this.#weights[at];
  }

  feedback(address: string, latencyUs: number, ok: boolean): void {
    const at = this.#index.get(address);
    if (at === undefined) return; // it left the list after it was picked
    if (this.#inflight[at] > 0) this.#inflight[at]--;
    if (!(latencyUs > 0)) return; // no usable sample (a clock step)
    const now = this.#nowUs();
    const ewma = this.#ewmaUs[at];
    let sample = latencyUs;
    if (!ok) {
      sample = Math.max(sample, 2 * ewma);
      if (this.#maxPunishUs > 0) sample = Math.min(sample, this.#maxPunishUs);
    }
    let next = sample;
    if (ewma > 0 && sample < ewma) {
      const elapsed = now - this.#stampUs[at];
      const w = elapsed > 0 ? Math.exp(-elapsed / this.#tauUs) : 1;
      next = Math.trunc(ewma * w + sample * (1 - w));
    }
    this.#ewmaUs[at] = next;
    this.#stampUs[at] = now;
  }
}

/** The factory {@link ./registry.ts} registers as `p2c`. */
export function p2c(name: string, params: Readonly<Record<string, string>>): LoadBalancer {
  return new P2cBalancer(name, params);
}
