/**
 * Answers a server session holds, in order, because its object pool had no room for them when
 * their handlers finished. A call whose handler ran must not run again (at most once), so an
 * answer that does not fit the pool is not refused for a redo: it waits here — the handler's
 * response bytes, its call, when to give up — until RECLAIMs or the TTL sweep free room
 * (`session_answers.ts` writes it then), or until it gives up (its call's deadline, the hold
 * limit, the session's end), when the call fails with an error saying the server ran it.
 *
 * The queue is a FIFO of response tokens (request-ring slot indices: a slot has at most one
 * answer being served, so `slots` entries always suffice), with the held parts in arrays indexed
 * by the token; all of it is allocated once per session. Holding, peeking, taking and expiring
 * allocate nothing. It is bounded by {@link HoldLimits} ({@link HeldAnswers.admits}); each answer
 * gives up at {@link HeldAnswers.giveUpTime}, and one timer (armed for the earliest, re-armed
 * as they go) tells the owner when one is due.
 *
 * Ownership and threading: one queue per server session, on the server's JS thread. The queue
 * keeps references to the response bytes (verbus owns them once a handler returned them) until
 * the answer is written or dropped.
 * @module
 */
import type { ServerCall } from "../../protocol/dispatch.ts";
import type { ResponseToken } from "./response_tokens.ts";

/** How many answers a session may hold for object-pool room, and for how long. */
export interface HoldLimits {
  /** Answers held at most per session (0: none is held; it fails at once). */
  readonly heldAnswers: number;
  /** Bytes of answers held at most per session. */
  readonly heldAnswerBytes: number;
  /** The longest an answer is held when its call has no deadline (ms). */
  readonly heldAnswerMs: number;
}

/** The default {@link HoldLimits}: 256 answers, 16 MiB, 30 s (the default object TTL). */
export const DEFAULT_HOLD: HoldLimits = Object.freeze({
  heldAnswers: 256,
  heldAnswerBytes: 16 * 1024 * 1024,
  heldAnswerMs: 30_000,
});

/** A held answer gives up this long before its call's deadline, at most (ms). */
const MAX_MARGIN_MS = 250;
/** The longest delay a timer takes. */
const MAX_TIMER_MS = 0x7fffffff;

