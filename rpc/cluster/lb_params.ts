/**
 * The parameters brpc's balancers take after the colon of their name, validated as brpc's
 * `SetParameters` does (an unknown key, an empty or non-numeric value, a half-given recover
 * policy is an error), and the injectable randomness and clock the balancers use. Pure; any
 * thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";

/** A uniform random number in [0, 1) (default `Math.random`; tests inject a seeded one). */
export type RandomSource = () => number;

/** What a balancer's constructor may be given besides its name and parameters. */
export interface BalancerDeps {
  /** Randomness for start offsets and draws (default `Math.random`). */
  random?: RandomSource;
  /** The clock, µs (default `performance.now() * 1000`); p2c's EWMA decays by it. */
  nowUs?: () => number;
}

/** The default clock of {@link BalancerDeps.nowUs}. */
export function monotonicUs(): number {
  return performance.now() * 1000;
}

/** An integer in [0, n) from `random` (n ≥ 1). */
export function randomBelow(random: RandomSource, n: number): number {
  const r = Math.floor(random() * n);
  return r < n ? r : n - 1; // a source returning 1.0 must not index past the end
}

/** Throws INVALID_ARGUMENT naming `key` when it is not one of `known`. */
export function onlyParams(
  name: string,
  params: Readonly<Record<string, string>>,
  known: readonly string[],
): void {
  for (const key of Object.keys(params)) {
    if (!known.includes(key)) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `load balancer "${name}": unknown parameter "${key}"` +
          (known.length ? ` (expected ${known.join(", ")})` : " (it takes none)"),
      );
    }
  }
}

/**
 * The integer value of `key` (undefined when absent). Throws INVALID_ARGUMENT when it is not a
 * decimal integer in [min, max].
 */
export function intParam(
  name: string,
  params: Readonly<Record<string, string>>,
  key: string,
  min: number,
  max: number,
): number | undefined {
  const text = params[key];
  if (text === undefined) return undefined;
  const v = /^-?\d{1,15}$/.test(text) ? Number(text) : NaN;
  if (!(v >= min && v <= max)) {
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `load balancer "${name}": ${key}=${text} is not an integer in ${min}..${max}`,
    );
  }
  return v;
}

/**
 * brpc's cluster recover policy parameters (`min_working_instances`, `hold_seconds`, taken by
 * `rr` and `random`): both positive, or neither. While a cluster recovers from having no usable
 * server, brpc admits a call with probability usable / `min_working_instances` until the count of
 * usable servers has held still for `hold_seconds`. Applying that is the cluster client's
 * business (it knows which servers are usable: `cluster_recover.ts`); the balancer only parses
 * and exposes them.
 * Returns `{}` when neither is given.
 */
export function recoverParams(
  name: string,
  params: Readonly<Record<string, string>>,
): Record<string, number> {
  const min = intParam(name, params, "min_working_instances", 1, 0x7fffffff);
  const hold = intParam(name, params, "hold_seconds", 1, 0x7fffffff);
  if ((min === undefined) !== (hold === undefined)) {
    throw new VerbusError(
      "INVALID_ARGUMENT",
      `load balancer "${name}": min_working_instances and hold_seconds go together`,
    );
  }
  return min === undefined ? {} : { min_working_instances: min, hold_seconds: hold! };
}
