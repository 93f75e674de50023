/**
 * Response tokens, server side: what the server must remember about a request until it answers
 * it. The token of a request is the index of its ring slot (the client never reuses a slot
 * before it saw the answer, so one slot holds at most one request being served); the session
 * passes it to the dispatcher as the call's `correlationId` and gets it back with the answer.
 * Its fields — the request's `seq` (echoed in the response), whether the client prefers a LAZY
 * answer, whether the request came through the BULK area — live in typed arrays indexed by the
 * token, allocated once per session.
 *
 * Ownership and threading: one table per server session, on the server's JS thread; `open`,
 * `close` and the field readers allocate nothing.
 * @module
 */

/** A request being served: the index of its ring slot. */
export type ResponseToken = number;

const OPEN = 1, PREFER_LAZY = 2, BULK = 4;

/** See the module documentation. */
export class ResponseTokens {
  /** Per slot: the seq of the request being served. */
  readonly #seq: Uint32Array;
  /** Per slot: OPEN | PREFER_LAZY | BULK bits (0 = no request being served). */
  readonly #state: Uint8Array;
  #openCount = 0;

  /** A table for `slots` ring slots. */
  constructor(slots: number) {
    this.#seq = new Uint32Array(slots);
    this.#state = new Uint8Array(slots);
  }

  /** Requests taken and not answered yet. */
  get openCount(): number {
    return this.#openCount;
  }

  /**
   * Opens the token of slot `slot` for a request with `seq`. Returns false (and changes nothing)
   * when that slot still has a request being served: the client published into a slot it does
   * not own.
   */
  open(slot: number, seq: number, preferLazy: boolean, bulk: boolean): boolean {
    if (this.#state[slot] !== 0) return false;
    this.#seq[slot] = seq;
    this.#state[slot] = OPEN | (preferLazy ? PREFER_LAZY : 0) | (bulk ? BULK : 0);
    this.#openCount++;
    return true;
  }

  /** True when `token` is a slot index whose request is being served. */
  isOpen(token: number): boolean {
    return token >= 0 && token < this.#state.length && (this.#state[token] & OPEN) !== 0;
  }

  /** The seq of the request behind `token`. */
  seq(token: ResponseToken): number {
    return this.#seq[token];
  }

  /** Whether the client asked for a LAZY answer when it is large. */
  prefersLazy(token: ResponseToken): boolean {
    return (this.#state[token] & PREFER_LAZY) !== 0;
  }

  /** Whether the request came through the BULK area. */
  cameBulk(token: ResponseToken): boolean {
    return (this.#state[token] & BULK) !== 0;
  }

  /** Closes `token` (its answer is written); no-op when it is not open. */
  close(token: ResponseToken): void {
    if (this.#state[token] === 0) return;
    this.#state[token] = 0;
    this.#openCount--;
  }
}