/** See the module documentation. */
export class HeldAnswers {
  /** Tokens held, oldest first: a ring of `capacity` entries. */
  readonly #ring: Int32Array;
  #head = 0;
  #length = 0;
  /** Response bytes held in all (response + attachment). */
  #bytes = 0;
  /** Per token: the call, its response, its total bytes, when it gives up, when it was held. */
  readonly #calls: (ServerCall | undefined)[];
  readonly #responses: (Uint8Array | undefined)[];
  readonly #size: Float64Array;
  readonly #giveUpAt: Float64Array;
  readonly #since: Float64Array;
  /** The bounds of this queue. */
  readonly limits: HoldLimits;
  /** The give-up timer (one at a time), when it fires, and whom it tells. */
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  #timerAt = Infinity;
  readonly #onDue: () => void;
  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    this.#onDue();
  };

  /**
   * An empty queue for the tokens of `capacity` request slots, bounded by `limits`; `onDue` is
   * called (from a timer, between poll rounds) when a held answer's give-up time came: the owner
   * then calls {@link expire} and {@link rearm}.
   */
  constructor(capacity: number, limits: HoldLimits, onDue: () => void) {
    this.limits = limits;
    this.#onDue = onDue;
    const n = Math.max(1, capacity);
    this.#ring = new Int32Array(n);
    this.#calls = new Array(n).fill(undefined);
    this.#responses = new Array(n).fill(undefined);
    this.#size = new Float64Array(n);
    this.#giveUpAt = new Float64Array(n);
    this.#since = new Float64Array(n);
  }

  /** Answers held now. */
  get length(): number {
    return this.#length;
  }

  /** Bytes of the answers held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Whether one more answer of `size` bytes stays within the bounds. */
  admits(size: number): boolean {
    const lim = this.limits;
    return this.#length < lim.heldAnswers && this.#bytes + size <= lim.heldAnswerBytes;
  }

  /**
   * When (`Date.now()` scale) an answer of `call` held from `now` gives up: after `heldAnswerMs`,
   * or, sooner, a quarter of its timeout (at most 250 ms) before its deadline — so the client
   * hears why before its own timer fires. At or before `now`: no time to wait.
   */
  giveUpTime(call: ServerCall, now: number): number {
    const at = now + this.limits.heldAnswerMs, deadline = call.deadline;
    if (deadline === undefined) return at;
    return Math.min(at, deadline - Math.min((call.timeoutMs ?? 0) / 4, MAX_MARGIN_MS));
  }

  /**
   * Holds the answer of `token` (`response` of `call`, `size` bytes with its attachment) at the
   * end of the queue, from `now` until `giveUpAt` (both `Date.now()` scale). The caller checks
   * the bounds; a token is held at most once.
   */
  hold(
    token: ResponseToken,
    call: ServerCall,
    response: Uint8Array,
    size: number,
    now: number,
    giveUpAt: number,
  ): void {
    this.#ring[(this.#head + this.#length++) % this.#ring.length] = token;
    this.#calls[token] = call;
    this.#responses[token] = response;
    this.#size[token] = size;
    this.#since[token] = now;
    this.#giveUpAt[token] = giveUpAt;
    this.#bytes += size;
    if (giveUpAt < this.#timerAt) this.#arm(giveUpAt);
  }

  /** Arms the timer for the earliest give-up time of the answers held (none: disarms it). */
  rearm(): void {
    const at = this.#length === 0 ? Infinity : this.#earliestGiveUp();
    if (at === Infinity) this.#disarm();
    else if (at !== this.#timerAt || this.#timer === undefined) this.#arm(at);
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = at;
    // (clamped: a timer past 2^31 - 1 ms fires at once; an early one re-arms for the rest)
    const ms = Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(at - Date.now())));
    this.#timer = setTimeout(this.#fire, ms);
  }

  #disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  /** The oldest token held (-1 when none). */
  peek(): ResponseToken {
    return this.#length === 0 ? -1 : this.#ring[this.#head];
  }

  /** The call whose answer `token` holds. */
  call(token: ResponseToken): ServerCall {
    return this.#calls[token]!;
  }

  /** The response bytes `token` holds (the attachment is the call's `responseAttachment`). */
  response(token: ResponseToken): Uint8Array {
    return this.#responses[token]!;
  }

  /** Bytes `token` holds (response and attachment). */
  size(token: ResponseToken): number {
    return this.#size[token];
  }

  /** When (`Date.now()` scale) `token` began to be held. */
  since(token: ResponseToken): number {
    return this.#since[token];
  }

  /** When (`Date.now()` scale) `token` gives up. */
  giveUpAt(token: ResponseToken): number {
    return this.#giveUpAt[token];
  }

  /** Removes the oldest token (its parts are forgotten) and returns it (-1 when none). */
  shift(): ResponseToken {
    if (this.#length === 0) return -1;
    const token = this.#ring[this.#head];
    this.#head = (this.#head + 1) % this.#ring.length;
    this.#length--;
    this.#forget(token);
    return token;
  }

  /** The earliest give-up time of the answers held (Infinity when none). */
  #earliestGiveUp(): number {
    let t = Infinity;
    for (let k = 0; k < this.#length; k++) {
      const g = this.#giveUpAt[this.#ring[(this.#head + k) % this.#ring.length]];
      if (g < t) t = g;
    }
    return t;
  }

  /**
   * Takes out every answer whose give-up time is at or before `now` (the rest keep their order)
   * and tells `expired(token, call, size, why)` of each, after it left the queue (`why`: how
   * long it was held, and until what).
   */
  expire(
    now: number,
    expired: (token: ResponseToken, call: ServerCall, size: number, why: string) => void,
  ): void {
    const cap = this.#ring.length, n = this.#length;
    let kept = 0;
    for (let k = 0; k < n; k++) {
      const token = this.#ring[(this.#head + k) % cap];
      if (this.#giveUpAt[token] > now) {
        this.#ring[(this.#head + kept++) % cap] = token;
        continue;
      }
      const call = this.#calls[token]!, size = this.#size[token], since = this.#since[token];
      this.#length--;
      this.#forget(token);
      const limit = this.limits.heldAnswerMs;
      const until = call.deadline !== undefined && call.deadline - since < limit
        ? "until shortly before the call's deadline"
        : `for heldAnswerMs (${limit} ms)`;
      expired(
        token,
        call,
        size,
        ` while it held the answer ${Math.round(now - since)} ms, ${until}`,
      );
    }
  }

  /** Takes out every answer (the session ends) and stops the timer; returns how many. */
  dropAll(): number {
    const n = this.#length;
    while (this.#length > 0) this.shift();
    this.#disarm();
    return n;
  }

  #forget(token: ResponseToken): void {
    this.#bytes -= this.#size[token];
    this.#calls[token] = undefined;
    this.#responses[token] = undefined;
  }
}
