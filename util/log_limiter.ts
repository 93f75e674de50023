/**
 * A rate limit of log lines by cause: the first occurrence of a cause in a window is logged, the
 * rest of the window's occurrences are counted and said in one summary line when the window ends
 * (`… and N more like this in the last 10 s`). Causes are keyed by a stable key the caller gives
 * (an error kind, a field path — never the peer's text), and at most `maxKeys` causes are logged
 * per window (the others are summed in one line), so a flood of bad connections writes a bounded
 * number of lines per window whatever it sends.
 *
 * Threading: one JS thread (the owner's). The window timer never keeps a process alive.
 * @module
 */
import { unrefTimeout } from "./unref_timer.ts";

/** Options of {@link LogLimiter}. */
export interface LogLimiterOptions {
  /** The window over which repeats are counted (default 10 s). */
  windowMs?: number;
  /** Distinct causes logged per window; further causes are counted together (default 32). */
  maxKeys?: number;
}

/** The label a summary line repeats: the start of the first line of its cause. */
const LABEL_MAX = 160;

/** Counts log lines by cause and summarises the repeats of each window. */
export class LogLimiter {
  readonly #log: (line: string) => void;
  readonly #windowMs: number;
  readonly #maxKeys: number;
  /** Cause → the label of its first line and the repeats counted since. */
  readonly #window = new Map<string, { label: string; repeats: number }>();
  /** Occurrences of causes past `maxKeys` this window. */
  #others = 0;
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** When the window began (its first occurrence). */
  #since = 0;
  #total = 0;

  constructor(log: (line: string) => void, options: LogLimiterOptions = {}) {
    this.#log = log;
    this.#windowMs = options.windowMs ?? 10_000;
    this.#maxKeys = options.maxKeys ?? 32;
  }

  /** Occurrences noted since creation (logged or not). */
  get total(): number {
    return this.#total;
  }

  /**
   * Notes one occurrence of cause `key`: logs `line()` (built only then) when the cause was not
   * logged in this window, else counts it. Returns whether it was logged.
   */
  note(key: string, line: () => string): boolean {
    this.#total++;
    if (this.#timer === undefined) {
      this.#since = Date.now();
      this.#timer = unrefTimeout(this.flush, this.#windowMs);
    }
    const seen = this.#window.get(key);
    if (seen !== undefined) {
      seen.repeats++;
      return false;
    }
    if (this.#window.size >= this.#maxKeys) {
      this.#others++;
      return false;
    }
    const text = line();
    this.#window.set(key, {
      label: text.length > LABEL_MAX ? `${text.slice(0, LABEL_MAX)}…` : text,
      repeats: 0,
    });
    this.#log(text);
    return true;
  }

  /** Ends the window now: says the counted repeats, and the next occurrences are logged anew. */
  readonly flush = (): void => {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    // A window ended early (the owner closing) says how long it really was.
    const s = Math.max(1, Math.round(Math.min(this.#windowMs, Date.now() - this.#since) / 1000));
    for (const { label, repeats } of this.#window.values()) {
      if (repeats > 0) this.#log(`${label} … and ${repeats} more like this in the last ${s} s`);
    }
    if (this.#others > 0) {
      this.#log(`… and ${this.#others} more line(s) of other causes in the last ${s} s`);
    }
    this.#window.clear();
    this.#others = 0;
  };
}
