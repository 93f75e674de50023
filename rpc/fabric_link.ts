/**
 * A client's link to its fabric session: the session the handshake produced (or null: TCP only),
 * the progress loop that drives it while calls are in flight, the callers waiting for a free slot,
 * and re-negotiation. A session that was ESTABLISHED and then failed (the server closed it, a QP
 * error…) is negotiated again on the same TCP channel after `reestablishMs` (doubling up to 30 s
 * while attempts fail); calls meanwhile go over TCP, and no call ever waits for it.
 *
 * Ownership and threading: one link per {@link Client}, on its JS thread; it owns the session
 * and closes it.
 * @module
 */
import type { Channel } from "./channel.ts";
import type { ConnectSettings } from "./connect_options.ts";
import type { ClientSession } from "./session/client_session.ts";
import { establishFabric, type FabricOutcome } from "./session/client_handshake.ts";
import { ProgressLoop } from "./session/progress.ts";

/** Longest back-off between re-negotiation attempts, ms. */
const MAX_BACKOFF_MS = 30_000;

/** See the module documentation. */
export class FabricLink {
  readonly #channel: Channel;
  readonly #settings: ConnectSettings;
  readonly #yieldCpu: () => void;
  readonly #onNewSession: () => void;
  #outcome: FabricOutcome;
  #loop: ProgressLoop | null;
  /** The re-negotiation in flight, and when the next one may start (0 = failure not noticed). */
  #renegotiation: Promise<void> | null = null;
  #renegotiateAt = 0;
  #backoffMs: number;
  /** Callers of `waitForSlot`, woken as calls complete. */
  readonly #slotWaiters: (() => void)[] = [];
  /** The idle wait in flight (a loop woken by a new call leaves it running; the next idle
   * period waits on it again instead of parking another thread). */
  #idle: { wait: Promise<boolean>; started: number } | null = null;

  /**
   * Takes over `outcome.session` (if any). `yieldCpu` gives the CPU back during busy-polls;
   * `onNewSession` runs when a re-negotiated session replaces a failed one.
   */
  constructor(
    channel: Channel,
    settings: ConnectSettings,
    outcome: FabricOutcome,
    yieldCpu: () => void,
    onNewSession: () => void,
  ) {
    this.#channel = channel;
    this.#settings = settings;
    this.#outcome = outcome;
    this.#yieldCpu = yieldCpu;
    this.#onNewSession = onNewSession;
    this.#backoffMs = settings.reestablishMs;
    this.#loop = outcome.session ? this.#newLoop(outcome.session) : null;
  }

  /** The fabric session (failed or not), or null when the client is on TCP. */
  get session(): ClientSession | null {
    return this.#outcome.session;
  }

  /** How the last handshake ended. */
  get outcome(): FabricOutcome {
    return this.#outcome;
  }

  /** The session a call should use now: starts a re-negotiation first when one is due. */
  current(): ClientSession | null {
    if (this.#outcome.session?.failed) this.#maybeRenegotiate();
    return this.#outcome.session;
  }

  /** Makes sure the progress loop runs (a call was just submitted). */
  startLoop(): void {
    this.#loop?.start();
  }

  /** Resolves when a call completed (a slot may be free again). */
  waitForSlot(): Promise<void> {
    this.#loop?.start();
    return new Promise((r) => this.#slotWaiters.push(r));
  }

  #newLoop(s: ClientSession): ProgressLoop {
    return new ProgressLoop(
      () => this.#step(s),
      (ms) => this.#idleWait(s, ms),
      () => s.inflight > 0 && !s.failed,
      this.#settings.progress,
      this.#yieldCpu,
    );
  }

  #step(s: ClientSession): number {
    const completed = s.progress();
    const work = completed + s.takeLazyReadsPosted();
    if (completed > 0 && this.#slotWaiters.length > 0) {
      for (const w of this.#slotWaiters.splice(0, Math.max(1, s.freeSlots))) w();
    }
    return work;
  }

  async #idleWait(s: ClientSession, ms: number): Promise<boolean> {
    // An overdue wait (it should have timed out) is replaced, so a lost one never parks us.
    if (!this.#idle || performance.now() - this.#idle.started > 2 * ms + 500) {
      const wait: Promise<boolean> = s.endpoint.waitInbound(s.seenDoorbell, s.msToDeadline(ms))
        .finally(() => {
          if (this.#idle?.wait === wait) this.#idle = null;
        });
      this.#idle = { wait, started: performance.now() };
    }
    const woke = await this.#idle.wait;
    s.checkDeadlines();
    return woke;
  }

  #maybeRenegotiate(): void {
    const s = this.#outcome.session;
    if (!s || !s.failed || this.#renegotiation || this.#settings.reestablishMs === 0) return;
    const now = performance.now();
    if (now < this.#renegotiateAt) return;
    if (this.#renegotiateAt === 0) { // first notice: wait the back-off once before trying
      this.#renegotiateAt = now + this.#backoffMs;
      return;
    }
    this.#renegotiation = (async () => {
      this.#loop?.stop();
      s.close();
      const outcome = await establishFabric(this.#channel, this.#settings).catch(() => null);
      if (outcome?.session) {
        this.#outcome = outcome;
        this.#loop = this.#newLoop(outcome.session);
        this.#onNewSession();
        this.#renegotiateAt = 0;
        this.#backoffMs = this.#settings.reestablishMs;
      } else {
        this.#backoffMs = Math.min(MAX_BACKOFF_MS, this.#backoffMs * 2);
        this.#renegotiateAt = performance.now() + this.#backoffMs;
      }
    })().finally(() => (this.#renegotiation = null));
  }

  /** Waits for a re-negotiation in flight, stops the loop and closes the session. Safe twice. */
  async close(): Promise<void> {
    await this.#renegotiation;
    this.#loop?.stop();
    this.#outcome.session?.close();
  }
}
