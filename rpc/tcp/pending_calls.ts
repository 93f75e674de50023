/**
 * The calls of one {@link ./channel.ts Channel} waiting for their answers, and their deadlines.
 * Calls with the channel's default timeout expire in send order, so one channel timer serves them
 * all (re-armed for the oldest one left); a call with a timeout of its own gets its own timer (a
 * timer per call would cost more than the rest of the call's bookkeeping). Finding a call by its
 * correlation id is the {@link PendingTable}'s.
 *
 * Threading: the channel's JS thread.
 * @module
 */
import type { VerbusError } from "../../errors.ts";
import {
  type CallOwner,
  onTimeout,
  type PendingCall,
  PendingTable,
  timedOut,
} from "./channel_call.ts";

function onSweep(calls: PendingCalls): void {
  calls._sweep();
}

/** The pending calls of one channel, with their timers. */
export class PendingCalls implements CallOwner {
  readonly #table = new PendingTable();
  readonly #defaultTimeout: number;
  /** `host:port`, for the errors of calls that time out. */
  readonly #where: string;
  /** The one timer for calls with the default timeout (armed for the oldest one's deadline). */
  #sweepTimer: ReturnType<typeof setTimeout> | undefined = undefined;

  /** Calls without a timeout of their own expire after `defaultTimeoutMs`; `where` names the peer. */
  constructor(defaultTimeoutMs: number, where: string) {
    this.#defaultTimeout = defaultTimeoutMs;
    this.#where = where;
  }

  /** Calls waiting for an answer. */
  get size(): number {
    return this.#table.size;
  }

  /** Records `p` (just sent) and arms its deadline. */
  add(p: PendingCall): void {
    if (p.timeoutMs !== this.#defaultTimeout) p.timer = setTimeout(onTimeout, p.timeoutMs, p);
    else if (this.#sweepTimer === undefined) {
      this.#sweepTimer = setTimeout(onSweep, p.timeoutMs, this);
    }
    this.#table.add(p);
  }

  /** The call answered by `id`, removed with its own timer stopped; undefined if none is pending. */
  take(id: number): PendingCall | undefined {
    const p = this.#table.get(id);
    if (p === undefined) return undefined;
    this.#table.delete(p);
    if (p.timer !== undefined) clearTimeout(p.timer);
    return p;
  }

  /** @internal Timer callback: the call's deadline passed. */
  _expire(p: PendingCall): void {
    if (this.#table.get(p.id) !== p) return;
    this.#table.delete(p);
    p.reject(timedOut(p, this.#where));
  }

  /**
   * @internal Channel timer callback: expires every default-timeout call whose deadline passed
   * (oldest first), then re-arms for the oldest one left.
   */
  _sweep(): void {
    this.#sweepTimer = undefined;
    const now = performance.now();
    const def = this.#defaultTimeout;
    let next: PendingCall | undefined;
    for (const p of this.#table.inOrder()) {
      if (p.timeoutMs !== def) continue;
      if (p.deadline > now) {
        next = p;
        break;
      }
      this._expire(p);
    }
    if (next !== undefined) {
      this.#sweepTimer = setTimeout(onSweep, Math.max(1, Math.ceil(next.deadline - now)), this);
    }
  }

  /** Rejects every pending call with `e` (oldest first) and stops every timer. */
  rejectAll(e: VerbusError): void {
    const all = this.#table.inOrder();
    this.#table.clear();
    if (this.#sweepTimer !== undefined) clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    for (const p of all) {
      if (p.timer !== undefined) clearTimeout(p.timer);
      p.reject(e);
    }
  }
}
