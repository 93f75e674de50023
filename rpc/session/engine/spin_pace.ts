/**
 * How often a busy-poll reads the clock: often enough to end on time, rarely enough that the
 * readings stay a small share of the spin. A reading's cost differs by orders of magnitude
 * between the places verbus runs: a vDSO clock on a host (cheaper on Bun than on Deno, where it
 * is an op call), and in the Soft-RoCE VM, whose only clocksource is the emulated HPET, a syscall
 * and a trap per reading. A spin that read the clock every 16 polls there spent most of its
 * budget on the clock and ended after one interval: 5–7 readings per call at 16 in flight, and
 * the turns that came with them (bench/results/vm-spin-pace.md has the figures).
 *
 * {@link SpinPace} times a few back-to-back readings (`calibrate`, about every 100 ms) and keeps
 * an average of what one poll costs (`observe`, from the spin's own readings), and sets the polls
 * between two readings so that reading costs about 1/{@link CLOCK_SHARE} of polling: at least
 * {@link MIN_POLLS_PER_CLOCK} (a cheap clock changes nothing), at most
 * {@link MAX_POLLS_PER_CLOCK}. With a dear clock a spin therefore overruns its budget by up to
 * one interval (~16 readings' worth of polls): the budget bounds the waste, and a spin that
 * spends the budget on the clock wastes it all.
 *
 * Pure arithmetic over the clock it is given; one JS thread (the progress loop's).
 * @module
 */

/** Fewest polls between two clock readings of a spin (the interval when the clock is cheap). */
export const MIN_POLLS_PER_CLOCK = 16;
/** Most polls between two readings (a spin still looks at the clock). */
export const MAX_POLLS_PER_CLOCK = 4096;
/** Polls take about this many times as long as the readings between them. */
export const CLOCK_SHARE = 16;
/** Weight of a new poll-cost sample in the average (1/8). */
const POLL_EWMA = 1 / 8;
/** Clock readings one {@link SpinPace.calibrate} takes. */
export const CALIBRATION_READINGS = 4;

/** See the module documentation. */
export class SpinPace {
  /** ns one clock reading costs, as last calibrated (0: not yet). */
  clockNs = 0;
  /** ns one empty poll costs, averaged over the spins' readings (0: no sample yet). */
  pollNs = 0;
  /** Polls between two readings of a spin now. */
  pollsPerClock: number = MIN_POLLS_PER_CLOCK;

  /** @param now the clock the spin reads (ms; `performance.now` in the loop) */
  constructor(private readonly now: () => number) {}

  /** The interval in progress took a calibration: its next {@link observe} is no sample. */
  #calibrated = false;

  /**
   * Times {@link CALIBRATION_READINGS} back-to-back readings; returns the last (a reading the
   * caller may use).
   */
  calibrate(): number {
    const a = this.now();
    this.now();
    this.now();
    const b = this.now();
    this.clockNs = Math.max(0, ((b - a) * 1e6) / 3);
    this.#calibrated = true;
    this.#update();
    return b;
  }

  /**
   * A reading `elapsedMs` after the spin's previous one, `polls` polls apart (the second
   * reading's own cost included: it is taken off). Time the process lost to the scheduler raises
   * the sample; the average and the shorter interval it brings recover within a few spins. An
   * interval that included a calibration is skipped (its time is not the polls').
   */
  observe(elapsedMs: number, polls: number): void {
    const calibrated = this.#calibrated;
    this.#calibrated = false;
    if (calibrated || polls <= 0 || !(elapsedMs >= 0)) return;
    const sample = Math.max(0, elapsedMs * 1e6 - this.clockNs) / polls;
    this.pollNs = this.pollNs === 0 ? sample : this.pollNs + (sample - this.pollNs) * POLL_EWMA;
    this.#update();
  }

  #update(): void {
    const want = this.pollNs > 0
      ? Math.ceil((CLOCK_SHARE * this.clockNs) / this.pollNs)
      : MIN_POLLS_PER_CLOCK;
    this.pollsPerClock = Math.min(MAX_POLLS_PER_CLOCK, Math.max(MIN_POLLS_PER_CLOCK, want));
  }
}
