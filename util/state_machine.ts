/**
 * An explicit state machine over named states: the transitions each state may take, and a
 * history that says why and when each transition happened (a slow handshake shows its slow step). FALLBACK_TCP and FAILED are logged once, with
 * their reason, when a log is given — never silently. Used by every handshake (verbus's own
 * fabric handshake in rpc/session/, brpc's RDMA handshake in transport/brpc_rdma/).
 *
 * Threading: a machine belongs to the one handshake (one JS thread) that drives it.
 * @module
 */
import { VerbusError } from "../errors.ts";

/** One step of a machine's history. */
export interface Transition<S extends string> {
  from: S;
  to: S;
  reason?: string;
  /** When it happened: ms since the machine was created (0.1 ms resolution). */
  atMs: number;
}

/** A state machine over `S`. Illegal transitions throw (they are bugs or a lying peer). */
export class StateMachine<S extends string> {
  #state: S;
  readonly history: Transition<S>[] = [];
  /** When the machine was created (performance.now()): the history's times count from here. */
  readonly #t0 = performance.now();

  constructor(
    readonly name: string,
    initial: S,
    private readonly allowed: Record<S, readonly S[]>,
    private readonly log?: (line: string) => void,
  ) {
    this.#state = initial;
  }

  /** The current state. */
  get state(): S {
    return this.#state;
  }

  /** Moves to `to`; FALLBACK_TCP and FAILED are logged once with their reason. */
  to(to: S, reason?: string): void {
    const from = this.#state;
    if (!this.allowed[from].includes(to)) {
      throw new VerbusError(
        "HANDSHAKE",
        `${this.name}: illegal transition ${from} → ${to}${reason ? ` (${reason})` : ""}`,
      );
    }
    this.#state = to;
    const atMs = Math.round((performance.now() - this.#t0) * 10) / 10;
    this.history.push({ from, to, ...(reason ? { reason } : {}), atMs });
    if ((to === ("FALLBACK_TCP" as S) || to === ("FAILED" as S)) && this.log) {
      this.log(`${this.name}: ${from} → ${to}: ${reason ?? "no reason given"}`);
    }
  }
}
