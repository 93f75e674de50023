/**
 * A client's link to its fabric session: the session the handshake produced (or null: TCP only),
 * its place in the process's progress engine (`rpc/session/engine/engine.ts`, which the link holds while
 * calls are in flight), the callers waiting for a free slot, and re-negotiation. A session that was ESTABLISHED and then failed (the server closed it, a QP
 * error…) is negotiated again on the same TCP channel after `reestablishMs` (doubling up to 30 s
 * while attempts fail, each wait spread by ±20 % so that the clients of a restarted server do not
 * all negotiate in the same millisecond); calls meanwhile go over TCP, and no call ever waits for it.
 *
 * Ownership and threading: one link per {@link Client}, on its JS thread; it owns the session
 * and closes it.
 * @module
 */
import { setImmediate } from "node:timers";
import { backoffMs } from "../../util/backoff.ts";
import type { Channel } from "../tcp/channel.ts";
import type { ConnectSettings } from "./client_options.ts";
import type { ClientSession } from "../session/client/client_session.ts";
import { establishFabric, type FabricOutcome } from "../session/handshake/client_handshake.ts";
import type { EngineSession, ProgressEngine, Registration } from "../session/engine/engine.ts";
import { FabricStreams } from "../stream/stream_ring.ts";
import type { TelemetrySnapshot } from "../region/telemetry.ts";

/** Longest back-off between re-negotiation attempts, ms. */
const MAX_BACKOFF_MS = 30_000;

/** See the module documentation. */
export class FabricLink {
  readonly #channel: Channel;
  readonly #settings: ConnectSettings;
  readonly #engine: ProgressEngine;
  readonly #onNewSession: () => void;
  #outcome: FabricOutcome;
  /** The session as the engine drives it, and its registration (null: no session). */
  #driven: EngineSession | null = null;
  #registration: Registration | null = null;
  /** True while this link holds the engine (calls in flight, or completed in its last step). */
  #held = false;
  /** The re-negotiation in flight, and when the next one may start (0 = failure not noticed). */
  #renegotiation: Promise<void> | null = null;
  #renegotiateAt = 0;
  /** Re-negotiations that failed in a row since the session last failed. */
  #failures = 0;
  /** Callers of `waitForSlot`, woken as calls complete. */
  readonly #slotWaiters: (() => void)[] = [];
  /** The stream pipe of the current session (made on first use) and that session. */
  #streams: FabricStreams | null = null;
  #streamsOf: ClientSession | null = null;

