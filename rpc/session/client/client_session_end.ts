/**
 * How a client session ends: a failure this side saw (its fabric, a violating peer), the
 * server's notice (the answer of the session's Watch, which lists the requests it never took),
 * or a close. Calls in flight reject — at once, or, while the Watch is open, once the server's
 * notice came ({@link ServerNoticeWait}) so they can name its reason and the untaken ones be
 * redone over TCP. The session reads {@link SessionEnd.reason} on its data path (null while it runs).
 *
 * Threading: one JS thread (the session's).
 * @module
 */
import { VerbusError } from "../../../errors.ts";
import type { FabricEndpoint } from "../../../transport/fabric.ts";
import type { SlotTable } from "./client_slots.ts";
import { ServerNoticeWait } from "./server_notice_wait.ts";

/** What ending a session touches. */
export interface SessionEndParts {
  readonly endpoint: FabricEndpoint;
  readonly slots: SlotTable;
  /** Request slots of the session (a slot index from the server is checked against it). */
  readonly slotCount: number;
  /** Told once, first, when the session fails or closes (its stream pipe ends its streams). */
  ended(reason: string): void;
  /** Told once, last, when the session fails (not on close): the client moves to TCP. */
  onFail(reason: string): void;
}

/** The end of one client session (one per session). */
export class SessionEnd {
  /** Why the session ended, or null while it runs; every call then goes over TCP. */
  reason: string | null = null;
  readonly #parts: SessionEndParts;
  /** After a failure on this side: the wait for the server's notice before calls fail. */
  readonly #noticeWait = new ServerNoticeWait();

  constructor(parts: SessionEndParts) {
    this.#parts = parts;
  }

  /** Whether the session's Watch call is open: a failure here then waits for the server's notice. */
  set watching(open: boolean) {
    this.#noticeWait.watching = open;
  }

  /**
   * The server ended the session (the answer of its Watch, `reason` its own words): the calls it
   * never took (`untaken`, `[slot, seq]`; a slot whose seq moved on is another call) are redone
   * over TCP, the rest fail as in {@link fail} — naming the server's reason, also when this side
   * had already failed and was waiting for the notice.
   */
  serverEnded(reason: string, untaken: readonly (readonly [number, number])[]): void {
    const waited = this.#noticeWait.running;
    if (this.reason !== null && !waited) return;
    const { slots, slotCount } = this.#parts;
    const redo = new VerbusError("FULL", `not taken before the server ended the session: TCP`);
    for (const [i, seq] of untaken) {
      if (i < slotCount && slots.slot(i).seq === seq) {
        slots.reject(i, redo); // FULL: redone over TCP through the hooks
      }
    }
    if (waited) return this.#rejectAll(this.#noticeWait.notice(reason)!);
    this.#noticeWait.watching = false; // the notice came: nothing more to wait for
    this.fail(`the server ended the session: ${reason}`);
  }

  /**
   * Fails the session: later calls go over TCP; the calls in flight reject at once, or while the
   * Watch is open once the server's notice came (`server_notice_wait.ts`). Safe twice.
   */
  fail(reason: string): void {
    if (this.reason !== null) return;
    this.reason = reason;
    const p = this.#parts;
    p.ended(reason);
    p.endpoint.fail(reason);
    if (p.slots.busyCount === 0 || !this.#noticeWait.begin(reason, (r) => this.#rejectAll(r))) {
      this.#rejectAll(reason);
    }
    p.onFail(reason);
  }

  #rejectAll(reason: string): void {
    this.#parts.slots.rejectAll(() =>
      new VerbusError("FABRIC", `fabric session failed: ${reason}`)
    );
  }

  /** Closes the session and its endpoint (calls in flight reject). Safe twice. */
  close(): void {
    const p = this.#parts;
    if (this.reason === null) {
      this.reason = "closed";
      p.ended("closed");
      p.slots.rejectAll(() => new VerbusError("FABRIC", "fabric session closed"));
    } else this.#noticeWait.end(); // its calls fail now, naming what this side saw
    p.endpoint.close();
  }
}
