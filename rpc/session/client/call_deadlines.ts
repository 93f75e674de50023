/**
 * Call deadlines, client side: the earliest deadline of the calls in flight bounds the idle
 * sleep; a call whose deadline passed is rejected with TIMEOUT and forgotten by its slot (the slot
 * frees when the late answer arrives; a late LAZY object is reclaimed unread). The scan runs
 * every 64th progress round, after an idle sleep, and only when the earliest deadline passed.
 *
 * Ownership and threading: one per client session, on its JS thread; allocates nothing but the
 * TIMEOUT errors it rejects with.
 * @module
 */
import { VerbusError } from "../../../errors.ts";
import type { SlotTable } from "./client_slots.ts";

/** See the module documentation. */
export class CallDeadlines {
  readonly #slots: SlotTable;
  /** The earliest deadline of a call in flight (`performance.now()` scale; may be stale-early). */
  #earliest = Infinity;
  #rounds = 0;

  constructor(slots: SlotTable) {
    this.#slots = slots;
  }

  /** Notes the deadline of a new call (Infinity = none). */
  add(deadline: number): void {
    if (deadline < this.#earliest) this.#earliest = deadline;
  }

  /** Milliseconds until the earliest deadline (capped by `max`, at least 1). */
  msToEarliest(max: number): number {
    if (this.#earliest === Infinity) return max;
    return Math.max(1, Math.min(max, Math.ceil(this.#earliest - performance.now())));
  }

  /** One progress round: every 64th, expires calls if the earliest deadline passed. */
  countRound(): void {
    if ((++this.#rounds & 63) === 0) this.check();
  }

  /** Expires calls if the earliest deadline passed. */
  check(): void {
    if (this.#slots.busyCount > 0 && performance.now() > this.#earliest) this.#expire();
  }

  #expire(): void {
    const now = performance.now(), slots = this.#slots;
    let next = Infinity;
    for (let k = 0; k < slots.busyCount; k++) {
      const i = slots.busyAt(k), slot = slots.slot(i);
      if (!slot.pending) continue;
      if (slot.deadline <= now) {
        slots.abandon(
          i,
          new VerbusError("TIMEOUT", `call to method #${slot.method} timed out (fabric)`),
        );
      } else if (slot.deadline < next) next = slot.deadline;
    }
    this.#earliest = next;
  }
}