  /**
   * Takes over `outcome.session` (if any) and registers it with `engine`; `onNewSession` runs
   * when a re-negotiated session replaces a failed one.
   */
  constructor(
    channel: Channel,
    settings: ConnectSettings,
    outcome: FabricOutcome,
    engine: ProgressEngine,
    onNewSession: () => void,
  ) {
    this.#channel = channel;
    this.#settings = settings;
    this.#outcome = outcome;
    this.#engine = engine;
    this.#onNewSession = onNewSession;
    engine.configure(settings.progress);
    if (outcome.session) this.#register(outcome.session);
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

  /**
   * The stream pipe of the current session (made on first use; the link then holds the engine
   * while streams are open), or null when there is no live session (streams go over TCP).
   */
  streams(): FabricStreams | null {
    const s = this.current();
    if (s === null || s.failed) return null;
    if (this.#streamsOf !== s) {
      const { server, client } = s.layouts;
      const fs = FabricStreams.between(
        s.endpoint,
        client,
        server,
        `${this.#channel.host}:${this.#channel.port}`,
        (reason) => s.fail(`stream pipe: ${reason}`),
        this.#channel._answerSink,
      );
      s.onEnded = (reason) => fs.end(reason);
      // Held from the moment a stream exists (a step run before it would find the link idle).
      fs.table.onCreate = () => this.startLoop();
      this.#streams = fs;
      this.#streamsOf = s;
    }
    return this.#streams;
  }

  /** A call was just submitted: hold the engine while calls are in flight, and take a turn. */
  startLoop(): void {
    if (!this.#driven || !this.#registration) return;
    if (!this.#held) {
      this.#held = true;
      this.#engine.hold(this, this.#driven);
    }
    this.#registration.activate();
  }

  /** Resolves when a call completed (a slot may be free again). */
  waitForSlot(): Promise<void> {
    this.startLoop();
    return new Promise((r) => this.#slotWaiters.push(r));
  }

  #register(s: ClientSession): void {
    const driven: EngineSession = {
      endpoint: s.endpoint,
      step: () => this.#step(s),
      // Answers are announced; local work counts as work in step(); a stream post that found
      // the send queue full retries next turn.
      wantsTurn: () => this.#streamsOf === s && this.#streams!.wantsTurn,
      seenDoorbell: () => s.seenDoorbell,
      expectsInbound: () => s.inflight > 0 || this.#streamsActive(s),
      msToDeadline: (max) => s.msToDeadline(max),
      afterSleep: () => s.checkDeadlines(),
      peerAsleep: () => s.endpoint.peerSleeping?.() ?? false,
    };
    this.#driven = driven;
    this.#registration = this.#engine.add(driven);
  }

  #unregister(): void {
    if (this.#driven) this.#engine.release(this, this.#driven);
    this.#held = false;
    this.#registration?.remove();
    this.#registration = null;
    this.#driven = null;
  }

  /** Streams of session `s` are open (or frames wait for credit). */
  #streamsActive(s: ClientSession): boolean {
    return this.#streamsOf === s && this.#streams!.active;
  }

  #step(s: ClientSession): number {
    const completed = s.progress();
    let work = completed + s.takeLazyReadsPosted();
    if (this.#streamsOf === s) work += this.#streams!.pump();
    if (completed > 0 && this.#slotWaiters.length > 0) {
      for (const w of this.#slotWaiters.splice(0, Math.max(1, s.freeSlots))) w();
    }
    // The hold ends at a step that finds no call in flight and completed none: a caller that
    // submits its next call in the microtasks right after its answer keeps the hold, instead of
    // releasing and taking it again once per call (one call in flight).
    // Open streams keep it too: their frames and credit arrive with no call in flight.
    const idle = s.inflight === 0 && completed === 0 && !this.#streamsActive(s);
    if (this.#held && (idle || s.failed) && this.#driven) {
      this.#held = false;
      this.#engine.release(this, this.#driven);
    }
    return work;
  }

  #maybeRenegotiate(): void {
    const s = this.#outcome.session;
    if (!s || !s.failed || this.#renegotiation || this.#settings.reestablishMs === 0) return;
    const now = performance.now();
    if (now < this.#renegotiateAt) return;
    if (this.#renegotiateAt === 0) { // first notice: wait the back-off once before trying
      this.#renegotiateAt = now + this.#delay();
      return;
    }
    this.#renegotiation = (async () => {
      this.#unregister();
      s.close();
      // A simulated fault (op failure, fabric down) hits the first session only: the
      // re-negotiated one is healthy.
      const settings = {
        ...this.#settings,
        faults: { ...this.#settings.faults, opFail: 0, fabricDown: false },
      };
      const outcome = await establishFabric(this.#channel, settings).catch(() => null);
      if (outcome?.session) {
        this.#outcome = outcome;
        this.#register(outcome.session);
        this.#onNewSession();
        this.#renegotiateAt = 0;
        this.#failures = 0;
      } else {
        this.#failures++;
        this.#renegotiateAt = performance.now() + this.#delay();
      }
    })().finally(() => (this.#renegotiation = null));
  }

  /** The wait before the next attempt: `reestablishMs` doubled per failed attempt, jittered. */
  #delay(): number {
    return backoffMs(this.#failures + 1, this.#settings.reestablishMs, MAX_BACKOFF_MS);
  }

  /** Refreshes the server snapshot now (one-sided read of its control page) and waits for it. */
  async refreshSnapshot(): Promise<TelemetrySnapshot | null> {
    const s = this.session;
    if (!s || s.failed) return null;
    s.refreshSnapshot();
    for (let i = 0; i < 1000 && s.snapshotPending; i++) {
      s.progress();
      await new Promise((r) => setImmediate(r));
    }
    return s.snapshot;
  }

  /** Sends queued RECLAIMs and waits until no fabric call is in flight (at most `timeoutMs`). */
  async drain(timeoutMs: number): Promise<void> {
    const s = this.session;
    if (!s) return;
    const end = performance.now() + timeoutMs;
    while ((s.inflight > 0 || s.pendingReclaims > 0) && !s.failed && performance.now() < end) {
      s.flushReclaims();
      s.progress();
      await new Promise((r) => setImmediate(r));
    }
  }

  /** Waits for a re-negotiation in flight, leaves the engine and closes the session. Safe twice. */
  async close(): Promise<void> {
    await this.#renegotiation;
    this.#unregister();
    this.#outcome.session?.close();
  }
}
