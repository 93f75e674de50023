/**
 * Kicks and sleeps of a URMA endpoint.
 *
 * - `kick()` writes my kick counter into the peer's doorbell word with WRITE_IMM: one request
 *   that both moves the word and, by consuming one of the peer's receives, makes the peer's
 *   JFCE fd readable when its JFC is armed (it is armed only while the peer sleeps). With no
 *   credit left (the peer's published receive total is used up) the kick is a plain WRITE: the
 *   peer then has ≥ RECV_DEPTH unreaped notifications, so it is not asleep; it reaps and
 *   republishes before it ever sleeps.
 * - `wait()` reaps, reposts every receive and publishes the credits BEFORE arming the JFC: a
 *   peer that sees no credit never needs to wake me, because I only sleep after publishing.
 *   The wait itself runs off the JS thread (helper `vb_wait_fd` on the JFCE fd).
 * - The doorbell and the kick words carry the FENCE flag: they execute after every earlier
 *   request of this jetty.
 * Allocates nothing per kick or wait check (the wait's promise aside). One JS thread.
 * @module
 */
import { FABRIC_HEADER } from "../control_page.ts";
import { OK, RESERVED_WR_ID } from "../fabric.ts";
import type { CompletionReaper } from "./completion_reaper.ts";
import { CREDIT_WORD, RECV_DEPTH, type UrmaEndpointParts } from "./endpoint_config.ts";
import { URMA_WR_FLAG, UrmaSendBatch } from "./data_path.ts";
import type { EndpointHealth } from "./health.ts";
import type { ReceiveCredits } from "./receive_credits.ts";
import type { UrmaSendSide } from "./send_side.ts";

/** `doorbell()` reaps once the doorbell moved this many kicks since the last reap. */
const REAP_AFTER_KICKS = RECV_DEPTH / 4;
const DOORBELL_WORD = FABRIC_HEADER.doorbell >> 2;
const SLEEPING_WORD = FABRIC_HEADER.sleeping >> 2;

/** Doorbell, kicks and the off-thread wait of one endpoint. */
export class UrmaWakeUp {
  readonly #parts: UrmaEndpointParts;
  readonly #health: EndpointHealth;
  readonly #sendSide: UrmaSendSide;
  readonly #reaper: CompletionReaper;
  readonly #receives: ReceiveCredits;
  /** My fabric header's words (doorbell, sleeping), written by the peer and by me. */
  readonly #headerWords: Int32Array;
  /** My fabric page's words (the peer's receive total at CREDIT_WORD). */
  readonly #fabricPageWords: Int32Array;
  /** The kick counter I write into the peer's doorbell. */
  #kicks = 0;
  /** Kicks (and the handshake SEND) that consumed one of the peer's receives. */
  #notificationsSent: number;
  /** My doorbell's value at the last reap it caused. */
  #doorbellAtReap = 0;

  constructor(
    parts: UrmaEndpointParts,
    sendSide: UrmaSendSide,
    reaper: CompletionReaper,
  ) {
    this.#parts = parts;
    this.#health = parts.health;
    this.#sendSide = sendSide;
    this.#reaper = reaper;
    this.#receives = parts.receives;
    const mem = parts.mem;
    this.#headerWords = new Int32Array(mem.buffer, mem.byteOffset, 8);
    this.#fabricPageWords = new Int32Array(mem.buffer, mem.byteOffset + parts.regionSize, 4);
    this.#notificationsSent = parts.notificationsUsed;
  }

  /** Reaps, then publishes my receive total to the peer if it changed. */
  reapAndPublish(): void {
    this.#reaper.reap();
    this.#receives.publish(this.#sendSide, this.#parts.remoteSize + CREDIT_WORD);
  }

  /** My doorbell word (reaping every {@link REAP_AFTER_KICKS} kicks, so credits flow back). */
  doorbell(): number {
    const value = Atomics.load(this.#headerWords, DOORBELL_WORD);
    if (((value - this.#doorbellAtReap) >>> 0) >= REAP_AFTER_KICKS) {
      this.#doorbellAtReap = value;
      this.reapAndPublish();
    }
    return value;
  }

  /** Writes the next kick count into the peer's doorbell (WRITE_IMM while credits last). */
  kick(): void {
    if (this.#health.failure !== null) return;
    const next = (this.#kicks + 1) >>> 0;
    const granted = Atomics.load(this.#fabricPageWords, CREDIT_WORD >> 2) >>> 0 || RECV_DEPTH;
    const credit = ((granted - this.#notificationsSent) | 0) > 0;
    const status = this.#sendSide.postInternalWord(
      FABRIC_HEADER.doorbell,
      next,
      URMA_WR_FLAG.FENCE,
      credit ? next : -1,
    );
    if (status !== OK) return;
    this.#kicks = next;
    if (credit) this.#notificationsSent = (this.#notificationsSent + 1) >>> 0;
    this.#sendSide.post();
    this.#reaper.reap();
  }

  /** Sleeps until a kick (or `timeoutMs`) unless my doorbell already moved past `seen`. */
  async wait(seen: number, timeoutMs: number): Promise<boolean> {
    const words = this.#headerWords, health = this.#health;
    Atomics.store(words, SLEEPING_WORD, 1);
    try {
      if (Atomics.load(words, DOORBELL_WORD) !== seen) return true;
      this.#reaper.reap();
      this.#doorbellAtReap = Atomics.load(words, DOORBELL_WORD);
      if (this.#receives.consumed > 0) this.#receives.repost();
      this.#receives.publish(this.#sendSide, this.#parts.remoteSize + CREDIT_WORD);
      this.#parts.jfc.rearm();
      if (Atomics.load(words, DOORBELL_WORD) !== seen) return true;
      const events = await this.#parts.jfce.wait(timeoutMs);
      return events > 0 || (!health.closed && Atomics.load(words, DOORBELL_WORD) !== seen);
    } catch {
      return false;
    } finally {
      if (!health.closed) Atomics.store(words, SLEEPING_WORD, 0);
    }
  }

  /**
   * Wakes my own pending wait (on close): a zero-length SEND_IMM to my own jetty. RM only; in
   * RC mode the jetty is bound to the peer and the wait ends at its timeout.
   */
  wakeSelf(): void {
    const parts = this.#parts;
    if (parts.rc) return;
    try {
      const ctx = parts.ctx;
      ctx.importSegment(parts.auxSeg.descriptor, parts.auxSeg.token);
      const me = ctx.importJetty(parts.jetty.address, parts.regionSeg.token);
      const batch = new UrmaSendBatch(parts.lib, 1, 1);
      batch.send(me, 0, RESERVED_WR_ID.internal, 0);
      batch.post(parts.jetty);
    } catch { /* the wait ends at its timeout */ }
  }
}
