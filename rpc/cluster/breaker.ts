/**
 * brpc's error-rate circuit breaker (`CircuitBreaker`, `-enable_circuit_breaker`), one per
 * server. Two windows watch the server's calls, a short one (1,500 calls, 10 % errors allowed)
 * to catch a sudden fault and a long one (3,000 calls, 5 %) to catch a lasting one. Each keeps
 * an EMA of successful latency and an EMA "error cost": a failed call adds its latency (capped at
 * twice the EMA latency, since a timed-out call is far slower than usual), every success decays
 * the cost by `α = ε^(1/window)` (ε = 0.02; a cost under `minErrorCostUs` drops to 0). A window
 * trips when the cost passes `EMA latency × window × error% × (1 + ε)`; until it has seen a full
 * window of calls it counts errors instead and trips past `window × error%` of them.
 *
 * A tripped breaker stays tripped (`onCallEnd` false) for `isolationMs()`: 100 ms for a first
 * trip, doubled (up to 30 s) for each trip within 30 s of coming back, and 100 ms again after
 * 30 s without one. When the isolation ends (by the clock, or `reset()`) the windows restart,
 * as brpc's health check resets them on revival. Optionally a half-open window of N calls must
 * all succeed before the server counts as healthy (brpc's default: off).
 *
 * Calls refused because the server is at its concurrency limit (brpc's ELIMIT) say nothing about
 * its health: do not report them.
 *
 * Threading: the JS thread of its cluster client. `onCallEnd` allocates nothing.
 * @module
 */
import { z } from "zod";
import { parseOptions } from "../../util/options.ts";

const window = z.number().int().min(1).max(1_000_000);
const percent = z.number().int().min(0).max(99);

/** The breaker's options, with brpc's defaults (the `-circuit_breaker_*` flags). */
export const BreakerOptionsSchema = z.object({
  /** Calls in the short window. */
  shortWindowSize: window.default(1500),
  /** Errors the short window allows, percent. */
  shortWindowErrorPercent: percent.default(10),
  /** Calls in the long window. */
  longWindowSize: window.default(3000),
  /** Errors the long window allows, percent. */
  longWindowErrorPercent: percent.default(5),
  /** An error cost below this (µs) is forgotten on the next success. */
  minErrorCostUs: z.number().int().min(0).default(500),
  /** A failed call costs at most this many times the EMA latency. */
  maxFailedLatencyMultiple: z.number().int().min(1).max(1000).default(2),
  /** First isolation, ms. */
  minIsolationMs: z.number().int().min(1).max(0x7fffffff).default(100),
  /** Longest isolation, and how long without a trip resets it to the first, ms. */
  maxIsolationMs: z.number().int().min(1).max(0x7fffffff).default(30_000),
  /** ε of the EMA factor `ε^(1/window)`. */
  epsilon: z.number().gt(0).lt(1).default(0.02),
  /** Calls that must all succeed after an isolation before the breaker closes; 0: off. */
  halfOpenWindowSize: z.number().int().min(0).max(1_000_000).default(0),
  /** The clock, ms (default `performance.now()`). */
  nowMs: z.custom<() => number>((v) => typeof v === "function").optional(),
}).strict().refine((o) => o.minIsolationMs <= o.maxIsolationMs, {
  message: "minIsolationMs must not exceed maxIsolationMs",
});

/** Input type of the breaker's options. */
export type BreakerOptions = z.input<typeof BreakerOptionsSchema>;
type Resolved = z.output<typeof BreakerOptionsSchema>;

/** One EMA window (brpc's `EmaErrorRecorder`). */
class ErrorWindow {
  readonly #smooth: number;
  #samples = 0;
  #errors = 0;
  #errorCost = 0;
  #latency = 0;

  constructor(
    private readonly size: number,
    private readonly percent: number,
    private readonly o: Resolved,
  ) {
    this.#smooth = Math.pow(o.epsilon, 1 / size);
  }

