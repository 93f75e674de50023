/**
 * The server's bounded record of handshake outcomes: the last `limit` outcomes (tests, stats), and
 * a log that says each distinct ending once — a Hello storm of one cause logs one line (and the
 * count of repeats when that cause next shows up after a quiet spell), never a line per Hello.
 * Both hold at most `limit` entries whatever the peers send. A cause is keyed by its stable key
 * (`causeKey`: what the peer chose — a quoted key, a number — collapsed), so 2,000 Hellos each
 * with its own unknown key are one cause, not 2,000.
 *
 * Threading: one JS thread (the server's); control path.
 * @module
 */
import type { ServerState } from "./state_machine.ts";
import { causeKey } from "../../../util/log_text.ts";

/** One recorded handshake outcome. */
export interface HandshakeOutcome {
  peer: string;
  state: ServerState;
  reason?: string;
}

/** A ring of the last `limit` outcomes and a bounded once-per-cause log. */
export class HandshakeLog {
  readonly #ring: HandshakeOutcome[] = [];
  #next = 0;
  /** Cause → repeats suppressed since it was logged (insertion order = age). */
  readonly #seen = new Map<string, number>();
  #total = 0;

  constructor(private readonly limit: number, private readonly log: (line: string) => void) {}

  /** Handshakes recorded since the server started (the ring keeps only the last `limit`). */
  get total(): number {
    return this.#total;
  }

  /** Records an outcome (the oldest is dropped past `limit`). */
  record(outcome: HandshakeOutcome): void {
    this.#total++;
    if (this.#ring.length < this.limit) this.#ring.push(outcome);
    else this.#ring[this.#next] = outcome;
    this.#next = (this.#next + 1) % this.limit;
  }

  /** The recorded outcomes, oldest first (a copy). */
  outcomes(): HandshakeOutcome[] {
    return this.#ring.length < this.limit
      ? [...this.#ring]
      : [...this.#ring.slice(this.#next), ...this.#ring.slice(0, this.#next)];
  }

  /**
   * Logs `line` the first time the stable key of `cause` is seen; later ones are counted, not
   * logged. A cause evicted (past `limit` distinct causes) is logged again with the count of its
   * repeats.
   */
  once(cause: string, line: string): void {
    cause = causeKey(cause);
    const n = this.#seen.get(cause);
    if (n !== undefined) {
      this.#seen.set(cause, n + 1);
      return;
    }
    if (this.#seen.size >= this.limit) {
      const [oldest, repeats] = this.#seen.entries().next().value as [string, number];
      this.#seen.delete(oldest);
      if (repeats > 0) this.log(`${oldest}: ${repeats} more handshake(s) ended this way`);
    }
    this.#seen.set(cause, 0);
    this.log(line);
  }
}
