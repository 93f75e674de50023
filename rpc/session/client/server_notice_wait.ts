/**
 * The moment a client session waits, after its fabric failed on this side, for the server's
 * notice (the answer of the session's `verbus.Fabric/Watch`) before it fails the calls in flight.
 *
 * Why: the client often sees only the consequence of a failure that happened on the server. An
 * overrun of the server's JFC, say, shows here as the remote access abort of the next write,
 * because the server tore down its side. The notice names the real reason and lists the requests
 * the server never took; those can be redone over TCP instead of failing. The notice travels on
 * the TCP connection and usually lands within a millisecond of the failure, so the wait is
 * short ({@link SERVER_NOTICE_WAIT_MS}). It ends early when the notice arrives or the Watch call
 * ends (connection closed, a server without Watch). Once it is over, the calls still in flight fail
 * with the reason this side saw.
 *
 * Threading: one JS thread (the session's).
 * @module
 */

/** Longest wait for the server's notice after a session failed on this side, ms. */
export const SERVER_NOTICE_WAIT_MS = 250;

/** Prefix of the server's reason when it closed the session because this client said Bye. */
const CLIENT_ENDED = "the client ended it";

/** A session's wait for the server's notice (one per session; used once). */
export class ServerNoticeWait {
  #watching = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #local: string | null = null;
  #finish: ((reason: string) => void) | null = null;

  /** True while a Watch call is open, so a notice can still come. */
  get watching(): boolean {
    return this.#watching;
  }

  /** The Watch call was opened (true) or ended (false); ending it ends a running wait. */
  set watching(open: boolean) {
    this.#watching = open;
    if (!open) this.end();
  }

  /** True while the wait runs (the session failed; its calls in flight wait for the notice). */
  get running(): boolean {
    return this.#finish !== null;
  }

  /**
   * Starts the wait for the failure this side saw (`reason`): `finish` fails the calls in flight
   * with the reason it is given, at the latest after {@link SERVER_NOTICE_WAIT_MS}. Returns false
   * (and starts nothing) when no notice can come: the caller then fails the calls now.
   */
  begin(reason: string, finish: (reason: string) => void): boolean {
    if (!this.#watching || this.#finish !== null) return false;
    this.#local = reason;
    this.#finish = finish;
    this.#timer = setTimeout(() => this.end(), SERVER_NOTICE_WAIT_MS);
    return true;
  }

  /**
   * The server's notice arrived during the wait: ends it and returns the reason the calls fail
   * with — the server's, with what this side saw; or this side's alone when the server only
   * reports that this client ended the session. Null when no wait runs.
   */
  notice(serverReason: string): string | null {
    if (this.#finish === null) return null;
    const local = this.#local!;
    const reason = serverReason.startsWith(CLIENT_ENDED)
      ? local
      : `the server ended the session: ${serverReason} (this side saw: ${local})`;
    this.#stop();
    return reason;
  }

  /** Ends a running wait now: the calls fail with the reason this side saw. Safe twice. */
  end(): void {
    const finish = this.#finish, local = this.#local;
    if (finish === null) return;
    this.#stop();
    finish(local!);
  }

  #stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#finish = null;
  }
}