  /** Notes a call; false when the window's error budget is spent. */
  onCallEnd(ok: boolean, latencyUs: number): boolean {
    // brpc keeps latencies and these EMAs in int64: truncated at each step.
    latencyUs = latencyUs > 0 ? Math.trunc(latencyUs) : 0;
    let ema = this.#latency;
    if (ok) {
      ema = this.#latency = ema === 0
        ? latencyUs
        : Math.trunc(ema * this.#smooth + latencyUs * (1 - this.#smooth));
    }
    const healthy = this.#cost(ok ? 0 : latencyUs, ema);
    if (this.#samples < this.size) {
      // Too few calls for the EMAs to mean much yet: count errors instead.
      this.#samples++;
      if (!ok) return this.#errors++ < Math.trunc(this.size * this.percent / 100);
      return true;
    }
    return healthy;
  }

  #cost(cost: number, ema: number): boolean {
    if (ema !== 0) cost = Math.min(ema * this.o.maxFailedLatencyMultiple, cost);
    if (cost !== 0) {
      this.#errorCost += cost;
      const max = Math.trunc(ema * this.size * (this.percent / 100) * (1 + this.o.epsilon));
      return this.#errorCost <= max;
    }
    if (this.#errorCost < this.o.minErrorCostUs) this.#errorCost = 0;
    else this.#errorCost = Math.trunc(this.#errorCost * this.#smooth);
    return true;
  }

  /** Forgets the error cost; a window still filling starts over. */
  reset(): void {
    if (this.#samples < this.size) {
      this.#samples = 0;
      this.#errors = 0;
      this.#latency = 0;
    }
    this.#errorCost = 0;
  }
}

/** brpc's circuit breaker for one server (see the module documentation). */
export class CircuitBreaker {
  readonly #o: Resolved;
  readonly #now: () => number;
  readonly #short: ErrorWindow;
  readonly #long: ErrorWindow;
  #broken = false;
  #brokenAt = 0;
  #lastReset = -Infinity;
  #isolationMs: number;
  #halfOpen = false;
  #halfOpenOk = 0;
  /** Times it tripped. */
  isolatedTimes = 0;

  /** Throws INVALID_OPTIONS naming a bad option. */
  constructor(options: BreakerOptions = {}) {
    this.#o = parseOptions(BreakerOptionsSchema, options, "circuit breaker options");
    this.#now = this.#o.nowMs ?? (() => performance.now());
    this.#short = new ErrorWindow(
      this.#o.shortWindowSize,
      this.#o.shortWindowErrorPercent,
      this.#o,
    );
    this.#long = new ErrorWindow(this.#o.longWindowSize, this.#o.longWindowErrorPercent, this.#o);
    this.#isolationMs = this.#o.minIsolationMs;
  }

  /**
   * Notes a finished call (`ok` false for a failure, `latencyUs` its time). Returns false when
   * the server must be isolated now, and keeps returning false until the isolation is over.
   */
  onCallEnd(ok: boolean, latencyUs: number): boolean {
    if (this.#broken) {
      if (this.#now() < this.#brokenAt + this.#isolationMs) return false;
      this.#resetAt(this.#brokenAt + this.#isolationMs);
    }
    if (this.#o.halfOpenWindowSize > 0 && this.#halfOpen) {
      if (!ok) {
        this.markAsBroken();
        return false;
      }
      if (++this.#halfOpenOk === this.#o.halfOpenWindowSize) {
        this.#halfOpen = false;
        this.#halfOpenOk = 0;
      }
    }
    // As in brpc the short window hears of a call only when the long one is still healthy: once
    // either trips, the server is out and both restart on its return.
    if (this.#long.onCallEnd(ok, latencyUs) && this.#short.onCallEnd(ok, latencyUs)) return true;
    this.markAsBroken();
    return false;
  }

  /** Whether it is tripped and its isolation not over. */
  get broken(): boolean {
    return this.#broken && this.#now() < this.#brokenAt + this.#isolationMs;
  }

  /** How long the current (or, when closed, the last) isolation lasts, ms. */
  isolationMs(): number {
    return this.#isolationMs;
  }

  /** Trips it now (a first call on a tripped breaker does nothing more). */
  markAsBroken(): void {
    if (this.#broken) return;
    const now = this.#now();
    this.#broken = true;
    this.#brokenAt = now;
    this.isolatedTimes++;
    // Trips in quick succession mean a server that keeps failing: isolate it longer each time.
    this.#isolationMs = now - this.#lastReset < this.#o.maxIsolationMs
      ? Math.min(this.#isolationMs * 2, this.#o.maxIsolationMs)
      : this.#o.minIsolationMs;
  }

  /** Ends an isolation now (the server came back) and restarts the windows. */
  reset(): void {
    this.#resetAt(this.#now());
  }

  #resetAt(t: number): void {
    this.#long.reset();
    this.#short.reset();
    this.#lastReset = t;
    this.#broken = false;
    if (this.#o.halfOpenWindowSize > 0) {
      this.#halfOpen = true;
      this.#halfOpenOk = 0;
    }
  }
}
